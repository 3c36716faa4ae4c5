"""``why-not``: why an attribute did not take a value, from the run's own values.

Backends keep no trace of failed matches, so the rule's conditions are evaluated again by the one
evaluator (``plan.semantics``) against the final values of the run. Answers, most specific first:
it is the value; an input says otherwise; a contribution with that value was overridden; a
candidate with it lost on the selection key; a rule excluded it; a rule's condition failed
(which part, with the facts' values); or nothing in the rulebase could ever produce it.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import InputError
from ..format import num
from ..load import expr as X
from ..load.ir import AnyOf, AttrCond, Condition, Item, ItemCond, Not, Ref, Test
from ..plan import semantics as S
from ..plan.resolve import PlannedRule
from ..plan.rulebase import Rulebase
from ..run.combine import rank_key
from .result import Result


class NotFinite(InputError):
    """A query's value is NaN or an infinity: no value a conclusion can take."""


def parse_query(rb: Rulebase, query: str) -> tuple[str, Any]:
    """ATTRIBUTE=VALUE from the command line, the value typed as the attribute is (a finite number
    for a numeric attribute: NaN and infinities are refused, as the workload refuses them).
    """
    if "=" not in query:
        raise InputError(f"'{query}' is not ATTRIBUTE=VALUE", help="e.g. ram.system_gb=64")
    name, raw = query.split("=", 1)
    name = name.strip()
    attr = rb.attribute(name)
    raw = raw.strip()
    value: Any = raw
    if attr.type in ("number", "integer", "scalar"):
        try:
            number = float(raw)
            if not math.isfinite(number):
                raise NotFinite(
                    f"'{raw}' is not a finite number, so it is no value {name} can take",
                    help=f"give a finite number, e.g. {name}=64",
                )
            value = int(number) if number.is_integer() else number
        except ValueError:
            if attr.type != "scalar":
                raise InputError(
                    f"'{raw}' is not a number, and {name} is a {attr.type}", help=f"e.g. {name}=64"
                ) from None
    elif attr.type == "boolean":
        if raw.lower() not in ("true", "false", "yes", "no"):
            raise InputError(f"{name} is true or false, not '{raw}'", help=f"e.g. {name}=true")
        value = raw.lower() in ("true", "yes")
    return name, value


def _same(a: Any, b: Any) -> bool:
    if S.is_number(a) and S.is_number(b):
        return bool(abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)))
    return S.same(a, b)


def _describe(test: Test, env: S.Env) -> str:
    """A failed test as the rule file says it, with a ref's computed value."""
    operand = test.operand
    if test.op in ("contains", "not_contains"):
        member = S.operand_value(operand, env)
        return f"{test.op}: {_shown(member)!r} (it is {'not ' if test.op == 'contains' else ''}a member)"
    if isinstance(operand, Ref):
        value = S.operand_value(operand, env)
        if value is S.ABSENT:
            return f"{test.op} {operand.source}, which cannot be computed"
        return f"{test.op} {value!r}"
    if isinstance(operand, tuple):
        return f"{test.op} {list(operand)!r}"
    if test.op in ("exists", "empty"):
        return f"{test.op}: {str(operand).lower()}"
    return f"{test.op} {operand!r}"


def _shown(value: Any) -> Any:
    return None if value is S.ABSENT else value


class _Failures:
    """Which conditions of one rule fail against a run's values, with given items bound by alias."""

    def __init__(self, result: Result, rule: PlannedRule, items: dict[str, Item]) -> None:
        self.rule = rule
        self.env = S.Env(result.outcome.values, result.rulebase.catalogs, items)

    def list(self, conditions: tuple[Condition, ...] | None = None, top: bool = True) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        conds = self.rule.rule.when if conditions is None else conditions
        for i, cond in enumerate(conds):
            if isinstance(cond, AnyOf):
                branches = [self.list(branch, False) for branch in cond.branches]
                if all(branches):
                    first = branches[0][0]
                    out.append(
                        dict(
                            first,
                            failed=f"{first['failed']}, and none of the other "
                            f"{len(branches) - 1} alternative(s) holds either",
                        )
                    )
                continue
            negated = isinstance(cond, Not)
            inner = cond.inner if isinstance(cond, Not) else cond
            if isinstance(inner, ItemCond):
                item = self.env.items.get(inner.alias)
                if item is None:
                    if isinstance(cond, Not) and not S.holds(cond, self.env):
                        out.append(
                            {
                                "condition": i,
                                "fact": f"{inner.catalog} item",
                                "value": None,
                                "failed": "the negated condition holds",
                            }
                        )
                    continue
                for f in inner.where:
                    value = S.field_value(item, f.field)
                    bad = S.first_failing(f.tests, value, self.env)
                    if (bad is None) == negated:
                        out.append(
                            {
                                "condition": i,
                                "fact": f"{inner.alias}.{f.field}",
                                "value": _shown(value),
                                "failed": _describe(bad, self.env) if bad else "the negated condition holds",
                            }
                        )
                continue
            assert isinstance(inner, AttrCond)
            value = S.attr_value(self.env, inner.attribute)
            bad = S.first_failing(inner.tests, value, self.env)
            if (bad is None) == negated:
                failed = "the negated condition holds"
                if bad is not None:
                    failed = _describe(bad, self.env)
                    if value is S.ABSENT and bad.op not in ("exists",):
                        failed += ", but it has no value"
                out.append({"condition": i, "fact": inner.attribute, "value": _shown(value), "failed": failed})
        if not top:
            return out
        # attributes that only expressions read must have a value too
        for name in sorted(set(self.rule.variants[0].required)):
            if name not in self.env.values and not any(f["fact"] == name for f in out):
                out.append({"condition": None, "fact": name, "value": None, "failed": "it has no value"})
        return out


def _plain_name(value: object) -> str | None:
    """The dotted name a conclusion copies (``g.id``, ``{gpu.selection.gpu}``), if it is only that."""
    if isinstance(value, X.Template) and len(value.parts) == 1 and isinstance(value.parts[0], X.Expr):
        value = value.parts[0]
    if isinstance(value, X.Expr) and X.dotted(value.tree.body) is not None:
        return value.source
    return None


def _record_field(rule: PlannedRule, attr: str) -> tuple[str, str] | None:
    """If the rule sets ``attr`` to a plain field of a record attribute, (record attr, field)."""
    c = next((c for c in rule.rule.then if c.attribute == attr), None)
    name = _plain_name(c.value) if c is not None else None
    if name is None:
        return None
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in rule.reads:
            return head, ".".join(parts[cut:])
    return None


def why_not(result: Result, attr: str, value: Any) -> dict[str, Any]:
    """Why ``attr`` is not ``value`` in this recommendation: the most specific answer that applies."""
    rb = result.rulebase
    a = rb.attributes[attr]
    values = result.outcome.values
    current = values.get(attr)
    base = {"attribute": attr, "value": value, "actual": current}
    if current is not None and (_same(current, value) or (isinstance(current, list) and value in current)):
        return dict(base, kind="is-value", message=f"{attr} is {current!r}: nothing prevented it")
    if a.given:
        iv = result.outcome.inputs.get(attr)
        what = "workload input" if a.input else "named constant"
        return dict(
            base,
            kind="input",
            message=f"{attr} is a {what}; it is {current!r} ({iv.origin}: {iv.detail})"
            if iv
            else f"{attr} is a {what} and is not given",
        )
    if a.enum and value not in a.enum:
        return dict(
            base,
            kind="impossible",
            message=f"no rule can ever conclude {attr}={value!r}: its declared "
            f"values are {', '.join(map(str, a.enum))}",
        )
    writers = rb.writers.get(attr, ())
    if not writers:
        return dict(base, kind="impossible", message=f"nothing in the rulebase concludes {attr}")
    # 1. a contribution with that value that lost
    c = result.outcome.conclusions.get(attr)
    if c is not None:
        winner = c.contributions[c.combined.binding[0]]
        for contrib in c.contributions:
            if _same(contrib.value, value):
                return dict(
                    base,
                    kind="overridden",
                    rule=contrib.rule,
                    by=winner.rule,
                    message=f"{contrib.rule} concluded {value!r}, but {attr} combines by "
                    f"'{a.combine}' ({c.combined.note}) and {winner.rule}'s {winner.value!r} won",
                )
    # 2. follow a plain field of a record attribute (gpu.model = gpu.selection.gpu)
    for rid in writers:
        link = _record_field(rb.rules[rid], attr)
        if link:
            rec_attr, field = link
            answer = _why_not_candidate(result, rec_attr, field, value)
            if answer:
                return dict(base, via=f"{rid}: {attr} = {rec_attr}.{field}", **answer)
    # 3. each writer: did it fire with another value, or which condition failed?
    reasons: list[dict[str, Any]] = []
    for rid in writers:
        rule = rb.rules[rid]
        fired = [f for f in result.firings if f.rule == rid]
        if fired:
            reasons.append({"rule": rid, "fired": True, "concluded": fired[0].outputs.get(attr)})
            continue
        reasons.append({"rule": rid, "fired": False, "failed": _Failures(result, rule, {}).list()})
    silent = [r for r in reasons if not r["fired"]]
    if silent:
        parts: list[str] = []
        for r in silent:
            fail = r["failed"][0] if r["failed"] else None
            parts.append(
                f"{r['rule']}: the condition on {fail['fact']} failed: {fail['failed']} (it is {fail['value']!r})"
                if fail
                else f"{r['rule']} did not fire"
            )
        return dict(
            base,
            kind="failed-condition",
            rules=reasons,
            message=f"the rules that would conclude {attr} did not fire: " + "; ".join(parts),
        )
    return dict(
        base,
        kind="not-produced",
        rules=reasons,
        message=f"every rule that concludes {attr} fired and concluded something else: "
        + "; ".join(f"{r['rule']} gave {r['concluded']!r}" for r in reasons),
    )


def _why_not_candidate(result: Result, rec_attr: str, field: str, value: Any) -> dict[str, Any] | None:
    rb = result.rulebase
    a = rb.attributes[rec_attr]
    c = result.outcome.conclusions.get(rec_attr)
    if c is not None and a.combine in ("argmin", "argmax"):
        win = c.contributions[c.combined.binding[0]].value
        # the best of the candidates with that value speaks for them all
        matching = [x for x in c.contributions if isinstance(x.value, dict) and _same(x.value.get(field), value)]
        if matching:
            contrib = min(matching, key=lambda x: rank_key(a, x.value))
            lost = contrib.value
            key = a.key[0]
            diff = lost[key] - win[key]
            out = {
                "kind": "beaten-candidate",
                "rule": contrib.rule,
                "candidate": lost,
                "winner": win,
                "margin": diff,
                "message": f"{value!r} was a candidate ({_brief(lost)}) but {win.get(field)!r} won on "
                f"{key}: {num(lost[key])} vs {num(win[key])} ({'+' if diff >= 0 else ''}{num(diff)})",
            }
            if a.first_by and lost.get(a.first_by) != win.get(a.first_by):
                out["message"] = (
                    f"{value!r} was a candidate ({_brief(lost)}) but {win.get(field)!r} won "
                    f"first on {a.first_by}: {lost.get(a.first_by)!r} vs {win.get(a.first_by)!r}, "
                    f"which is compared before {key}"
                )
            return out
    # no candidate with that value: which candidate rule would have made it, and what stopped it?
    blocked = []
    for rid in rb.writers.get(rec_attr, ()):
        rule = rb.rules[rid]
        c_rec = next((x for x in rule.rule.then if x.attribute == rec_attr), None)
        if c_rec is None or c_rec.fields is None:
            continue
        name = _plain_name(dict(c_rec.fields).get(field))
        if name is None:
            continue
        src = name.split(".")
        if len(src) != 2 or src[0] not in rule.items:
            continue
        alias, item_field = src
        catalog = rb.catalogs[rule.items[alias]]
        item = next((it for it in catalog.items.values() if _same(it.get(item_field), value)), None)
        if item is None:
            return {
                "kind": "impossible",
                "message": f"no item of catalog '{catalog.name}' has "
                f"{item_field} = {value!r}, so no rule can propose it",
                "known": sorted(catalog.items),
            }
        failures = _Failures(result, rule, {alias: item}).list()
        if failures:
            blocked.append((rid, item, failures))
    for _, item, failures in blocked:
        excluded = [f for f in failures if f["failed"].startswith("not_contains")]
        who = _who_added(result, excluded[0]["fact"], item.id) if excluded else []
        if who:
            reasons = [
                f"{f.rule} ({rb.rules[f.rule].rule.summary}) because "
                + (", ".join(f"{k} = {v!r}" for k, v in sorted(f.attrs.items())) or "its conditions held")
                for f in who
            ]
            rules = ", ".join(r for r, _, _ in blocked)
            return {
                "kind": "excluded",
                "rule": who[0].rule,
                "candidate_rules": [r for r, _, _ in blocked],
                "message": f"{item.id} was excluded by "
                + "; and by ".join(reasons)
                + f"; the candidate rules ({rules}) skip excluded items",
                "inputs": dict(who[0].attrs),
                "excluded_by": [{"rule": f.rule, "inputs": dict(f.attrs)} for f in who],
            }
    if blocked:
        parts = [
            f"{rid}: the condition on {f[0]['fact']} failed: {f[0]['failed']} (it is {f[0]['value']!r})"
            for rid, _, f in blocked
        ]
        return {
            "kind": "failed-condition",
            "item": blocked[0][1].id,
            "rules": [r for r, _, _ in blocked],
            "message": f"no rule proposed {blocked[0][1].id}: " + "; ".join(parts),
        }
    return None


def _who_added(result: Result, list_attr: str, member: Any) -> list[Any]:
    """Every firing that put ``member`` into the list attribute, in contribution order."""
    c = result.outcome.conclusions.get(list_attr)
    if c is None:
        return []
    return [
        result.outcome.firings[contrib.firing]
        for contrib in c.contributions
        if contrib.value == member or (isinstance(contrib.value, list) and member in contrib.value)
    ]


def _brief(rec: dict[str, Any]) -> str:
    """A candidate record in one line: its fields that have a value."""
    return ", ".join(f"{k} {num(v)}" if S.is_number(v) else f"{k} {v}" for k, v in rec.items() if v not in ("", None))
