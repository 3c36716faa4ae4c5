"""Rules as people read them: conditions in words and symbols, for ``rules show`` and the docs."""

from __future__ import annotations

from typing import Any

from ..lang.ir import AnyOf, AttrCond, Condition, FieldCond, ItemCond, Not, Ref, Rule, Test
from ..plan.resolve import PlannedRule
from ..plan.rulebase import Rulebase

_SYM = {"eq": "=", "ne": "≠", "gt": ">", "gte": "≥", "lt": "<", "lte": "≤"}


def _operand(value: Any) -> str:
    if isinstance(value, Ref):
        src = value.source
        return src if src.replace(".", "").replace("_", "").isalnum() else f"({src})"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return f"{value:g}" if isinstance(value, float) else str(value)


def test_text(subject: str, t: Test) -> str:
    """One test in symbols: 'task ∈ {training, fine-tuning}', 'gpu.excluded ∌ g.id'."""
    if t.op in _SYM:
        return f"{subject} {_SYM[t.op]} {_operand(t.operand)}"
    if t.op in ("in", "not_in"):
        values = t.operand if isinstance(t.operand, tuple) else ()
        return f"{subject} {'∈' if t.op == 'in' else '∉'} {{{', '.join(_operand(v) for v in values)}}}"
    if t.op == "exists":
        return f"{subject} is known" if t.operand else f"{subject} has no value"
    if t.op == "empty":
        return f"{subject} is empty" if t.operand else f"{subject} is not empty"
    if t.op == "contains":
        return f"{subject} ∋ {_operand(t.operand)}"
    return f"{subject} ∌ {_operand(t.operand)}"


def _tests(subject: str, tests: tuple[Test, ...]) -> str:
    return " and ".join(test_text(subject, t) for t in tests)


def _where(where: tuple[FieldCond, ...]) -> str:
    return " and ".join(_tests(f.field, f.tests) for f in where)


def condition_text(cond: Condition) -> str:
    """One condition in words: 'task ∈ {training, fine-tuning}', 'for each gpu g with price > 0'."""
    if isinstance(cond, AttrCond):
        return _tests(cond.attribute, cond.tests)
    if isinstance(cond, ItemCond) and cond.members is not None:
        tests = f" with {_tests(cond.alias, cond.where[0].tests)}" if cond.where else ""
        return f"for each {cond.alias} in [{', '.join(_operand(m) for m in cond.members)}]{tests}"
    if isinstance(cond, ItemCond):
        return f"for each {cond.catalog} {cond.alias}" + (f" with {_where(cond.where)}" if cond.where else "")
    if isinstance(cond, Not):
        inner = cond.inner
        if isinstance(inner, ItemCond):
            return f"no {inner.catalog} {inner.alias}" + (f" with {_where(inner.where)}" if inner.where else "")
        return f"not ({condition_text(inner)})"
    assert isinstance(cond, AnyOf)
    return "either " + " or ".join("(" + "; ".join(condition_text(c) for c in b) + ")" for b in cond.branches)


def rule_record(rb: Rulebase, planned: PlannedRule) -> dict[str, Any]:
    """A rule as ``rules show`` / ``rules list`` / the docs present it."""
    from ..load.yamlsrc import load

    rule: Rule = planned.rule
    feeds = sorted({r.id for r in rb.rules.values() if set(rule.writes) & r.reads})
    fed_by = sorted({w for a in planned.reads for w in rb.writers.get(a, ())})
    tests: list[str] = []
    if rule.test_file:
        data = load(rule.test_file).data
        tests = [c.get("name") for c in (data or {}).get("cases", [])] if isinstance(data, dict) else []
    then: dict[str, Any] = {}
    for c in rule.then:
        then[c.attribute] = (
            {k: v.source for k, v in c.fields}
            if c.fields is not None
            else (c.value.source if c.value is not None else "")
        )
    return {
        "id": rule.id,
        "area": rule.area,
        "summary": rule.summary,
        "file": rule.file,
        "extends": rule.extends,
        "bases": list(rule.base_files),
        "priority": rule.priority,
        "stratum": planned.stratum,
        "overlay": rule.overlay,
        "when": [condition_text(c) for c in rule.when],
        "let": {x.name: x.value.source for x in rule.lets},
        "then": then,
        "sources": [s.as_dict() for s in rule.sources],
        "tests": tests,
        "reads": sorted(planned.reads),
        "writes": list(rule.writes),
        "fed_by": fed_by,
        "feeds": feeds,
    }
