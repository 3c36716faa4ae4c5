"""``gpusizer validate``: layered checks of rules, knowledge and workloads.

Layer 1 is YAML syntax, layer 2 the JSON Schemas, layer 3 meaning: what the
loader itself refuses (duplicate ids, unknown names, cycles...) and what it
accepts but is almost certainly wrong (a rule that can never fire, an
attribute nothing writes, an unresolved 'prefer' conflict, durable-rules'
hard limits).
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import GpusizerError, Problems
from .model import Rule, is_number
from .rulebase import Rulebase, load_rulebase

# durable-rules 2.0.28 limits, measured: sibling tests on one fact, equality tests on one property,
# rules sharing one identical condition (error 108 between 150 and 300)
MAX_SIBLING_TESTS = 64
MAX_EQUALITY_TESTS = 512
MAX_SHARED_CONDITION = 200


@dataclass
class Finding:
    level: str  # "error" | "warning"
    code: str
    file: str
    line: int | None
    col: int | None
    rule: str | None
    message: str
    help: str | None

    def render(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.col) if p is not None)
        who = f" {self.rule}:" if self.rule else ""
        text = f"{where}: {self.level}[{self.code}]{who} {self.message}"
        return text + (f"\n  help: {self.help}" if self.help else "")


def _from_error(err: GpusizerError, code: str | None = None) -> Finding:
    msg = err.message
    if code is None:
        code = "syntax" if msg.startswith("YAML") else "load"
    rule = None
    if err.file and err.file.endswith(".yaml") and "/" in err.file and not Path(err.file).name.startswith("_"):
        stem = Path(err.file).name[: -len(".yaml")]
        rule = stem[: -len(".test")] if stem.endswith(".test") else None if "knowledge" in err.file else stem
    return Finding("error", code, err.file or "<input>", err.line, err.col, rule, msg, err.help)


def _errors(exc: GpusizerError) -> list[GpusizerError]:
    return exc.errors if isinstance(exc, Problems) else [exc]


class _Ctx:
    def __init__(self, rb: Rulebase):
        self.rb = rb
        self.findings: list[Finding] = []

    def add(self, level, code, rule: Rule | None, path, message, help=None, *, file=None, line=None, key=False):
        if rule is not None:
            line, col = rule.doc.where(path, key=key)
            file = rule.file
        else:
            col = None
        finding = Finding(level, code, file, line, col, rule.id if rule else None, message, help)
        if finding not in self.findings:
            self.findings.append(finding)


def _literal_tests(tests) -> dict:
    if not isinstance(tests, dict):
        return {"eq": tests}
    if set(tests) == {"ref"}:
        return {}
    return {op: v for op, v in tests.items() if not (isinstance(v, dict) and "ref" in v)}


def _impossible(tests: dict, enum) -> str | None:
    """Why literal tests on one value can never all hold, or None."""
    lo, lo_strict, hi, hi_strict = -math.inf, False, math.inf, False
    for op, v in tests.items():
        if op in ("gt", "gte") and is_number(v):
            if v > lo or (v == lo and op == "gt"):
                lo, lo_strict = v, op == "gt"
        if op in ("lt", "lte") and is_number(v):
            if v < hi or (v == hi and op == "lt"):
                hi, hi_strict = v, op == "lt"
    if lo > hi or (lo == hi and (lo_strict or hi_strict)):
        return f"no value is {'>' if lo_strict else '>='} {lo} and {'<' if hi_strict else '<='} {hi}"
    eq = tests.get("eq")
    if "eq" in tests and is_number(eq):
        if eq < lo or eq > hi or (eq == lo and lo_strict) or (eq == hi and hi_strict):
            return f"{eq} is outside the bounds the other tests set"
    if "eq" in tests and "ne" in tests and tests["eq"] == tests["ne"]:
        return f"it must both equal and differ from {eq!r}"
    if "eq" in tests and eq in tests.get("not_in", []):
        return f"{eq!r} is both required and excluded"
    if enum:
        if "eq" in tests and eq not in enum:
            return f"{eq!r} is not one of the declared values ({', '.join(map(str, enum))})"
        if "in" in tests and not any(v in enum for v in tests["in"]):
            return f"none of {tests['in']} is a declared value ({', '.join(map(str, enum))})"
    return None


def _check_rule(ctx: _Ctx, rule: Rule) -> None:
    from .compiler import alternatives

    for combo in alternatives(rule.when):
        _check_conditions(ctx, rule, combo)  # a finding shared by several alternatives is kept once
    _check_rule_once(ctx, rule)


def _check_conditions(ctx: _Ctx, rule: Rule, conditions: list) -> None:
    rb = ctx.rb
    for path, cond in conditions:
        negated = "not" in cond
        inner = cond["not"] if negated else cond
        if "item" in inner:
            catalog = rb.catalogs.get(inner["item"])
            if catalog is None:
                continue
            for fname, tests in (inner.get("where") or {}).items():
                lits = _literal_tests(tests)
                fpath = path + (("not",) if negated else ()) + ("where", fname)
                if fname == "id":
                    for v in ([lits["eq"]] if "eq" in lits else []) + list(lits.get("in", [])):
                        if v not in catalog.items:
                            ctx.add("error", "unknown-item", rule, fpath,
                                    f"catalog '{catalog.name}' has no item '{v}'",
                                    "use an id from the catalog file")
                    continue
                f = catalog.fields.get(fname)
                why = _impossible(lits, f.enum if f else None)
                if why and not negated:
                    ctx.add("error", "never-fires", rule, fpath, f"'{fname}' can never match: {why}",
                            "fix the bounds; as written the rule never fires")
        else:
            (name, tests), = inner.items()
            attr = rb.attributes.get(name)
            why = _impossible(_literal_tests(tests), attr.enum if attr else None)
            if why and not negated:
                ctx.add("error", "never-fires", rule, path + (name,), f"'{name}' can never match: {why}",
                        "fix the bounds; as written the rule never fires", key=True)
    # several conditions on one attribute, together (within one alternative)
    merged: dict[str, dict] = {}
    for path, cond in conditions:
        if "not" in cond or "item" in cond:
            continue
        (name, tests), = cond.items()
        lits = _literal_tests(tests)
        both = dict(merged.get(name, {}))
        for op, v in lits.items():
            if op in both and both[op] != v and op in ("eq",):
                ctx.add("error", "never-fires", rule, path + (name,),
                        f"'{name}' must equal both {both[op]!r} and {v!r}", "keep one of the two tests", key=True)
            both[op] = v if op not in both else (max(both[op], v) if op in ("gt", "gte") and is_number(v) else
                                                  min(both[op], v) if op in ("lt", "lte") and is_number(v) else v)
        if name in merged:
            attr = rb.attributes.get(name)
            why = _impossible(both, attr.enum if attr else None)
            if why:
                ctx.add("error", "never-fires", rule, path + (name,),
                        f"conditions on '{name}' contradict each other: {why}",
                        "merge the conditions and fix the bounds", key=True)
        merged[name] = both


def _check_rule_once(ctx: _Ctx, rule: Rule) -> None:
    # numbers need a traceable source
    if _has_number(rule) and not any(s.quote or s.url or s.note for s in rule.sources):
        ctx.add("warning", "unsourced-number", rule, ("source",),
                "the rule uses numbers but its source has no quote, url or note",
                "quote the sentence the number comes from, or explain it in source.note", key=True)
    # durable-rules limits
    for cond in [c for v in rule.variants for c in v.conditions]:
        (alias, pattern), = cond.items()
        tests = pattern.get("$and", [pattern])
        if len(tests) > MAX_SIBLING_TESTS:
            ctx.add("error", "durable-limit", rule, ("when",),
                    f"one condition compiles to {len(tests)} tests; durable-rules accepts at most {MAX_SIBLING_TESTS}",
                    "split the condition over two rules or use fewer alternatives", key=True)


def _attr_tests(rule: Rule) -> dict:
    out: dict[str, dict] = {}
    for cond in rule.when:
        if "not" in cond or "item" in cond or "any" in cond:
            continue
        (name, tests), = cond.items()
        out.setdefault(name, []).append(_literal_tests(tests))
    return out


def _exclusive(rb: Rulebase, a: Rule, b: Rule) -> bool:
    """True when some attribute's literal tests in the two rules cannot hold together."""
    ta, tb = _attr_tests(a), _attr_tests(b)
    for name in set(ta) & set(tb):
        attr = rb.attributes.get(name)
        for x in ta[name]:
            for y in tb[name]:
                if "eq" in x and "eq" in y and x["eq"] != y["eq"]:
                    return True
                if "eq" in x and "in" in y and x["eq"] not in y["in"]:
                    return True
                if "eq" in y and "in" in x and y["eq"] not in x["in"]:
                    return True
                merged = {}
                for t in (x, y):
                    for op, v in t.items():
                        if op in ("gt", "gte") and is_number(v):
                            merged[op] = max(merged.get(op, v), v)
                        elif op in ("lt", "lte") and is_number(v):
                            merged[op] = min(merged.get(op, v), v)
                if _impossible(merged, attr.enum if attr else None):
                    return True
    return False


def _has_number(rule: Rule) -> bool:
    def walk(node):
        if is_number(node):
            return True
        if isinstance(node, dict):
            return any(walk(v) for v in node.values())
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return False
    import ast
    exprs = list(rule.let.values()) + [e for v in rule.then.values() for e in (v.values() if isinstance(v, dict) else [v])]
    in_exprs = any(isinstance(n, ast.Constant) and is_number(n.value) for e in exprs for n in ast.walk(e.tree))
    return walk(rule.when) or in_exprs


def _check_rulebase(ctx: _Ctx) -> None:
    rb = ctx.rb
    readers: dict[str, list] = {}
    for rule in rb.rules.values():
        for a in rule.reads:
            readers.setdefault(a, []).append(rule.id)
        _check_rule(ctx, rule)
    for name, attr in rb.attributes.items():
        if attr.input:
            continue
        if name in readers and name not in rb.writers:
            for rid in readers[name]:
                rule = rb.rules[rid]
                ctx.add("error", "unwritten-attribute", rule, ("when",),
                        f"reads '{name}', which no rule concludes and no workload gives",
                        "add a rule that concludes it, or fix the name; as written this rule never fires", key=True)
        if name in rb.writers and name not in readers and not attr.report:
            ctx.add("warning", "unused-attribute", None, (), f"'{name}' is concluded but neither read nor reported",
                    "read it in a rule, set report: true, or remove it", file=attr.file, line=attr.line)
        if name not in rb.writers and name not in readers:
            ctx.add("warning", "unused-attribute", None, (), f"'{name}' is declared but no rule reads or concludes it",
                    "remove the declaration or write the rule that concludes it", file=attr.file, line=attr.line)
        if attr.combine == "prefer":
            by_priority = Counter(rb.rules[w].priority for w in rb.writers.get(name, []))
            for prio, n in sorted(by_priority.items()):
                if n > 1:
                    same = sorted(w for w in rb.writers[name] if rb.rules[w].priority == prio)
                    if all(_exclusive(rb, rb.rules[a], rb.rules[b]) for i, a in enumerate(same) for b in same[i + 1:]):
                        continue
                    ctx.add("warning", "prefer-conflict", rb.rules[same[1]], ("priority",),
                            f"'{name}' is combined by priority, and {', '.join(same)} share priority {prio}",
                            "give them different priorities, or conditions that cannot hold together", key=True)
    # durable-rules limits across the ruleset
    shared: Counter = Counter()
    equality: Counter = Counter()
    for rule in rb.rules.values():
        shared[("stratum", rule.stratum)] += 1
        for cond in [c for v in rule.variants for c in v.conditions]:
            (alias, pattern), = cond.items()
            shared[json.dumps(pattern, sort_keys=True)] += 1
            for t in pattern.get("$and", [pattern]):
                for k, v in t.items():
                    if not k.startswith("$") and not isinstance(v, dict):
                        equality[k] += 1
    for key, n in shared.items():
        if n > MAX_SHARED_CONDITION:
            ctx.add("error", "durable-limit", None, (), f"{n} rules share one condition ({str(key)[:60]}); "
                    f"durable-rules fails near 256", "split the rulebase into more strata or areas",
                    file=str(rb.rule_dirs[0]))
    for prop, n in equality.items():
        if n > MAX_EQUALITY_TESTS:
            ctx.add("error", "durable-limit", None, (), f"{n} equality tests on fact property '{prop}'; "
                    f"durable-rules accepts about {MAX_EQUALITY_TESTS}", "reduce the number of conditions",
                    file=str(rb.rule_dirs[0]))


def _check_guidance(ctx: _Ctx) -> None:
    """rules/_guidance.yaml maps each piece of source guidance to rule ids; the ids must exist."""
    from .validate import check, closest, engine_schema
    from .yamlsrc import load

    for root in ctx.rb.rule_dirs:
        path = Path(root) / "_guidance.yaml"
        if not path.is_file():
            continue
        try:
            doc = load(path, f"{Path(root).name}/_guidance.yaml")
        except GpusizerError as exc:
            ctx.findings.append(_from_error(exc, "guidance"))
            continue
        found = check(doc, engine_schema("guidance"), "the guidance map")
        ctx.findings += [_from_error(e, "guidance") for e in found]
        if found:
            continue
        for i, item in enumerate(doc.data["items"]):
            for j, rid in enumerate(item.get("rules", [])):
                if rid not in ctx.rb.rules:
                    guess = closest(rid, ctx.rb.rules)
                    line, col = doc.where(("items", i, "rules", j))
                    ctx.findings.append(Finding("error", "guidance", doc.file, line, col, None,
                                                f"guidance item {item['id']} names unknown rule '{rid}'",
                                                (f"did you mean '{guess}'? " if guess else "")
                                                + "list ids of existing rules"))
            if not item.get("rules") and not item.get("note"):
                line, col = doc.where(("items", i))
                ctx.findings.append(Finding("warning", "guidance", doc.file, line, col, None,
                                            f"guidance item {item['id']} is encoded by no rule and says not why",
                                            "list its rules, or add a note saying why it is not encoded"))


def lint(rule_dirs, knowledge_dirs, workloads=()) -> tuple[list[Finding], Rulebase | None]:
    """Findings for a rulebase (and workload files checked against it)."""
    from .testing import load_cases

    try:
        rb = load_rulebase(rule_dirs, knowledge_dirs)
    except GpusizerError as exc:
        return [_from_error(e) for e in _errors(exc)], None
    ctx = _Ctx(rb)
    _check_rulebase(ctx)
    try:
        load_cases(rb)
    except GpusizerError as exc:
        ctx.findings += [_from_error(e, "tests") for e in _errors(exc)]
    for path in workloads:
        try:
            rb.inputs.load(Path(path), rb.catalogs, display=str(path))
        except GpusizerError as exc:
            ctx.findings += [_from_error(e, "workload") for e in _errors(exc)]
    _check_guidance(ctx)
    ctx.findings.sort(key=lambda f: (f.file or "", f.line or 0, f.col or 0, f.code))
    return ctx.findings, rb


def to_json(findings: list[Finding]) -> str:
    return json.dumps([asdict(f) for f in findings], indent=2, ensure_ascii=False) + "\n"
