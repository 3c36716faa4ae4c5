"""Check one rule against the declared attributes and catalogs, and bind its expressions.

For each alternative of the rule's ``any`` conditions (a *variant*) this finds what the variant
joins and which attributes it needs; it refuses unknown names, tests that cannot apply to an
attribute's type, and conclusions an attribute cannot take; and it compiles ``let`` and ``then``
into getters over an environment ``{"attrs": ..., "items": ..., "lets": ...}``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from typing import Any

from ..errors import hint
from ..load import expr as X
from ..load.ir import (
    MEMBERSHIP,
    AnyOf,
    AttrCond,
    Attribute,
    Catalog,
    Computed,
    Conclusion,
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
class PlannedRule:
    """A rule ready to run: its IR, its variants, its bound expressions and its place in the order."""

    rule: Rule
    variants: tuple[Variant, ...]
    reads: frozenset[str]  # every attribute the rule depends on (for stratification)
    items: Mapping[str, str]  # alias -> catalog, over all variants
    lets: tuple[tuple[str, Getter], ...]  # in dependency order
    outputs: tuple[tuple[str, Output], ...]
    stratum: int = 0

    @property
    def id(self) -> str:
        """The rule's id."""
        return self.rule.id

    @property
    def writes(self) -> tuple[str, ...]:
        """The attributes the rule concludes."""
        return self.rule.writes


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
    ) -> None:
        self.rule = rule
        self.attributes = attributes
        self.catalogs = catalogs
        self.first_words = first_words if first_words is not None else first_words_of(attributes)

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

    # -- let and then ------------------------------------------------------------
    def bind(
        self, value: Computed, span: Span, aliases: Mapping[str, str], lets: Mapping[str, Any], reads: set[str]
    ) -> Getter:
        kinds = {dotted: self.name(dotted, span, aliases, lets, reads) for dotted in sorted(value.names)}

        def resolve(dotted: str) -> Getter:
            kind, name, rest = kinds[dotted]
            if kind == "item":
                return _item_getter(name, rest[0])
            return _walk(_slot("lets" if kind == "let" else "attrs", name), rest, dotted)

        try:
            return value.bind(resolve, self.table)
        except X.ExprError as exc:  # an unknown catalog or field in a catalog function
            raise _Fault(span, exc.message, exc.help) from None

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
        deps = {n: {d.split(".")[0] for d in x.value.names} & set(lets) for n, x in lets.items()}
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

    def conclusion(self, c: Conclusion, aliases: Mapping[str, str], lets: Mapping[str, Any], reads: set[str]) -> Output:
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
            return self.bind(c.value, c.span, aliases, lets, reads)
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
        return tuple((k, self.bind(v, c.span, aliases, lets, reads)) for k, v in c.fields)


def _slot(table: str, name: str) -> Getter:
    """A getter for one entry of the environment's attrs or lets."""
    return lambda env: env[table][name]


def _item_getter(alias: str, field: str) -> Getter:
    return lambda env: env["items"][alias].get(field)


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


def plan_rule(
    rule: Rule,
    attributes: Mapping[str, Attribute],
    catalogs: Mapping[str, Catalog],
    first_words: frozenset[str] | None = None,
) -> PlannedRule:
    """Resolve and bind one rule; raises an InputError at the faulty line."""
    r = _Resolver(rule, attributes, catalogs, first_words)
    try:
        return _plan(r, rule)
    except _Fault as f:
        raise f.span.error(f.message, f.help, rule=rule.id) from None


def _plan(r: _Resolver, rule: Rule) -> PlannedRule:
    combos = variants_of(rule.when)
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
    for s in alias_sets[1:]:
        common = {a: c for a, c in common.items() if s.get(a) == c}
    lets_order = r.ordered_lets()
    let_names: dict[str, bool] = {}
    for x in lets_order:
        if x.name in common or x.name in r.attributes:
            raise _Fault(x.span, f"let name '{x.name}' hides an attribute or alias", "pick another name")
        let_names[x.name] = True
    expr_reads: set[str] = set()
    lets = tuple((x.name, r.bind(x.value, x.span, common, let_names, expr_reads)) for x in lets_order)
    outputs = tuple((c.attribute, r.conclusion(c, common, let_names, expr_reads)) for c in rule.then)
    reads |= expr_reads
    variants = tuple(r.variant(i, conds, expr_reads, reads) for i, conds in enumerate(combos))
    items = {a: c for v in variants for a, c in v.items}
    return PlannedRule(rule=rule, variants=variants, reads=frozenset(reads), items=items, lets=lets, outputs=outputs)
