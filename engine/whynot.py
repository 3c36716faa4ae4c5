"""``why-not``: why an attribute did not take a value, from the session's own facts.

durable-rules gives no trace of failed matches, so the rule's YAML conditions
are evaluated again here, in Python, against the final values of the run.
Answers, most specific first: it is the value; an input says otherwise; a
contribution with that value was overridden; a candidate with it lost on the
selection key; a rule excluded it; a rule's condition failed (which part, with
the facts' values); or nothing in the rulebase could ever produce it.
"""
from __future__ import annotations

from . import expr as X
from .combine import canonical
from .errors import InputError
from .model import is_number
from .result import Result


def parse_query(rb, query: str):
    if "=" not in query:
        raise InputError(f"'{query}' is not ATTRIBUTE=VALUE", help="e.g. ram.system_gb=64")
    name, raw = query.split("=", 1)
    name = name.strip()
    attr = rb.attribute(name)
    raw = raw.strip()
    value: object = raw
    if attr.type in ("number", "integer", "scalar"):
        try:
            value = float(raw)
            value = int(value) if value.is_integer() else value
        except ValueError:
            if attr.type != "scalar":
                raise InputError(f"'{raw}' is not a number, and {name} is a {attr.type}",
                                 help=f"e.g. {name}=64") from None
    elif attr.type == "boolean":
        if raw.lower() not in ("true", "false", "yes", "no"):
            raise InputError(f"{name} is true or false, not '{raw}'", help=f"e.g. {name}=true")
        value = raw.lower() in ("true", "yes")
    return name, value


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return canonical(a) == canonical(b)


class _Eval:
    """Evaluate one rule's conditions against a run's values, with items bound by alias."""

    def __init__(self, result: Result, rule, items: dict):
        self.result, self.rule, self.items = result, rule, items
        self.values = result.outcome.values

    def _operand(self, v):
        if isinstance(v, dict) and set(v) == {"ref"}:
            e = X.parse(v["ref"])
            return e.bind(self._resolve)({})
        return v

    def _resolve(self, dotted):
        head, _, rest = dotted.partition(".")
        if head in self.items:
            item = self.items[head]
            return lambda env: item.get(rest)
        return lambda env: self.values.get(dotted)

    def test(self, actual, tests) -> str | None:
        """None when the tests hold, else the failing part."""
        if not isinstance(tests, dict) or set(tests) == {"ref"}:
            tests = {"eq": tests}
        for op, raw in tests.items():
            if op in ("contains", "not_contains"):
                member = self._operand(raw)
                inside = isinstance(actual, list) and member in actual
                if (op == "contains") != inside:
                    return f"{op}: {member!r} ({'it is' if inside else 'it is not'} a member)"
                continue
            if op == "exists":
                if bool(raw) != (actual is not None):
                    return f"exists: {str(raw).lower()}"
                continue
            if op == "empty":
                if bool(raw) != (not actual):
                    return f"empty: {str(raw).lower()}"
                continue
            try:
                want = [self._operand(x) for x in raw] if op in ("in", "not_in") else self._operand(raw)
            except X.ExprError as exc:
                # the engine's join fails the same way (a text value where a number is needed)
                return f"{op} {raw.get('ref') if isinstance(raw, dict) else raw!r}, which cannot be computed: {exc.message}"
            if actual is None:
                return f"{op} {want!r}, but it has no value"
            try:
                if op in ("gt", "gte", "lt", "lte") and not is_number(actual):
                    return f"{op} {want!r}, but it is not a number"
                ok = {"eq": lambda: _same(actual, want), "ne": lambda: not _same(actual, want),
                      "gt": lambda: actual > want, "gte": lambda: actual >= want,
                      "lt": lambda: actual < want, "lte": lambda: actual <= want,
                      "in": lambda: actual in want, "not_in": lambda: actual not in want}[op]()
            except TypeError:
                ok = False
            if not ok:
                return f"{op} {want!r}"
        return None

    def failures(self, conditions=None) -> list[dict]:
        out = []
        top = conditions is None
        for i, cond in enumerate(self.rule.when if top else conditions):
            if "any" in cond:
                branches = [self.failures(branch) for branch in cond["any"]]
                if all(branches):
                    first = branches[0][0]
                    out.append(dict(first, failed=f"{first['failed']}, and none of the other "
                                                  f"{len(branches) - 1} alternative(s) holds either"))
                continue
            negated = "not" in cond
            inner = cond["not"] if negated else cond
            if "item" in inner:
                alias = inner["as"]
                item = self.items.get(alias)
                if item is None:
                    continue
                for fname, tests in (inner.get("where") or {}).items():
                    why = self.test(item.get(fname), tests)
                    if (why is None) == negated:
                        out.append({"condition": i, "fact": f"{alias}.{fname}", "value": item.get(fname),
                                    "failed": why or "the negated condition holds"})
                continue
            (name, tests), = inner.items()
            why = self.test(self.values.get(name), tests)
            if (why is None) == negated:
                out.append({"condition": i, "fact": name, "value": self.values.get(name),
                            "failed": why or "the negated condition holds"})
        if not top:
            return out
        # attributes that only expressions read must have a value too
        tested = {next(iter(c)) for c in self.rule.when if "item" not in c and "not" not in c and "any" not in c}
        tested |= {next(iter(x)) for c in self.rule.when if "any" in c for branch in c["any"] for x in branch
                   if "item" not in x and "not" not in x}
        for name in sorted(self.rule.reads - tested):
            if self.values.get(name) is None and not any(f["fact"] == name for f in out):
                out.append({"condition": None, "fact": name, "value": None, "failed": "it has no value"})
        return out


def _record_field(rule, attr: str):
    """If the rule sets ``attr`` to a plain field of a record attribute, (record attr, field)."""
    e = rule.then.get(attr)
    if e is None or isinstance(e, dict):
        return None
    parts = e.source.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in rule.reads:
            return head, ".".join(parts[cut:])
    return None


def why_not(result: Result, attr: str, value) -> dict:
    rb = result.rulebase
    a = rb.attributes[attr]
    values = result.outcome.values
    current = values.get(attr)
    base = {"attribute": attr, "value": value, "actual": current}
    if current is not None and (_same(current, value) or (isinstance(current, list) and value in current)):
        return dict(base, kind="is-value", message=f"{attr} is {current!r}: nothing prevented it")
    if a.input:
        iv = result.outcome.inputs.get(attr)
        return dict(base, kind="input", message=f"{attr} is a workload input; it is {current!r} "
                    f"({iv.origin}: {iv.detail})" if iv else f"{attr} is a workload input and is not given")
    if a.enum and value not in a.enum:
        return dict(base, kind="impossible", message=f"no rule can ever conclude {attr}={value!r}: its declared "
                    f"values are {', '.join(map(str, a.enum))}")
    writers = rb.writers.get(attr, [])
    if not writers:
        return dict(base, kind="impossible", message=f"nothing in the rulebase concludes {attr}")
    # 1. a contribution with that value that lost
    c = result.outcome.conclusions.get(attr)
    if c is not None:
        winner = c.contributions[c.combined.binding[0]]
        for contrib in c.contributions:
            if _same(contrib.value, value):
                return dict(base, kind="overridden", rule=contrib.rule, by=winner.rule,
                            message=f"{contrib.rule} concluded {value!r}, but {attr} combines by "
                                    f"'{a.combine}' ({c.combined.note}) and {winner.rule}'s {winner.value!r} won")
    # 2. follow a plain field of a record attribute (gpu.model = gpu.selection.gpu)
    for rid in writers:
        link = _record_field(rb.rules[rid], attr)
        if link:
            rec_attr, field = link
            answer = _why_not_candidate(result, rec_attr, field, value)
            if answer:
                return dict(base, via=f"{rid}: {attr} = {rec_attr}.{field}", **answer)
    # 3. each writer: did it fire with another value, or which condition failed?
    reasons = []
    for rid in writers:
        rule = rb.rules[rid]
        fired = [f for f in result.firings if f.rule == rid]
        if fired:
            reasons.append({"rule": rid, "fired": True, "concluded": fired[0].outputs.get(attr)})
            continue
        reasons.append({"rule": rid, "fired": False, "failed": _Eval(result, rule, {}).failures()})
    silent = [r for r in reasons if not r["fired"]]
    if silent:
        parts = []
        for r in silent:
            fail = r["failed"][0] if r["failed"] else None
            parts.append(f"{r['rule']}: the condition on {fail['fact']} failed: {fail['failed']} "
                         f"(it is {fail['value']!r})" if fail else f"{r['rule']} did not fire")
        return dict(base, kind="failed-condition", rules=reasons,
                    message=f"the rules that would conclude {attr} did not fire: " + "; ".join(parts))
    return dict(base, kind="not-produced", rules=reasons,
                message=f"every rule that concludes {attr} fired and concluded something else: "
                        + "; ".join(f"{r['rule']} gave {r['concluded']!r}" for r in reasons))


def _why_not_candidate(result: Result, rec_attr: str, field: str, value) -> dict | None:
    rb = result.rulebase
    a = rb.attributes[rec_attr]
    c = result.outcome.conclusions.get(rec_attr)
    if c is not None and a.combine in ("argmin", "argmax"):
        win = c.contributions[c.combined.binding[0]].value
        for contrib in c.contributions:
            if isinstance(contrib.value, dict) and _same(contrib.value.get(field), value):
                lost = contrib.value
                diff = lost[a.key] - win[a.key]
                out = {"kind": "beaten-candidate", "rule": contrib.rule, "candidate": lost, "winner": win,
                       "margin": diff,
                       "message": f"{value!r} was a candidate ({_brief(lost)}) but {win.get(field)!r} won on "
                                  f"{a.key}: {lost[a.key]:g} vs {win[a.key]:g} ({'+' if diff >= 0 else ''}{diff:g})"}
                if a.first_by and lost.get(a.first_by) != win.get(a.first_by):
                    out["message"] = (f"{value!r} was a candidate ({_brief(lost)}) but {win.get(field)!r} won "
                                      f"first on {a.first_by}: {lost.get(a.first_by)!r} vs {win.get(a.first_by)!r}, "
                                      f"which is compared before {a.key}")
                return out
    # no candidate with that value: which candidate rule would have made it, and what stopped it?
    blocked = []
    for rid in rb.writers.get(rec_attr, []):
        rule = rb.rules[rid]
        e = rule.then.get(rec_attr)
        if not isinstance(e, dict) or field not in e:
            continue
        src = e[field].source.split(".")
        if len(src) != 2 or src[0] not in rule.items:
            continue
        alias, item_field = src
        catalog = rb.catalogs[rule.items[alias]]
        item = next((it for it in catalog.items.values() if _same(it.get(item_field), value)), None)
        if item is None:
            return {"kind": "impossible", "message": f"no item of catalog '{catalog.name}' has "
                    f"{item_field} = {value!r}, so no rule can propose it",
                    "known": sorted(catalog.items)}
        failures = _Eval(result, rule, {alias: item}).failures()
        if failures:
            blocked.append((rid, item, failures))
    for rid, item, failures in blocked:
        excluded = [f for f in failures if f["failed"].startswith("not_contains")]
        who = _who_added(result, excluded[0]["fact"], item.id) if excluded else []
        if who:
            reasons = [f"{f.rule} ({rb.rules[f.rule].summary}) because "
                       + (", ".join(f"{k} = {v!r}" for k, v in sorted(f.attrs.items())) or "its conditions held")
                       for f in who]
            rules = ", ".join(r for r, _, _ in blocked)
            return {"kind": "excluded", "rule": who[0].rule, "candidate_rules": [r for r, _, _ in blocked],
                    "message": f"{item.id} was excluded by " + "; and by ".join(reasons)
                               + f"; the candidate rules ({rules}) skip excluded items",
                    "inputs": who[0].attrs,
                    "excluded_by": [{"rule": f.rule, "inputs": f.attrs} for f in who]}
    if blocked:
        parts = [f"{rid}: the condition on {f[0]['fact']} failed: {f[0]['failed']} (it is {f[0]['value']!r})"
                 for rid, _, f in blocked]
        return {"kind": "failed-condition", "item": blocked[0][1].id, "rules": [r for r, _, _ in blocked],
                "message": f"no rule proposed {blocked[0][1].id}: " + "; ".join(parts)}
    return None


def _who_added(result: Result, list_attr: str, member) -> list:
    """Every firing that put ``member`` into the list attribute, in contribution order."""
    c = result.outcome.conclusions.get(list_attr)
    if c is None:
        return []
    return [result.outcome.firings[contrib.firing] for contrib in c.contributions
            if contrib.value == member or (isinstance(contrib.value, list) and member in contrib.value)]


def _brief(rec: dict) -> str:
    return ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else f"{k} {v}"
                     for k, v in rec.items())
