"""``why-not``: why an attribute did not take a value, from the run's own values.

Backends keep no trace of failed matches, so the rule's conditions are evaluated again by the one
evaluator (``lang.semantics``) against the final values of the run. Answers, most specific first:
it is the value; an input says otherwise; a contribution with that value was overridden; a
candidate with it lost on the selection key; a rule excluded it; a rule's condition failed
(which part, with the facts' values); or nothing in the rulebase could ever produce it.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import InputError
from ..format import num
from ..lang import expr as X
from ..lang import semantics as S
from ..lang.ir import AnyOf, AttrCond, Condition, Item, ItemCond, Not, Ref, Test
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


def _failure(
    i: int | None, fact: str, value: Any, failed: str, test: Test | None = None, env: S.Env | None = None
) -> dict[str, Any]:
    """One failed condition: which, on what fact, its value, what it needed (with the operator, the ref and,
    for a list test, the member asked about).
    """
    ref = test.operand.source if test is not None and isinstance(test.operand, Ref) else None
    out = {"condition": i, "fact": fact, "value": value, "failed": failed, "op": test.op if test else None, "ref": ref}
    if test is not None and env is not None and test.op in ("contains", "not_contains"):
        out["member"] = _shown(S.operand_value(test.operand, env))
    return out


class _Failures:
    """Which conditions of one rule fail against a run's values, with given items bound by alias."""

    def __init__(self, result: Result, rule: PlannedRule, items: dict[str, Item], expand: bool = True) -> None:
        self.result = result
        self.rule = rule
        self.env = S.Env(result.outcome.values, result.rulebase.catalogs, items)
        self.expand = expand

    def _join(self, i: int, inner: ItemCond) -> dict[str, Any] | None:
        """An unbound join that no item of its catalog gets through. When items that pass the join's own
        field tests are stopped by a later condition, that condition is the cause (the first such item's,
        to be followed); otherwise which field test stops which items.
        """
        own: dict[str, list[str]] = {}
        later: list[tuple[Item, dict[str, Any]]] = []
        for item in self.env.catalogs[inner.catalog].items.values():
            bound = dict(self.env.items, **{inner.alias: item})
            failed = _Failures(self.result, self.rule, bound, expand=False).list()
            if not failed:
                return None
            f = failed[0]
            if f["fact"].startswith(inner.alias + "."):
                own.setdefault(f"{f['fact']}: {f['failed']}", []).append(item.id)
            else:
                later.append((item, f))
        if len(later) == 1:
            return dict(later[0][1], condition=i)
        if later:
            groups: dict[str, list[str]] = {}
            for item, f in later:
                if f["op"] == "not_contains":
                    who = sorted({x.rule for x in _who_added(self.result, f["fact"], f.get("member"))})
                    key = f"{f['fact']} has it ({', '.join(who) or 'no rule named'})"
                else:
                    key = f"{f['fact']}: {f['failed']}"
                groups.setdefault(key, []).append(item.id)
            text = "; ".join(f"{', '.join(ids)}: {why}" for why, ids in groups.items())
            rest = f"; the other {inner.catalog} items do not take it" if own else ""
            failed_text = f"every {inner.catalog} that would take it is ruled out ({text}){rest}"
        else:
            text = "; ".join(f"{', '.join(ids)}: {why}" for why, ids in own.items())
            failed_text = f"no {inner.catalog} item qualifies ({text})"
        return _failure(i, f"{inner.alias} ({inner.catalog})", None, failed_text) | {"op": "join"}

    def _unbound(self, test: Test) -> bool:
        """The test's ref reads an item of the rule that is not bound."""
        free = set(self.rule.items) - set(self.env.items)
        return isinstance(test.operand, Ref) and test.operand.reads(free)

    def _item(self, i: int, cond: Condition, inner: ItemCond, negated: bool, top: bool) -> list[dict[str, Any]]:
        """The failures of one join: its bound item's fields, or an unbound join no item gets through."""
        item = self.env.items.get(inner.alias)
        if item is None:
            if isinstance(cond, Not) and not S.holds(cond, self.env):
                return [_failure(i, f"{inner.catalog} item", None, "the negated condition holds")]
            stop = self._join(i, inner) if not negated and top and self.expand else None
            return [stop] if stop is not None else []
        out = []
        for f in inner.where:
            value = S.field_value(item, f.field)
            bad = S.first_failing(f.tests, value, self.env)
            if bad is not None and self._unbound(bad):
                continue
            if (bad is None) == negated:
                failed = _describe(bad, self.env) if bad else "the negated condition holds"
                out.append(_failure(i, f"{inner.alias}.{f.field}", _shown(value), failed, bad, self.env))
        return out

    def list(self, conditions: tuple[Condition, ...] | None = None, top: bool = True) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        conds = self.rule.when if conditions is None else conditions
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
                out.extend(self._item(i, cond, inner, negated, top))
                continue
            assert isinstance(inner, AttrCond)
            value = S.attr_value(self.env, inner.attribute)
            bad = S.first_failing(inner.tests, value, self.env)
            if bad is not None and self._unbound(bad):
                continue  # it compares with an item not chosen here: it cannot be judged
            if (bad is None) == negated:
                failed = "the negated condition holds"
                if bad is not None:
                    failed = _describe(bad, self.env)
                    if value is S.ABSENT and bad.op not in ("exists",):
                        failed += ", but it has no value"
                out.append(_failure(i, inner.attribute, _shown(value), failed, bad, self.env))
        if not top:
            return out
        # attributes that only expressions read must have a value too
        for name in sorted(set(self.rule.variants[0].required)):
            if name not in self.env.values and not any(f["fact"] == name for f in out):
                out.append(_failure(None, name, None, "it has no value"))
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


def why_not(result: Result, attr: str, value: Any, depth: int = 0) -> dict[str, Any]:
    """Why ``attr`` is not ``value`` in this recommendation: the most specific answer that applies.

    When rules did not fire, the answer leads with the ones a concluded fact stopped, followed down to
    its cause (a list that lacks the member, a record whose candidates lack the value, an item of a
    catalog that no item gets through), and names only briefly the rules that are for another kind of
    workload or another kind of item.
    """
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
            answer = _why_not_candidate(result, rec_attr, field, value, depth)
            if answer:
                return dict(base, via=f"{rid}: {attr} = {rec_attr}.{field}", **answer)
    reasons, bound = _writers(result, attr, value, writers)
    silent = [r for r in reasons if not r["fired"]]
    if silent:
        text = _summary(result, [(r["rule"], bound.get(r["rule"], {}), r["failed"]) for r in silent], depth)
        return dict(
            base,
            kind="failed-condition",
            rules=reasons,
            message=f"the rules that would conclude {attr} did not fire: " + text,
        )
    return dict(
        base,
        kind="not-produced",
        rules=reasons,
        message=f"every rule that concludes {attr} fired and concluded something else: "
        + "; ".join(f"{r['rule']} gave {r['concluded']!r}" for r in reasons),
    )


def _writers(
    result: Result, attr: str, value: Any, writers: tuple[str, ...]
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Item]]]:
    """Each writer: did it fire with another value, or which condition failed? A writer that puts an
    item's field into a list (serving.cards gets g.id) is asked about the item with that value.
    """
    rb = result.rulebase
    is_list = rb.attributes[attr].is_list
    reasons: list[dict[str, Any]] = []
    bound: dict[str, dict[str, Item]] = {}
    for rid in writers:
        rule = rb.rules[rid]
        member = _member_item(rb, rule, attr, value) if is_list else None
        if member is not None:
            bound[rid] = member
            failed = _Failures(result, rule, member).list()
            if failed:
                reasons.append({"rule": rid, "fired": False, "failed": failed})
                continue
        fired = [f for f in result.firings if f.rule == rid]
        if fired:
            reasons.append({"rule": rid, "fired": True, "concluded": fired[0].outputs.get(attr)})
            continue
        reasons.append({"rule": rid, "fired": False, "failed": _Failures(result, rule, {}).list()})
    return reasons, bound


def _member_item(rb: Rulebase, rule: PlannedRule, attr: str, value: Any) -> dict[str, Item] | None:
    """For a rule that adds an item's field to a list (``serving.cards: "{g.id}"``), that item bound by its alias."""
    c = next((c for c in rule.rule.then if c.attribute == attr), None)
    name = _plain_name(c.value) if c is not None else None
    src = name.split(".") if name else []
    if len(src) != 2 or src[0] not in rule.items:
        return None
    item = next((it for it in rb.catalogs[rule.items[src[0]]].items.values() if _same(it.get(src[1]), value)), None)
    return {src[0]: item} if item is not None else None


def _why_not_candidate(result: Result, rec_attr: str, field: str, value: Any, depth: int = 0) -> dict[str, Any] | None:
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
            if isinstance(win.get(key), bool):  # a boolean key: the first field the two differ on decides
                key = next((k for k in a.key if lost.get(k) != win.get(k)), key)
            diff = lost[key] - win[key]
            shown = f"{num(lost[key])} vs {num(win[key])} ({'+' if diff >= 0 else ''}{num(diff)})"
            if isinstance(win.get(key), bool):
                shown = f"{str(lost[key]).lower()} vs {str(win[key]).lower()} (false first)"
            out = {
                "kind": "beaten-candidate",
                "rule": contrib.rule,
                "candidate": lost,
                "winner": win,
                "margin": diff,
                "message": f"{value!r} was a candidate ({_brief(lost)}) but {win.get(field)!r} won on {key}: {shown}",
            }
            if a.first_by and lost.get(a.first_by) != win.get(a.first_by):
                out["message"] = (
                    f"{value!r} was a candidate ({_brief(lost)}) but {win.get(field)!r} won "
                    f"first on {a.first_by}: {lost.get(a.first_by)!r} vs {win.get(a.first_by)!r}, "
                    f"which is compared before {key}"
                )
            return out
    # no candidate with that value: which candidate rule would have made it, and what stopped it?
    blocked: list[tuple[str, Item, list[dict[str, Any]], str]] = []
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
            blocked.append((rid, item, failures, alias))
    for _, item, failures, _ in blocked:
        excluded = [f for f in failures if f["failed"].startswith("not_contains")]
        who = _who_added(result, excluded[0]["fact"], item.id) if excluded else []
        if who:
            reasons = [
                f"{f.rule} ({rb.rules[f.rule].rule.summary}) because "
                + (", ".join(f"{k} = {v!r}" for k, v in sorted(f.attrs.items())) or "its conditions held")
                for f in who
            ]
            rules = ", ".join(r for r, _, _, _ in blocked)
            return {
                "kind": "excluded",
                "rule": who[0].rule,
                "candidate_rules": [r for r, _, _, _ in blocked],
                "message": f"{item.id} was excluded by "
                + "; and by ".join(reasons)
                + f"; the candidate rules ({rules}) skip excluded items",
                "inputs": dict(who[0].attrs),
                "excluded_by": [{"rule": f.rule, "inputs": dict(f.attrs)} for f in who],
            }
    if blocked:
        entries = [(rid, {alias: item}, f) for rid, item, f, alias in blocked]
        return {
            "kind": "failed-condition",
            "item": blocked[0][1].id,
            "rules": [r for r, _, _, _ in blocked],
            "message": f"no rule proposed {blocked[0][1].id}: " + _summary(result, entries, depth),
        }
    return None


_DEPTH = 3  # how far a cause is followed through the facts that stopped it


def _concluded(rb: Rulebase, name: str) -> bool:
    """A dotted name is (a field of) an attribute that rules conclude."""
    parts = name.split(".")
    found = (rb.attributes.get(".".join(parts[:k])) for k in range(len(parts), 0, -1))
    return any(a is not None and not a.given for a in found)


def _relevance(rb: Rulebase, f: dict[str, Any], aliases: set[str]) -> str:
    """What a rule's first failed condition says about the rule: 'derived' (a concluded fact stopped it,
    the kind of cause to follow), 'input' (it is for another kind of workload) or 'item' (for another kind
    of item).
    """
    if f.get("op") == "join":
        return "derived"
    ref = f.get("ref")
    if ref is not None and any(_concluded(rb, n) for n in X.parse(ref).names):
        return "derived"
    if f["fact"].split(".")[0] in aliases:
        return "item"
    a = rb.attributes.get(f["fact"])
    return "input" if a is not None and a.given else "derived"


def _record_ref(rb: Rulebase, ref: str) -> tuple[str, str] | None:
    """A ref that is a plain field of a record attribute (``serving.plan.gpu``): (record, field)."""
    parts = ref.strip().split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        a = rb.attributes.get(head)
        if a is not None and a.type == "record" and all(p.isidentifier() for p in parts):
            return head, ".".join(parts[cut:])
    return None


def _follow(result: Result, f: dict[str, Any], depth: int) -> str:
    """A failed condition on a concluded fact, followed to what made that fact so (without the rule's name)."""
    rb = result.rulebase
    plain = f"the condition on {f['fact']} failed: {f['failed']} (it is {f['value']!r})"
    if depth >= _DEPTH:
        return plain
    op, member = f.get("op"), f.get("member")
    if op == "join":
        return str(f["failed"])
    if op == "not_contains":
        who = _who_added(result, f["fact"], member)
        if who:
            by = "; ".join(f"{w.rule} ({rb.rules[w.rule].rule.summary})" for w in who)
            return f"{member!r} is in {f['fact']}, put there by {by}"
        return plain
    if op == "contains" and member is not None and f["fact"] in rb.attributes:
        sub = why_not(result, f["fact"], member, depth + 1)
        return f"it needs {member!r} in {f['fact']}, and {sub['message']}"
    ref = f.get("ref")
    link = _record_ref(rb, ref) if ref else None
    if link is not None and f["value"] is not None:
        sub_c = _why_not_candidate(result, link[0], link[1], f["value"], depth + 1)
        if sub_c is not None:
            return f"it takes {ref}, and {sub_c['message']}"
    if f["failed"].startswith("it has no value") or f["failed"].endswith("but it has no value"):
        a = rb.attributes.get(f["fact"])
        writers = rb.writers.get(f["fact"], ()) if a is not None and not a.given else ()
        deeper: list[tuple[str, dict[str, Item], list[dict[str, Any]]]] = [
            (w, {}, fails) for w in writers if (fails := _Failures(result, rb.rules[w], {}).list())
        ]
        if deeper:
            return f"it needs {f['fact']}, which has no value: " + _summary(result, deeper, depth + 1)
    return plain


def _absent(result: Result, attr: str, memo: dict[str, bool]) -> bool:
    """The attribute has no value because this workload is not of the kind it is for: an input it does not
    give, or a conclusion every rule of which needs such an attribute.
    """
    if attr in result.outcome.values:
        return False
    rb = result.rulebase
    a = rb.attributes.get(attr)
    if a is None or a.given:
        return True
    if attr not in memo:
        memo[attr] = True  # rules form no cycle; this only stops a repeat
        memo[attr] = all(_inapplicable(result, w, memo) is not None for w in rb.writers.get(attr, ()))
    return memo[attr]


def _inapplicable(result: Result, rid: str, memo: dict[str, bool]) -> str | None:
    """Why a rule is for another kind of workload (in every alternative of it): an attribute it needs that
    this workload never has, or a condition on a workload input that fails; None when it applies.
    """
    rb = result.rulebase
    values = result.outcome.values
    rule = rb.rules[rid]
    first = None
    for v in rule.variants:
        gone = next((x for x in v.required if x not in values and _absent(result, x, memo)), None)
        if gone is None:
            break
        first = first or f"it needs {gone}, which this workload has no value for"
    else:
        return first
    for f in _Failures(result, rule, {}, expand=False).list():
        a = rb.attributes.get(f["fact"])
        ref = f.get("ref")
        if a is not None and a.given and not (ref and any(_concluded(rb, n) for n in X.parse(ref).names)):
            return f"{f['fact']} {f['failed']}, it is {f['value']!r}"
    return None


def _summary(result: Result, entries: list[tuple[str, dict[str, Item], list[dict[str, Any]]]], depth: int) -> str:
    """The rules that did not fire, the cause first: those a concluded fact stopped, followed to their cause
    (rules stopped the same way named together); then, briefly, those for another kind of item and those
    for another kind of workload.
    """
    rb = result.rulebase
    groups: dict[str, dict[str, list[str]]] = {"cause": {}, "item": {}, "work": {}}
    memo: dict[str, bool] = {}
    for rid, items, failures in entries:
        why = _inapplicable(result, rid, memo)
        if why is not None:
            groups["work"].setdefault(why, []).append(rid)
            continue
        if not failures:
            groups["cause"].setdefault("it did not fire", []).append(rid)
            continue
        f = failures[0]
        kind = _relevance(rb, f, set(items) | set(rb.rules[rid].items))
        if kind == "item" and depth == 0:
            groups["item"].setdefault(f"{f['fact']} {f['failed']}, it is {f['value']!r}", []).append(rid)
        elif kind == "input":
            groups["work"].setdefault(f"{f['fact']} {f['failed']}, it is {f['value']!r}", []).append(rid)
        else:
            groups["cause"].setdefault(_follow(result, f, depth), []).append(rid)
    parts = [f"{', '.join(rids)}: {why}" for why, rids in groups["cause"].items()]
    if parts and depth > 0:
        return "; ".join(parts)  # inside a cause, the rules of other kinds are noise
    for kind, title in (("item", "not for this item"), ("work", "not for this workload")):
        if groups[kind]:
            listed = "; ".join(f"{', '.join(rids)} ({why})" for why, rids in groups[kind].items())
            parts.append(f"{title}: {listed}" if parts else listed)
    return "; ".join(parts)


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
