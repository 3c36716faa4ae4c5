"""``gpusizer validate``: layered checks of rules, knowledge and workloads.

Layer 1 is YAML syntax, layer 2 the JSON Schemas, layer 3 meaning: what the loader itself
refuses (duplicate ids, unknown names, cycles...) and what it accepts but is almost certainly
wrong (a rule that can never fire, an attribute nothing writes, an unresolved 'prefer'
conflict, a number without a source). Whether tests can hold together is asked of the one
evaluator (``lang.semantics``), so lint and the engine cannot disagree on what a test means.
"""

from __future__ import annotations

import ast
import functools
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, GpusizerError, hint
from ..lang import semantics as S
from ..lang.expr import Expr, Template
from ..lang.ir import AnyOf, AttrCond, FieldCond, ItemCond, Not, Ref, Rule, Scalar, Span, Test
from ..load.imports import Check
from ..load.loader import GUIDANCE_FILE
from ..load.schema import check, engine_schema
from ..load.yamlsrc import load
from ..plan.resolve import PlannedRule
from ..plan.rulebase import Rulebase, load_rulebase
from ..report.document import to_json as _to_json

LINE_WIDTH = 200  # the longest line a rule, base or test file may have: one a reviewer reads whole


def _from_error(err: GpusizerError, code: str | None = None) -> list[Diagnostic]:
    """Loader errors as findings; the loader names the rule an error belongs to."""
    return [
        replace(d, code=code or ("syntax" if d.message.startswith("YAML") else d.code), snippet=None)
        for d in err.diagnostics
    ]


class _Findings:
    def __init__(self, rb: Rulebase) -> None:
        self.rb = rb
        self.found: list[Diagnostic] = []

    def add(
        self, level: str, code: str, rule: Rule | None, span: Span | None, message: str, help: str | None = None
    ) -> None:
        d = Diagnostic(
            message,
            span.file if span else None,
            span.line if span else None,
            span.col if span and rule is not None else None,
            help,
            None,
            "error" if level == "error" else "warning",
            code,
            rule.id if rule else None,
        )
        if d not in self.found:
            self.found.append(d)


def _literal(tests: Iterable[Test]) -> list[Test]:
    return [t for t in tests if not isinstance(t.operand, Ref)]


def why_never(tests: Sequence[Test], enum: Sequence[Scalar] | None) -> str | None:
    """Why literal tests on one value can never all hold (by the evaluator), phrased for people."""
    lits = _literal(tests)
    if S.satisfiable(lits, enum):
        return None
    lo, lo_op, hi, hi_op = -math.inf, "", math.inf, ""
    for t in lits:
        v = t.operand
        if not (isinstance(v, (int, float)) and S.is_number(v)):
            continue
        if t.op in ("gt", "gte") and (v > lo or (v == lo and t.op == "gt")):
            lo, lo_op = v, t.op
        if t.op in ("lt", "lte") and (v < hi or (v == hi and t.op == "lt")):
            hi, hi_op = v, t.op
    if lo_op and hi_op:
        sym = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
        return f"no value is {sym[lo_op]} {lo:g} and {sym[hi_op]} {hi:g}"
    eq = [t.operand for t in lits if t.op == "eq"]
    if enum is not None and eq and not any(S.same(eq[0], e) for e in enum):
        return f"{eq[0]!r} is not one of the declared values ({', '.join(map(str, enum))})"
    ins = [t.operand for t in lits if t.op == "in"]
    if enum is not None and ins and isinstance(ins[0], tuple):
        return f"none of {list(ins[0])} is a declared value ({', '.join(map(str, enum))})"
    return "no value passes " + ", ".join(f"{t.op} {t.operand!r}" for t in lits)


def _variant_checks(out: _Findings, planned: PlannedRule) -> None:
    rb = out.rb
    rule = planned.rule
    for v in planned.variants:
        merged: dict[str, list[Test]] = {}
        for cond in v.conditions:
            if isinstance(cond, Not):
                continue
            if isinstance(cond, ItemCond):
                catalog = rb.catalogs[cond.catalog]
                for f in cond.where:
                    _field_checks(out, rule, catalog.name, f, catalog.items, catalog.fields.get(f.field))
                continue
            assert isinstance(cond, AttrCond)
            attr = rb.attributes[cond.attribute]
            why = why_never(cond.tests, attr.enum)
            if why:
                out.add(
                    "error",
                    "never-fires",
                    rule,
                    cond.span,
                    f"'{cond.attribute}' can never match: {why}",
                    "fix the bounds; as written the rule never fires",
                )
                continue
            if cond.attribute in merged:
                both = merged[cond.attribute] + list(cond.tests)
                why = why_never(both, attr.enum)
                if why:
                    out.add(
                        "error",
                        "never-fires",
                        rule,
                        cond.span,
                        f"conditions on '{cond.attribute}' contradict each other: {why}",
                        "merge the conditions and fix the bounds",
                    )
                merged[cond.attribute] = both
            else:
                merged[cond.attribute] = list(cond.tests)


def _field_checks(out: _Findings, rule: Rule, catalog: str, f: FieldCond, items: Any, declared: Any) -> None:
    if f.field == "id":
        for t in _literal(f.tests):
            values = t.operand if isinstance(t.operand, tuple) else (t.operand,) if t.op == "eq" else ()
            for value in values:
                if value not in items:
                    out.add(
                        "error",
                        "unknown-item",
                        rule,
                        t.span,
                        f"catalog '{catalog}' has no item '{value}'",
                        f"{hint(value, items)}use an id from the catalog file",
                    )
        return
    why = why_never(f.tests, declared.enum if declared else None)
    if why:
        out.add(
            "error",
            "never-fires",
            rule,
            f.span,
            f"'{f.field}' can never match: {why}",
            "fix the bounds; as written the rule never fires",
        )


def _has_number(rule: Rule) -> bool:
    def in_tests(tests: Iterable[Test]) -> bool:
        return any(
            S.is_number(t.operand)
            or (isinstance(t.operand, tuple) and any(map(S.is_number, t.operand)))
            or (isinstance(t.operand, Ref) and _expr_number(t.operand.expr.tree))
            for t in tests
        )

    def in_cond(c: Any) -> bool:
        if isinstance(c, Not):
            return in_cond(c.inner)
        if isinstance(c, AttrCond):
            return in_tests(c.tests)
        if isinstance(c, ItemCond):
            return any(in_tests(f.tests) for f in c.where)
        return any(in_cond(x) for b in c.branches for x in b)

    exprs = [p for comp in rule.computed() for p in (comp.parts if isinstance(comp, Template) else (comp,))]
    return any(in_cond(c) for c in rule.when) or any(_expr_number(e.tree) for e in exprs if isinstance(e, Expr))


def _expr_number(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and S.is_number(n.value) for n in ast.walk(tree))


def _exclusive(rb: Rulebase, a: PlannedRule, b: PlannedRule) -> bool:
    """Some attribute's literal tests in the two rules cannot hold together."""

    def tests(r: PlannedRule) -> dict[str, list[Test]]:
        out: dict[str, list[Test]] = {}
        for c in r.rule.when:
            if isinstance(c, AttrCond):
                out.setdefault(c.attribute, []).extend(c.tests)
        return out

    ta, tb = tests(a), tests(b)
    return any(why_never(ta[n] + tb[n], rb.attributes[n].enum) for n in set(ta) & set(tb))


def branches(node: ast.AST) -> int:
    """How many cases the largest chain of conditionals in an expression picks among
    (``a if x else b if y else c``: 3).
    """
    most = 1
    for n in ast.walk(node):
        if isinstance(n, ast.IfExp):
            most = max(most, _chain(n))
    return most


def _chain(n: ast.expr) -> int:
    if isinstance(n, ast.IfExp):
        return _chain(n.body) + _chain(n.orelse)
    return 1


def _template_checks(out: _Findings, rule: Rule) -> None:
    """A placeholder that picks among several texts is several rules written as one; text glued with
    '+' is a template written the long way.
    """
    written = [(x.value, x.span) for x in rule.lets] + [(v, c.span) for c in rule.then for v in c.computed()]
    for value, span in written:
        if "text-glue" not in rule.allow:
            # a base's let is found once, at the base, not once for every rule that extends it
            owner = rule if span.file == rule.span.file else None
            for shown in _glued(value):
                out.add("warning", "text-glue", owner, span, f"text joined with '+': {shown}", GLUE_HELP)
        if not isinstance(value, Template) or "split-cases" in rule.allow:
            continue
        for n, shown in _many_cases(value):
            out.add(
                "warning",
                "split-cases",
                rule,
                span,
                f"a placeholder picks among {n} cases: {{{shown}}}",
                "split the cases into rules, each with its case's conditions in 'when' and its own text",
            )


GLUE_HELP = (
    "write a template: \"... {x} ...\" (a let with '{' is one); where the text differs by case, give each case "
    "its own template let and pick among them by name"
)


def _short(source: str) -> str:
    return source if len(source) <= 60 else source[:57] + "..."


def _many_cases(template: Template) -> Iterator[tuple[int, str]]:
    """Each placeholder of a template that picks among three or more cases: the count and its source, shortened."""
    for part in template.parts:
        if isinstance(part, Expr) and (n := branches(part.tree.body)) > 2:
            yield n, _short(part.source)


def _glued(value: Expr | Template) -> Iterator[str]:
    """Each expression (or template placeholder) that joins text with '+', one of the operands a text literal
    or a text(...) call: its source, shortened (a placeholder in braces).
    """
    for part in value.parts if isinstance(value, Template) else (value,):
        if isinstance(part, Expr) and any(_joins_text(n) for n in ast.walk(part.tree)):
            yield f"{{{_short(part.source)}}}" if isinstance(value, Template) else _short(part.source)


def _joins_text(node: ast.AST) -> bool:
    def text(n: ast.expr) -> bool:
        return (isinstance(n, ast.Constant) and isinstance(n.value, str)) or (
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "text"
        )

    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and (text(node.left) or text(node.right))


def _inference_checks(out: _Findings) -> None:
    """The input-inference steps (knowledge files with ``infer:``), held to what rules are: each step
    cites a source, its ``because`` text picks no case among several, and no line is over the width.
    """
    for inf in out.rb.inputs.inferences.values():
        for step in inf.steps:
            if not step.sources:
                out.add(
                    "warning",
                    "source",
                    None,
                    step.span,
                    f"inference step '{step.id}' cites no source",
                    "add a 'source' with the document (and quote) that says so",
                )
            for n, shown in _many_cases(step.because):
                out.add(
                    "warning",
                    "split-cases",
                    None,
                    step.span,
                    f"inference step '{step.id}': a placeholder picks among {n} cases: {{{shown}}}",
                    "split the cases into steps, each with its case's 'when' and its own text",
                )


def _knowledge_glue(out: _Findings) -> None:
    """Text glued with '+' in the knowledge's own expressions: the inference steps and checks, and the import
    mappings' entries (their defaults, lets, values, explanations and checks).
    """
    found: list[tuple[str, Span, Sequence[Expr | Template]]] = []
    for inf in out.rb.inputs.inferences.values():
        for step in inf.steps:
            values: list[Expr | Template] = [step.value, step.because, *([step.when] if step.when else [])]
            found.append((f"inference step '{step.id}'", step.span, values + [e for n in step.lets for e in n.exprs]))
        found += [(f"inference check '{c.id}'", c.span, _check_values(c)) for c in inf.checks]
    # an entry holds what it extends: each is named by its own line, so that it is found once
    for mapping in out.rb.inputs.imports.values():
        for entry in mapping.entries.values():
            found += [(f"default '{n.name}'", n.span, n.exprs) for n in entry.defaults]
            found += [(f"let '{n.name}'", n.span, n.exprs) for n in entry.lets]
            for s in entry.setters:
                found.append((f"set '{s.key}'", s.span, [*s.exprs, *([s.explain] if s.explain else [])]))
            found += [(f"check '{c.id}'", c.span, _check_values(c)) for c in entry.checks]
    for where, span, written in found:
        for shown in (shown for v in written for shown in _glued(v)):
            out.add("warning", "text-glue", None, span, f"{where}: text joined with '+': {shown}", GLUE_HELP)


def _check_values(check: Check) -> list[Expr | Template]:
    return [*([check.when] if check.when else []), *([check.message] if check.message else [])]


def _long_lines(out: _Findings) -> None:
    """A line over LINE_WIDTH characters in a rules directory: fold the text, or name a part of it."""
    for d in out.rb.rule_dirs:
        root = Path(d)
        for path in sorted(root.rglob("*.yaml")):
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if len(line) > LINE_WIDTH:
                    out.add(
                        "warning",
                        "long-line",
                        None,
                        Span(str(Path(root.name) / path.relative_to(root)), n),
                        f"a line of {len(line)} characters (at most {LINE_WIDTH})",
                        "fold a long text into a '>-' block, or give a part of a long expression a name under 'let'",
                    )


def _rulebase_checks(out: _Findings) -> None:
    rb = out.rb
    readers = rb.readers()
    for planned in rb.rules.values():
        _variant_checks(out, planned)
        rule = planned.rule
        _template_checks(out, rule)
        if _has_number(rule) and not any(s.quote or s.url or s.note for s in rule.sources):
            out.add(
                "warning",
                "unsourced-number",
                rule,
                rule.key_span("source"),
                "the rule uses numbers but its source has no quote, url or note",
                "quote the sentence the number comes from, or explain it in source.note",
            )
    for name, attr in rb.attributes.items():
        if attr.given:
            continue
        if name in readers and name not in rb.writers:
            for rid in readers[name]:
                rule = rb.rules[rid].rule
                out.add(
                    "error",
                    "unwritten-attribute",
                    rule,
                    rule.key_span("when"),
                    f"reads '{name}', which no rule concludes and no workload gives",
                    "add a rule that concludes it, or fix the name; as written this rule never fires",
                )
        if name in rb.writers and name not in readers and not attr.report:
            out.add(
                "warning",
                "unused-attribute",
                None,
                attr.span,
                f"'{name}' is concluded but neither read nor reported",
                "read it in a rule, set report: true, or remove it",
            )
        if name not in rb.writers and name not in readers:
            out.add(
                "warning",
                "unused-attribute",
                None,
                attr.span,
                f"'{name}' is declared but no rule reads or concludes it",
                "remove the declaration or write the rule that concludes it",
            )
        if attr.combine == "prefer":
            writers = rb.writers.get(name, ())
            by_priority = Counter(rb.rules[w].rule.priority for w in writers)
            for prio, n in sorted(by_priority.items()):
                if n < 2:
                    continue
                same = sorted(w for w in writers if rb.rules[w].rule.priority == prio)
                if all(_exclusive(rb, rb.rules[a], rb.rules[b]) for i, a in enumerate(same) for b in same[i + 1 :]):
                    continue
                second = rb.rules[same[1]].rule
                out.add(
                    "warning",
                    "prefer-conflict",
                    second,
                    second.key_span("priority"),
                    f"'{name}' is combined by priority, and {', '.join(same)} share priority {prio}",
                    "give them different priorities, or conditions that cannot hold together",
                )


def _conditions(when: Iterable[Any]) -> Iterable[AttrCond | ItemCond]:
    """Every simple condition, inside 'any' branches and 'not' too."""
    for c in when:
        if isinstance(c, AnyOf):
            for branch in c.branches:
                yield from _conditions(branch)
        elif isinstance(c, Not):
            yield c.inner
        else:
            yield c


def _exprs(rule: Rule) -> list[tuple[Expr, Span]]:
    """Every expression the rule evaluates, with where it is written: its refs, lets and conclusions (templates'
    placeholders).
    """
    out: list[tuple[Expr, Span]] = []
    for c in _conditions(rule.when):
        tests = c.tests if isinstance(c, AttrCond) else tuple(t for f in c.where for t in f.tests)
        out += [(t.operand.expr, t.span) for t in tests if isinstance(t.operand, Ref)]
    computed = [(x.value, x.span) for x in rule.lets] + [(v, c.span) for c in rule.then for v in c.computed()]
    for comp, span in computed:
        out += [(p, span) for p in (comp.parts if isinstance(comp, Template) else (comp,)) if isinstance(p, Expr)]
    return out


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _reads(expr: Expr, name: str) -> list[bool]:
    """For each place the expression reads ``name``: whether a missing value is safe there, that is compared for
    equality or tested for truth (a missing value answers: not equal, false), not computed with (arithmetic, a
    function, an ordering, text), which fails.
    """
    return _read_places(expr).get(name, [])


@functools.lru_cache(maxsize=4096)
def _read_places(expr: Expr) -> dict[str, list[bool]]:
    """``_reads`` for every name the expression reads, from one walk of its tree (lint asks of each expression
    once per field of each join of its rule).
    """
    parents = {child: node for node in ast.walk(expr.tree) for child in ast.iter_child_nodes(node)}
    out: dict[str, list[bool]] = {}
    for node in ast.walk(expr.tree):
        if not isinstance(node, (ast.Attribute, ast.Name)):
            continue
        up = parents.get(node)
        if isinstance(up, ast.Attribute):
            continue  # part of a longer name
        name = _dotted(node)
        if name is None:
            continue
        out.setdefault(name, []).append(
            (isinstance(up, ast.Compare) and all(isinstance(o, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) for o in up.ops))
            or isinstance(up, ast.BoolOp)
            or (isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not))
            or (isinstance(up, ast.IfExp) and up.test is node)
        )
    return out


def _may_match(item: Any, join: ItemCond, literal: dict[str, tuple[Any, ...]]) -> bool:
    """The item can pass the join's tests: it has every field they test, and the literal ones hold (a ref that
    names an attribute the rule pins to literal values is taken at those values).
    """
    for f in join.where:
        value = item.get(f.field)
        for t in f.tests:
            operand: Any = t.operand
            if isinstance(operand, Ref):
                pinned = literal.get(operand.source.strip())
                if pinned is None:
                    if t.op != "exists" and value is None:
                        return False
                    continue
                if not any(S.apply(t.op, S.ABSENT if value is None else value, v) for v in pinned):
                    return False
                continue
            if not S.apply(t.op, S.ABSENT if value is None else value, operand):
                return False
    return True


def _absent_field_checks(out: _Findings) -> None:
    """Every item field a rule reads is on every item it can join, or the rule says what happens without it: a
    test on the field in the join, an equality or truth test of it, or a read of the field whose values the catalog
    says require it (required_when, required_with).
    """
    for planned in out.rb.rules.values():
        rule = planned.rule
        literal: dict[str, tuple[Any, ...]] = {}
        for c in rule.when:
            if isinstance(c, AttrCond):
                for t in c.tests:
                    if t.op == "eq" and not isinstance(t.operand, Ref):
                        literal[c.attribute] = (t.operand,)
                    elif t.op == "in" and isinstance(t.operand, tuple):
                        literal[c.attribute] = t.operand
        exprs = _exprs(rule)
        for join in (c for c in _conditions(rule.when) if isinstance(c, ItemCond)):
            _absent_in_join(out, rule, join, literal, exprs)


def _names_read(value: Any, lets: Mapping[str, Any], seen: set[str]) -> set[str]:
    """The names an expression reads, and those the lets it reads read."""
    found = set(value.names)
    for n in value.names:
        head = n.split(".")[0]
        if head in lets and head not in seen:
            seen.add(head)
            found |= _names_read(lets[head], lets, seen)
    return found


def _absent_in_join(
    out: _Findings, rule: Rule, join: ItemCond, literal: dict[str, tuple[Any, ...]], exprs: list[tuple[Expr, Span]]
) -> None:
    catalog = out.rb.catalogs[join.catalog]
    lets = {x.name: x.value for x in rule.lets}
    exposed = [i for i in catalog.items.values() if _may_match(i, join, literal)]
    tested = {f.field for f in join.where}
    prefix = join.alias + "."
    read = sorted({n[len(prefix) :].split(".")[0] for e, _ in exprs for n in e.names if n.startswith(prefix)})
    for field in read:
        lacking = [i.id for i in exposed if i.get(field) is None]
        if field in ("id", "name") or field in tested or not lacking:
            continue
        declared = catalog.fields.get(field)
        deciding = {k for k, _ in declared.required_when} | set(declared.required_with) if declared else set()
        guards = {prefix + k for k in deciding}
        name = prefix + field
        for e, span in exprs:
            if all(_reads(e, name)):
                continue  # not read, or only compared and tested
            reads = _names_read(e, lets, set())
            if guards & reads or _null_safe(e, name):
                continue
            if any(_null_safe(lets[n], name) for n in {r.split(".")[0] for r in reads} if n in lets):
                continue
            shown = ", ".join(lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
            out.add(
                "error",
                "absent-field",
                rule,
                span,
                f"reads {join.catalog}.{field} ('{e.source[:60]}'), which {len(lacking)} of the items it can join "
                f"lack ({shown}), and says nothing of its absence",
                f"test it in the join ({field}: {{exists: true}}), compare it with null where it is read, or declare "
                "in the catalog which items must give it (required, required_when, required_with)",
            )
            break


def _null_safe(expr: Any, name: str) -> bool:
    """The expression tests ``name`` for equality or truth (so it says what happens when it is missing)."""
    return isinstance(expr, Expr) and any(_reads(expr, name))


def _guidance_checks(out: _Findings) -> None:
    """rules/_guidance.yaml maps each piece of source guidance to rule ids; the ids must exist."""
    for root in out.rb.rule_dirs:
        path = Path(root) / GUIDANCE_FILE
        if not path.is_file():
            continue
        try:
            doc = load(path, f"{Path(root).name}/{GUIDANCE_FILE}")
        except GpusizerError as exc:
            out.found += _from_error(exc, "guidance")
            continue
        errors = check(doc, engine_schema("guidance"), "the guidance map")
        for e in errors:
            out.found += _from_error(e, "guidance")
        if errors:
            continue
        for i, item in enumerate(doc.data["items"]):
            for j, rid in enumerate(item.get("rules", [])):
                if rid not in out.rb.rules:
                    line, col = doc.where(("items", i, "rules", j))
                    out.found.append(
                        Diagnostic(
                            f"guidance item {item['id']} names unknown rule '{rid}'",
                            doc.file,
                            line,
                            col,
                            f"{hint(rid, out.rb.rules)}list ids of existing rules",
                            code="guidance",
                        )
                    )
            if not item.get("rules") and not item.get("note"):
                line, col = doc.where(("items", i))
                out.found.append(
                    Diagnostic(
                        f"guidance item {item['id']} is encoded by no rule and says not why",
                        doc.file,
                        line,
                        col,
                        "list its rules, or add a note saying why it is not encoded",
                        level="warning",
                        code="guidance",
                    )
                )


def lint(
    rule_dirs: Sequence[Path], knowledge_dirs: Sequence[Path], workloads: Sequence[Path] = ()
) -> tuple[list[Diagnostic], Rulebase | None]:
    """Findings for a rulebase (and workload files checked against it)."""
    from .cases import load_cases

    try:
        rb = load_rulebase(rule_dirs, knowledge_dirs)
    except GpusizerError as exc:
        return _from_error(exc), None
    out = _Findings(rb)
    _rulebase_checks(out)
    _inference_checks(out)
    _knowledge_glue(out)
    _long_lines(out)
    _absent_field_checks(out)
    try:
        load_cases(rb)
    except GpusizerError as exc:
        out.found += _from_error(exc, "tests")
    for path in workloads:
        try:
            rb.inputs.load(Path(path), rb.catalogs, display=str(path))
        except GpusizerError as exc:
            out.found += _from_error(exc, "workload")
    _guidance_checks(out)
    out.found.sort(key=lambda f: (f.file or "", f.line or 0, f.col or 0, f.code))
    return out.found, rb


def to_json(findings: Sequence[Diagnostic]) -> str:
    """Findings as the JSON list ``validate --format json`` prints."""
    rows = []
    for f in findings:
        d = asdict(f)
        rows.append({k: d[k] for k in ("level", "code", "file", "line", "col", "rule", "message", "help")})
    return _to_json(rows)
