"""Check one rule against the declared attributes and catalogs, and bind its expressions.

For each alternative of the rule's ``any`` conditions (a *variant*) this finds what the variant
joins and which attributes it needs; it refuses unknown names, tests that cannot apply to an
attribute's type, and conclusions an attribute cannot take; and it compiles ``let`` and ``then``
into getters over a *frame*: a list with one slot for each attribute, item and let value the rule's
expressions read, numbered when the rule is planned (``Frame``), so that reading a name is indexing
a list.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from operator import itemgetter
from typing import Any

from ..errors import hint
from ..lang import expr as X
from ..lang.expand import Expander
from ..lang.ir import (
    LIST_FIELD,
    LIST_PREFIX,
    MEMBERSHIP,
    UNIT_NAME,
    AnyOf,
    AttrCond,
    Attribute,
    Catalog,
    Computed,
    Conclusion,
    Condition,
    FieldCond,
    Formula,
    ItemCond,
    Let,
    Not,
    Ref,
    Rule,
    Simple,
    Span,
    Test,
)

Getter = X.Getter
Output = Getter | tuple[tuple[str, Getter], ...]
MAX_ALTERNATIVES = 16


@dataclass(frozen=True)
class Variant:
    """One alternative of a rule: its conditions with ``any`` resolved, what it joins and needs."""

    index: int
    conditions: tuple[Simple, ...]
    items: tuple[tuple[str, str], ...]  # (alias, catalog) of each positive join, in order
    required: tuple[str, ...]  # attributes that must have a value (tested, or read by an expression)


@dataclass(frozen=True)
class FormulaCall:
    """A call of a named formula written in a rule's ``let`` or ``then``, bound for ``explain``:
    its arguments and its value, computed in a firing's environment.
    """

    formula: Formula
    text: str  # the call as written
    args: tuple[Getter, ...]
    value: Getter


@dataclass(frozen=True)
class Frame:
    """Where a rule's bound expressions find their inputs: slot numbers of a list, by name."""

    size: int
    attrs: tuple[tuple[str, int], ...]  # attribute -> slot (its value)
    items: tuple[tuple[str, int], ...]  # alias -> slot (the item)
    lets: tuple[tuple[str, int], ...]  # let -> slot (its value), in dependency order

    @functools.cached_property
    def let_slots(self) -> dict[str, int]:
        """Let -> slot, as a mapping (in dependency order); made once, shared by every firing."""
        return dict(self.lets)

    def fill(self, attrs: Mapping[str, Any], items: Mapping[str, Any], lets: Mapping[str, Any]) -> list[Any]:
        """A frame from values by name (the lets that are given; the others stay None)."""
        frame: list[Any] = [None] * self.size
        for name, i in self.attrs:
            frame[i] = attrs[name]
        for alias, i in self.items:
            frame[i] = items[alias]
        for name, i in self.lets:
            if name in lets:
                frame[i] = lets[name]
        return frame


@dataclass(frozen=True)
class LetGroup:
    """Lets that read the same items (none: the same in every firing of a run)."""

    lets: tuple[tuple[int, Getter], ...]  # each let's frame slot and getter, in PlannedRule.lets' order
    item_slots: tuple[int, ...]  # the frame slots of the items they read
    shared: bool  # they read fewer items than every firing binds: computed once for those items
    # the slots [start, stop) the lets take: the planner numbers a group's lets as neighbours, so that a
    # firing copies the values computed for its items in one step
    span: tuple[int, int]
    # the attributes they read, themselves or through the lets they read: with the items, all their values
    # depend on (a run's values are the same for every firing; a runner keeps them for its later runs)
    attrs: tuple[str, ...] = ()

    @functools.cached_property
    def mask(self) -> int:
        """The bits ``1 << slot`` of the items it reads: a firing whose changed items share none has its values."""
        return sum(1 << slot for slot in self.item_slots)

    def key(self, frame: list[Any]) -> Any:
        """What tells the firings that share the group's values apart: the identities of the items it reads."""
        slots = self.item_slots
        if len(slots) == 1:
            return id(frame[slots[0]])
        return tuple([id(frame[i]) for i in slots])


@dataclass(frozen=True)
class PlannedRule:
    """A rule ready to run: its IR, its variants, its bound expressions and its place in the order."""

    rule: Rule
    variants: tuple[Variant, ...]
    reads: frozenset[str]  # every attribute the rule depends on (for stratification)
    items: Mapping[str, str]  # alias -> catalog, over all variants
    lets: tuple[tuple[str, Getter], ...]  # in dependency order
    outputs: tuple[tuple[str, Output], ...]
    stratum: int = 0
    # the conditions with formula calls and let names expanded (what is matched; rule.when is as written)
    when: tuple[Condition, ...] = ()
    calls: tuple[FormulaCall, ...] = ()  # formula calls of the lets and conclusions, for explain
    frame: Frame = Frame(0, (), (), ())  # the slots lets and outputs read (lets are in order)
    # the lets in groups by the items they read (directly or through other lets), in an order where
    # each group comes after those it reads: a group that reads fewer than all the rule's items has
    # the same values in every firing that binds those items, so a run computes it once for them
    let_groups: tuple[LetGroup, ...] = ()

    @property
    def id(self) -> str:
        """The rule's id."""
        return self.rule.id

    @property
    def writes(self) -> tuple[str, ...]:
        """The attributes the rule concludes."""
        return self.rule.writes

    def formula_calls(
        self, attrs: Mapping[str, Any], items: Mapping[str, Any], lets: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """The formula calls of a firing (its attribute values, items and lets): each formula, the
        call as written, its arguments and its value; a call that cannot be computed on its own (in
        a branch the firing did not take) is left out.
        """
        env = self.frame.fill(attrs, items, lets)
        out = []
        budget = X.Budget()
        for c in self.calls:
            try:
                with budget:
                    args = {p.name: g(env) for p, g in zip(c.formula.params, c.args, strict=True)}
                    value = c.value(env)
            except (X.ExprError, ArithmeticError, TypeError, ValueError, KeyError):
                continue
            f = c.formula
            out.append(
                {
                    "formula": f.name,
                    "call": c.text,
                    "args": args,
                    "value": value,
                    "unit": f.unit,
                    "description": f.description,
                    "sources": [s.as_dict() for s in f.sources],
                    "file": f.span.file,
                    "line": f.span.line,
                }
            )
        return out


class _Fault(Exception):
    def __init__(self, span: Span, message: str, help: str | None = None) -> None:
        super().__init__(message)
        self.span, self.message, self.help = span, message, help


def variants_of(when: tuple[Any, ...]) -> list[tuple[Simple, ...]]:
    """Every combination of one branch per ``any``, with the plain conditions around them."""
    choices: list[list[tuple[Simple, ...]]] = []
    for cond in when:
        if isinstance(cond, AnyOf):
            choices.append([tuple(b) for b in cond.branches])
        else:
            choices.append([(cond,)])
    return [tuple(c for part in combo for c in part) for combo in itertools.product(*choices)]


class _Resolver:
    """Resolves the names of one rule (one variant at a time) and binds its expressions."""

    def __init__(
        self,
        rule: Rule,
        attributes: Mapping[str, Attribute],
        catalogs: Mapping[str, Catalog],
        first_words: frozenset[str] | None = None,
        formulas: Mapping[str, Formula] | None = None,
    ) -> None:
        self.rule = rule
        self.attributes = attributes
        self.catalogs = catalogs
        self.first_words = first_words if first_words is not None else first_words_of(attributes)
        self.formulas = formulas or {}
        self.lists: frozenset[str] = frozenset()  # aliases of the lists the rule ranges over (each)
        self._expander = Expander(self.formulas)  # the conditions' (expanded_when)
        self._let_needs: dict[str, frozenset[str]] = {}
        self.slots: dict[tuple[str, str], int] = {}  # (attr|item|let, name) -> slot of the frame

    def slot(self, kind: str, name: str) -> int:
        """The frame slot of an attribute, item or let (numbered in the order they are first read)."""
        key = (kind, name)
        i = self.slots.get(key)
        if i is None:
            i = self.slots[key] = len(self.slots)
        return i

    def frame(self, lets: Sequence[str]) -> Frame:
        """The frame layout of what the rule's getters were bound to read (``lets`` in dependency order)."""
        by = {k: tuple((name, i) for (kind, name), i in self.slots.items() if kind == k) for k in ("attr", "item")}
        return Frame(len(self.slots), by["attr"], by["item"], tuple((n, self.slots["let", n]) for n in lets))

    def attribute(self, name: str, span: Span) -> Attribute:
        attr = self.attributes.get(name)
        if attr is None:
            raise _Fault(
                span,
                f"unknown attribute '{name}'",
                f"{hint(name, self.attributes)}declare it in rules/_attributes.yaml or use a workload input",
            )
        return attr

    def name(
        self, dotted: str, span: Span, aliases: Mapping[str, str], lets: Mapping[str, Any], reads: set[str]
    ) -> tuple[str, str, tuple[str, ...]]:
        """('item', alias, field) | ('let', name, fields) | ('attr', name, fields)."""
        parts = dotted.split(".")
        if parts[0] in aliases:
            catalog = self.catalogs[aliases[parts[0]]]
            fieldname = ".".join(parts[1:])
            if not fieldname and catalog.name.startswith(LIST_PREFIX):
                return ("item", parts[0], (LIST_FIELD,))  # a list's member, read by its alias alone
            if not fieldname:
                raise _Fault(span, f"'{dotted}' names a whole item; read one of its fields", f"e.g. {parts[0]}.id")
            if not catalog.has_field(fieldname):
                guess = hint(fieldname, ["id", "name", *catalog.fields])
                raise _Fault(
                    span,
                    f"catalog '{catalog.name}' has no field '{fieldname}'",
                    guess or f"declare the field in the '{catalog.name}' catalog",
                )
            return ("item", parts[0], (fieldname,))
        if parts[0] in lets:
            return ("let", parts[0], tuple(parts[1:]))
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            attr = self.attributes.get(name)
            if attr is not None:
                rest = tuple(parts[cut:])
                if rest and attr.type not in ("record", "scalar"):
                    raise _Fault(span, f"'{name}' is a {attr.type}, it has no field '{'.'.join(rest)}'")
                if rest and attr.fields is not None and rest[0] not in attr.fields:
                    raise _Fault(
                        span,
                        f"record '{name}' has no field '{rest[0]}'",
                        f"{hint(rest[0], attr.fields)}its fields: {', '.join(attr.fields)}",
                    )
                reads.add(name)
                return ("attr", name, rest)
        raise _Fault(
            span,
            f"unknown name '{dotted}'",
            f"{hint(dotted, [*self.attributes, *aliases, *lets])}"
            "names are attributes, item aliases (from 'as:') or 'let' names",
        )

    # -- conditions ------------------------------------------------------------
    def variant(self, index: int, conditions: tuple[Simple, ...], expr_reads: set[str], reads: set[str]) -> Variant:
        aliases: dict[str, str] = {}
        required: set[str] = set(expr_reads)
        absent: dict[str, Span] = {}
        for cond in conditions:
            negated = isinstance(cond, Not)
            inner = cond.inner if isinstance(cond, Not) else cond
            if isinstance(inner, ItemCond):
                self.join(inner, aliases, reads, required, negated)
            else:
                self.attr_cond(inner, aliases, reads, required, absent, negated)
        for name, span in absent.items():
            if name in required:
                raise _Fault(span, f"'{name}' is tested with exists: false and cannot also be read")
        items = tuple((a, c) for a, c in aliases.items())
        return Variant(index, conditions, items, tuple(sorted(required)))

    def join(self, cond: ItemCond, aliases: dict[str, str], reads: set[str], required: set[str], negated: bool) -> None:
        if cond.catalog not in self.catalogs:
            raise _Fault(
                cond.span,
                f"unknown catalog '{cond.catalog}'",
                f"{hint(cond.catalog, self.catalogs)}catalogs: {', '.join(sorted(self.catalogs))}",
            )
        if cond.alias in aliases or cond.alias in self.attributes or cond.alias in self.first_words:
            raise _Fault(
                cond.span,
                f"alias '{cond.alias}' is already used or names an attribute",
                "pick a short alias that is not an attribute's first word, e.g. g",
            )
        catalog = self.catalogs[cond.catalog]
        visible = dict(aliases, **{cond.alias: cond.catalog})
        for f in cond.where:
            if not catalog.has_field(f.field):
                raise _Fault(
                    f.span,
                    f"catalog '{cond.catalog}' has no field '{f.field}'",
                    f"{hint(f.field, ['id', 'name', *catalog.fields])}"
                    "the fields are declared at the top of the catalog file",
                )
            for t in f.tests:
                if t.op in MEMBERSHIP or t.op == "empty":
                    raise _Fault(
                        t.span,
                        f"'{t.op}' tests a list attribute, not a catalog field",
                        "use eq, ne, gt, gte, lt, lte, in, not_in or exists",
                    )
                self.operand(t, visible, reads, required)
        if not negated:
            aliases[cond.alias] = cond.catalog

    def attr_cond(
        self,
        cond: AttrCond,
        aliases: dict[str, str],
        reads: set[str],
        required: set[str],
        absent: dict[str, Span],
        negated: bool,
    ) -> None:
        attr = self.attribute(cond.attribute, cond.span)
        reads.add(attr.name)
        ops = {t.op for t in cond.tests}
        for t in cond.tests:
            if t.op in MEMBERSHIP and not attr.is_list:
                raise _Fault(t.span, f"contains needs a list attribute; '{attr.name}' is a {attr.type}")
            if t.op == "empty" and not attr.is_list:
                raise _Fault(
                    t.span,
                    f"'empty' tests a list attribute; '{attr.name}' is not a list ({attr.type})",
                    "use exists, or a comparison",
                )
            if attr.type in ("list", "record") and t.op not in MEMBERSHIP | {"exists", "empty"}:
                raise _Fault(
                    t.span,
                    f"'{t.op}' cannot test a {attr.type} attribute",
                    "use contains / not_contains / empty / exists"
                    if attr.is_list
                    else "test one of its fields in a rule that concludes it, or use exists",
                )
            self.operand(t, aliases, reads, required)
        exists_false = any(t.op == "exists" and t.operand is False for t in cond.tests)
        if exists_false:
            if negated:
                raise _Fault(cond.span, "write 'exists: true' instead of not + exists: false")
            if len(cond.tests) > 1:
                raise _Fault(cond.span, "exists: false cannot be combined with other tests")
            absent[attr.name] = cond.span
            return
        if negated or ops <= {"not_contains"}:
            return
        required.add(attr.name)

    def operand(self, test: Test, aliases: Mapping[str, str], reads: set[str], required: set[str]) -> None:
        if isinstance(test.operand, Ref):
            if test.operand.expr.reads_catalog:
                raise _Fault(
                    test.span,
                    "a condition's operand cannot call a catalog function (min_in, max_in)",
                    "use it in the rule's 'let' or 'then', or join the catalog with 'item:'",
                )
            for dotted in sorted(test.operand.expr.names):
                kind, name, _ = self.name(dotted, test.span, aliases, {}, reads)
                if kind == "attr":
                    required.add(name)

    # -- formulas and lets in conditions ---------------------------------------------
    def expanded_when(self) -> tuple[Condition, ...]:
        """The rule's conditions with formula calls and let names expanded in their refs; a let read
        before the items it reads are joined is refused here, at the test that reads it.
        """
        rule = self.rule
        joined: dict[str, str] = {}
        for c in _simple_conditions(rule.when):
            inner = c.inner if isinstance(c, Not) else c
            if isinstance(inner, ItemCond):
                joined.setdefault(inner.alias, inner.catalog)
        self.lists = frozenset(a for a, c in joined.items() if c.startswith(LIST_PREFIX))
        lets = {x.name: x for x in rule.lets}
        # one expander for all the conditions (it expands each let once), and the names each let reads once
        # expanded (filled in as _test asks)
        exprs = {n: x.value for n, x in lets.items() if isinstance(x.value, X.Expr)}
        self._expander = Expander(self.formulas, joined, exprs, self.lists)
        self._let_needs = {}
        out: list[Condition] = []
        bound: dict[str, str] = {}
        for cond in rule.when:
            if isinstance(cond, AnyOf):
                branches = []
                common: set[str] | None = None
                for branch in cond.branches:
                    mine = dict(bound)
                    branches.append(tuple(self._simple(c, mine, lets, joined) for c in branch))
                    common = set(mine) if common is None else common & set(mine)
                out.append(AnyOf(tuple(branches), cond.span))
                bound.update({a: joined[a] for a in sorted(common or ())})
            else:
                out.append(self._simple(cond, bound, lets, joined))
        return tuple(out)

    def _simple(
        self, cond: Simple, bound: dict[str, str], lets: Mapping[str, Let], joined: Mapping[str, str]
    ) -> Simple:
        """One condition, expanded; ``bound`` gains the alias of a positive join."""
        if isinstance(cond, Not):
            inner = cond.inner
            visible = dict(bound, **{inner.alias: inner.catalog}) if isinstance(inner, ItemCond) else bound
            new_inner = self._tests_of(inner, visible, lets, joined)
            return cond if new_inner is inner else Not(new_inner, cond.span)
        if isinstance(cond, ItemCond):
            visible = dict(bound, **{cond.alias: cond.catalog})
            bound[cond.alias] = cond.catalog
            return self._tests_of(cond, visible, lets, joined)
        return self._tests_of(cond, bound, lets, joined)

    def _tests_of(
        self, cond: AttrCond | ItemCond, visible: Mapping[str, str], lets: Mapping[str, Let], joined: Mapping[str, str]
    ) -> AttrCond | ItemCond:
        if isinstance(cond, AttrCond):
            tests = tuple(self._test(t, visible, lets, joined) for t in cond.tests)
            return cond if tests == cond.tests else AttrCond(cond.attribute, tests, cond.span)
        where = tuple(
            FieldCond(f.field, tuple(self._test(t, visible, lets, joined) for t in f.tests), f.span) for f in cond.where
        )
        return cond if where == cond.where else ItemCond(cond.catalog, cond.alias, where, cond.span)

    def _test(self, t: Test, visible: Mapping[str, str], lets: Mapping[str, Let], joined: Mapping[str, str]) -> Test:
        if not isinstance(t.operand, Ref):
            return t
        expr = t.operand.expr
        read = sorted(expr.heads & set(lets))
        if not expr.calls and not read and not (expr.names & self.lists):
            return t
        for name in read:
            if not isinstance(lets[name].value, X.Expr):
                raise _Fault(
                    t.span,
                    f"a condition reads let '{name}', which is a text template",
                    "a condition compares values: compute the value in a let of its own (without {...})",
                )
        expander, needed = self._expander, self._let_needs
        try:
            expanded = expander.expr(expr)
            for name in read:  # which items each let read here needs
                needs = needed.get(name)
                if needs is None:
                    needs = needed[name] = expander.tree(name, expander.lets[name].tree.body).names
                late = sorted(n for n in needs if n.split(".")[0] in joined and n.split(".")[0] not in visible)
                if late:
                    alias = late[0].split(".")[0]
                    raise _Fault(
                        t.span,
                        f"let '{name}' (line {lets[name].span.line}) is read here before '{alias}' is joined: "
                        f"it reads {late[0]}",
                        f"move this condition after the join 'as: {alias}', or read here only a let that needs "
                        "what is joined before it",
                    )
        except X.ExprError as exc:
            raise _Fault(t.span, f"in ref: {exc.message}", exc.help) from None
        return Test(t.op, Ref(expanded), t.span)

    def expand(self, value: Computed, span: Span, aliases: Mapping[str, str]) -> Computed:
        """A let's or conclusion's value with its formula calls expanded."""
        if not self.formulas:
            return value
        expander = Expander(self.formulas, aliases)
        try:
            if isinstance(value, X.Template):
                parts = tuple(expander.expr(p) if isinstance(p, X.Expr) else p for p in value.parts)
                return value if parts == value.parts else X.Template(value.source, parts, value.units)
            return expander.expr(value)
        except X.ExprError as exc:
            raise _Fault(span, exc.message, exc.help) from None

    def calls(
        self, values: list[tuple[Computed, Span]], aliases: Mapping[str, str], lets: Mapping[str, Any]
    ) -> tuple[FormulaCall, ...]:
        """Every formula call written in these values, bound for explain."""
        out: list[FormulaCall] = []
        expander = Expander(self.formulas, aliases)
        for value, span in values:
            parts = value.parts if isinstance(value, X.Template) else (value,)
            for part in parts:
                if not isinstance(part, X.Expr) or not part.calls:
                    continue
                for node in ast.walk(part.tree.body):
                    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                        continue
                    f = self.formulas.get(node.func.id)
                    if f is None:
                        continue
                    text = ast.get_source_segment(part.source, node) or ast.unparse(node)
                    args = []
                    for p, arg in zip(f.params, node.args, strict=True):
                        if p.item is not None and isinstance(arg, ast.Name):
                            arg = ast.Attribute(value=arg, attr="id", ctx=ast.Load())
                        arg_text = ast.get_source_segment(part.source, arg) or ast.unparse(arg)
                        args.append(self.bind(expander.tree(arg_text, arg), span, aliases, lets, set()))
                    value_getter = self.bind(expander.tree(text, node), span, aliases, lets, set())
                    out.append(FormulaCall(f, text, tuple(args), value_getter))
        return tuple(out)

    # -- let and then ------------------------------------------------------------
    def bind(
        self,
        value: Computed,
        span: Span,
        aliases: Mapping[str, str],
        lets: Mapping[str, Any],
        reads: set[str],
        written: Computed | None = None,
    ) -> Getter:
        """A getter for a value (expanded); ``written`` is the value as written, whose ``{x:unit}``
        placeholders name the units to show.
        """
        kinds = {dotted: self.name(dotted, span, aliases, lets, reads) for dotted in sorted(value.names)}

        def resolve(dotted: str) -> Getter:
            kind, name, rest = kinds[dotted]
            if kind == "item":
                return _item_getter(self.slot("item", name), rest[0])
            return _walk(itemgetter(self.slot(kind, name)), rest, dotted)

        units: dict[int, Getter] = {}
        if isinstance(value, X.Template) and value.units:
            source = written if isinstance(written, X.Template) else value
            for k, unit in self.unit_texts(source, span, aliases, lets).items():
                units[k] = self.unit_getter(unit, span, aliases, reads)
        try:
            if isinstance(value, X.Template):
                return value.bind(resolve, units, self.table, budgeted=False)
            return value.bind(resolve, self.table, budgeted=False)  # the session runs a firing in one X.Budget
        except X.ExprError as exc:  # an unknown catalog or field in a catalog function
            raise _Fault(span, exc.message, exc.help) from None

    def unit_texts(
        self, t: X.Template, span: Span, aliases: Mapping[str, str], lets: Mapping[str, Any]
    ) -> dict[int, str]:
        """The declared unit of each ``{x:unit}`` placeholder: an attribute's, an item field's or a formula's."""
        out: dict[int, str] = {}
        for k in sorted(t.units):
            part = t.parts[k]
            assert isinstance(part, X.Expr)
            node = part.tree.body
            name = X.dotted(node)
            unit: str | None = None
            what = f"'{part.source}'"
            if name is not None and name.split(".")[0] in lets:
                what = f"let '{name.split('.')[0]}'"
            elif name is not None and name.split(".")[0] in aliases:
                head, _, rest = name.partition(".")
                declared = self.catalogs[aliases[head]].fields.get(rest)
                unit = declared.unit if declared else None
                what = f"field '{rest}' of catalog '{aliases[head]}'"
            elif name is not None:
                attr = self.attributes.get(name)
                unit = attr.unit if attr else None
                what = f"attribute '{name}'"
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.formulas:
                unit = self.formulas[node.func.id].unit
                what = f"formula '{node.func.id}'"
            if not unit:
                raise _Fault(
                    span,
                    f"{{{part.source}:unit}}: {what} has no declared unit",
                    "':unit' shows the declared unit of an attribute, an item's field or a formula call; "
                    "write the unit in the text otherwise",
                )
            out[k] = unit
        return out

    def unit_getter(self, unit: str, span: Span, aliases: Mapping[str, str], reads: set[str]) -> Getter:
        """The unit's text; an attribute named in braces (``{price.currency}``) is read for it."""
        names = UNIT_NAME.findall(unit)
        if not names:
            return lambda env: unit
        for n in names:
            self.name(n, span, aliases, {}, reads)
        getters = [itemgetter(self.slot("attr", n)) for n in names]

        def get(env: dict[str, Any]) -> str:
            shown = [g(env) for g in getters]
            if not all(isinstance(v, str) for v in shown):
                return ""
            parts = iter(shown)
            return UNIT_NAME.sub(lambda m: str(next(parts)), unit)

        return get

    def table(self, catalog: str, field: str, key: str, pick: Callable[[list[Any]], Any]) -> dict[Any, Any]:
        """A catalog function's table (expr.CatalogTable), its catalog and fields checked."""
        found = self.catalogs.get(catalog)
        if found is None:
            raise X.ExprError(
                f"unknown catalog '{catalog}'",
                help=f"{hint(catalog, self.catalogs)}the catalogs are: {', '.join(sorted(self.catalogs))}",
            )
        for f in (field, key):
            if not found.has_field(f):
                raise X.ExprError(
                    f"catalog '{catalog}' has no field '{f}'",
                    help=f"{hint(f, ['id', 'name', *found.fields])}its fields are declared in {found.file}",
                )
        rows = [{"id": i.id, "name": i.name, **i.fields} for i in found.items.values()]
        return X.catalog_table(rows, field, key, pick)

    def ordered_lets(self) -> list[Let]:
        """``let`` values in an order where each comes after those it reads (file order otherwise)."""
        lets = {x.name: x for x in self.rule.lets}
        deps = {n: x.value.heads & set(lets) for n, x in lets.items()}
        try:
            order = list(TopologicalSorter({n: deps[n] for n in lets}).static_order())
        except CycleError as exc:
            cycle = exc.args[1]
            raise _Fault(
                lets[cycle[0]].span,
                f"let values read each other in a cycle: {' -> '.join(cycle)}",
                "compute one from the other, not both ways",
            ) from None
        position = {n: i for i, n in enumerate(lets)}
        # a stable topological order: repeatedly take the earliest-written value whose inputs are done
        done: list[str] = []
        pending = sorted(order, key=position.__getitem__)
        while pending:
            pick = next(n for n in pending if deps[n] <= set(done))
            done.append(pick)
            pending.remove(pick)
        return [lets[n] for n in done]

    def conclusion(
        self,
        c: Conclusion,
        aliases: Mapping[str, str],
        lets: Mapping[str, Any],
        reads: set[str],
        written: Conclusion | None = None,
    ) -> Output:
        attr = self.attribute(c.attribute, c.span)
        if attr.given:
            what = "workload input" if attr.input else "named constant"
            raise _Fault(
                c.span, f"'{c.attribute}' is a {what}; rules cannot set it", "conclude a new attribute instead"
            )
        if c.fields is None:
            if attr.type == "record":
                raise _Fault(
                    c.span,
                    f"'{c.attribute}' is a record; give its fields",
                    f"e.g. {c.attribute}: {{{', '.join(f'{k}: ...' for k in (attr.fields or attr.key))}}}",
                )
            assert c.value is not None
            return self.bind(c.value, c.span, aliases, lets, reads, written.value if written else None)
        if attr.type != "record":
            raise _Fault(c.span, f"'{c.attribute}' is a {attr.type}, not a record", "give one expression")
        given = [k for k, _ in c.fields]
        if attr.fields is not None:
            missing = [k for k in attr.fields if k not in given]
            extra = [k for k in given if k not in attr.fields]
            if missing:
                raise _Fault(
                    c.span,
                    f"the record for '{c.attribute}' lacks {', '.join(map(repr, missing))}",
                    f"every contribution gives all its declared fields: {', '.join(attr.fields)}",
                )
            if extra:
                raise _Fault(
                    c.span,
                    f"'{c.attribute}' has no field {extra[0]!r}",
                    f"{hint(extra[0], attr.fields)}its fields are declared in rules/_attributes.yaml: "
                    f"{', '.join(attr.fields)}",
                )
        for need in (*attr.key, attr.first_by, attr.within[0] if attr.within else None):
            if need and need not in given:
                raise _Fault(
                    c.span,
                    f"record for '{c.attribute}' lacks its field '{need}'",
                    f"add '{need}: ...' (the combine policy compares it)",
                )
        shown = dict(written.fields or ()) if written else {}
        return tuple((k, self.bind(v, c.span, aliases, lets, reads, shown.get(k))) for k, v in c.fields)


def _item_getter(slot: int, field: str) -> Getter:
    """A field of the item in a frame's slot (id and name are the item's own)."""
    if field == "id":
        return lambda frame: frame[slot].id
    if field == "name":
        return lambda frame: frame[slot].name
    return lambda frame: frame[slot].fields.get(field)


def _walk(base: Callable[[dict[str, Any]], Any], rest: tuple[str, ...], dotted: str) -> Getter:
    if not rest:
        return base

    def get(env: dict[str, Any]) -> Any:
        v = base(env)
        for part in rest:
            if not isinstance(v, dict) or part not in v:
                raise X.ExprError(f"'{dotted}': no field '{part}'")
            v = v[part]
        return v

    return get


def first_words_of(attributes: Mapping[str, Attribute]) -> frozenset[str]:
    """The first words of the attributes' names (an item alias may not be one); plan() takes it once."""
    return frozenset(a.split(".")[0] for a in attributes)


def _both_lists(a: str | None, b: str) -> bool:
    return a is not None and a.startswith(LIST_PREFIX) and b.startswith(LIST_PREFIX)


def _simple_conditions(when: tuple[Condition, ...]) -> list[Simple]:
    """Every condition of a ``when``, those inside the branches of an ``any`` included."""
    out: list[Simple] = []
    for c in when:
        if isinstance(c, AnyOf):
            out.extend(x for branch in c.branches for x in branch)
        else:
            out.append(c)
    return out


def plan_rule(
    rule: Rule,
    attributes: Mapping[str, Attribute],
    catalogs: Mapping[str, Catalog],
    first_words: frozenset[str] | None = None,
    formulas: Mapping[str, Formula] | None = None,
) -> PlannedRule:
    """Resolve and bind one rule; raises an InputError at the faulty line."""
    r = _Resolver(rule, attributes, catalogs, first_words, formulas)
    try:
        return _plan(r, rule)
    except _Fault as f:
        raise f.span.error(f.message, f.help, rule=rule.id) from None


def _plan(r: _Resolver, rule: Rule) -> PlannedRule:
    when = r.expanded_when()
    combos = variants_of(when)
    if len(combos) > MAX_ALTERNATIVES:
        raise _Fault(
            rule.span,
            f"the 'any' conditions combine into {len(combos)} alternatives; at most {MAX_ALTERNATIVES}",
            "split the rule in two",
        )
    # conditions first: they name the catalogs and aliases the expressions may read
    reads: set[str] = set()
    for conds in combos:
        r.variant(0, conds, set(), reads)
    # aliases every variant joins positively, for the expressions
    alias_sets = [{c.alias: c.catalog for c in conds if isinstance(c, ItemCond)} for conds in combos]
    common = dict(alias_sets[0]) if alias_sets else {}
    for s in alias_sets[1:]:  # a list alias may range over another list in each alternative
        common = {a: c for a, c in common.items() if s.get(a) == c or _both_lists(s.get(a), c)}
    lets_order = r.ordered_lets()
    let_names: dict[str, bool] = {}
    for x in lets_order:
        if x.name in common or x.name in r.attributes:
            raise _Fault(x.span, f"let name '{x.name}' hides an attribute or alias", "pick another name")
        let_names[x.name] = True
    expr_reads: set[str] = set()
    expanded = [r.expand(x.value, x.span, common) for x in lets_order]
    let_reads: list[set[str]] = [set() for _ in lets_order]  # the attributes each let reads itself
    # every let has a slot, read or not (explain shows them all); the lets of one group (_let_groups) take
    # neighbouring slots, so that a firing copies a group's values computed for its items in one step
    members = _let_members(lets_order, expanded, common)
    for group in members.values():
        for i in group:
            r.slot("let", lets_order[i].name)
    lets = tuple(
        (x.name, r.bind(value, x.span, common, let_names, mine, x.value))
        for x, value, mine in zip(lets_order, expanded, let_reads, strict=True)
    )
    for mine in let_reads:
        expr_reads |= mine
    outputs = tuple(
        (c.attribute, r.conclusion(_expanded_conclusion(r, c, common), common, let_names, expr_reads, c))
        for c in rule.then
    )
    calls: tuple[FormulaCall, ...] = ()
    if r.formulas:
        written = [(x.value, x.span) for x in lets_order] + [(v, c.span) for c in rule.then for v in c.computed()]
        calls = r.calls(written, common, let_names)
    reads |= expr_reads
    variants = tuple(r.variant(i, conds, expr_reads, reads) for i, conds in enumerate(combos))
    items = {a: c for v in variants for a, c in v.items}
    return PlannedRule(
        rule=rule,
        variants=variants,
        reads=frozenset(reads),
        items=items,
        lets=lets,
        outputs=outputs,
        when=when,
        calls=calls,
        frame=r.frame([x.name for x in lets_order]),
        let_groups=_let_groups(r, lets, members, frozenset(common), _let_attrs(lets_order, expanded, let_reads)),
    )


def _let_attrs(lets: Sequence[Let], values: Sequence[Computed], own: Sequence[set[str]]) -> list[frozenset[str]]:
    """The attributes each let (in dependency order) reads, itself or through the lets it reads."""
    reads: dict[str, frozenset[str]] = {}
    for x, value, mine in zip(lets, values, own, strict=True):
        found = set(mine)
        for h in value.heads & reads.keys():
            found |= reads[h]
        reads[x.name] = frozenset(found)
    return [reads[x.name] for x in lets]


def _let_members(
    lets: Sequence[Let], values: Sequence[Computed], aliases: Mapping[str, str]
) -> dict[frozenset[str], list[int]]:
    """The lets (in dependency order, with their expanded ``values``) grouped by the items each reads,
    itself or through the lets it reads: items -> the lets' indices, in order. A group reading a
    subset of another's items comes first, so the groups run in order see every let they read
    already computed.
    """
    reads: dict[str, frozenset[str]] = {}
    for x, value in zip(lets, values, strict=True):
        heads = value.heads
        found = set(heads & set(aliases))
        for h in heads & set(reads):
            found |= reads[h]
        reads[x.name] = frozenset(found)
    groups: dict[frozenset[str], list[int]] = {}
    for i, x in enumerate(lets):
        groups.setdefault(reads[x.name], []).append(i)
    return dict(sorted(groups.items(), key=lambda kv: (len(kv[0]), kv[1][0])))


def _let_groups(
    r: _Resolver,
    lets: tuple[tuple[str, Getter], ...],
    members: Mapping[frozenset[str], list[int]],
    every: frozenset[str],
    attrs: Sequence[frozenset[str]],
) -> tuple[LetGroup, ...]:
    """The groups of ``_let_members``, bound: each let's slot and getter, the slots of the items read, the
    attributes read (``attrs``: each let's, from ``_let_attrs``).
    """
    out = []
    for read, group in members.items():
        slots = [r.slot("let", lets[i][0]) for i in group]
        span = (slots[0], slots[-1] + 1)
        assert slots == list(range(*span)), "_plan numbers a group's lets as neighbours"
        out.append(
            LetGroup(
                tuple((slot, lets[i][1]) for slot, i in zip(slots, group, strict=True)),
                tuple(sorted(r.slot("item", a) for a in read)),
                read != every,
                span,
                tuple(sorted(frozenset().union(*(attrs[i] for i in group)))),
            )
        )
    return tuple(out)


def _expanded_conclusion(r: _Resolver, c: Conclusion, aliases: Mapping[str, str]) -> Conclusion:
    if not r.formulas:
        return c
    if c.fields is not None:
        fields = tuple((k, r.expand(v, c.span, aliases)) for k, v in c.fields)
        return Conclusion(c.attribute, None, fields, c.span)
    assert c.value is not None
    return Conclusion(c.attribute, r.expand(c.value, c.span, aliases), None, c.span)
