"""The rule language as typed, immutable values: what every later stage reads.

A rule file is parsed once (``load.rules``) into a :class:`Rule` whose ``when`` is a tuple of
:class:`AttrCond`, :class:`ItemCond`, :class:`Not` and :class:`AnyOf`, each made of :class:`Test`
values, and whose ``let`` and ``then`` hold parsed expressions and text templates. Nothing
changes a value after it is built; planning, the backends, why-not, lint and the docs all read
these, so the condition language has one meaning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..errors import InputError
from .expr import Expr, Template

Scalar: TypeAlias = str | int | float | bool
Value: TypeAlias = Scalar | list["Value"] | dict[str, "Value"] | None

# the operators of a test, in the order the docs list them
Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in", "exists", "empty", "contains", "not_contains"]
OPS: tuple[Op, ...] = (
    "eq",
    "ne",
    "gt",
    "gte",
    "lt",
    "lte",
    "in",
    "not_in",
    "exists",
    "empty",
    "contains",
    "not_contains",
)
ORDERING: frozenset[str] = frozenset({"gt", "gte", "lt", "lte"})
MEMBERSHIP: frozenset[str] = frozenset({"contains", "not_contains"})


@dataclass(frozen=True, slots=True)
class Span:
    """Where a piece of a file is: file, 1-based line and column, and the text of that line."""

    file: str
    line: int | None = None
    col: int | None = None
    snippet: str | None = None

    def render(self) -> str:
        """``file:line:col``."""
        return ":".join(str(p) for p in (self.file, self.line, self.col) if p is not None)

    def error(self, message: str, help: str | None = None, *, rule: str | None = None) -> InputError:
        """An input error here, quoting the line."""
        return InputError(
            message, file=self.file, line=self.line, col=self.col, snippet=self.snippet, help=help, rule=rule
        )


@dataclass(frozen=True, slots=True)
class Source:
    """Where a rule, a catalog item or a constant comes from."""

    doc: str
    quote: str | None = None
    url: str | None = None
    section: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The source's non-empty fields."""
        pairs = (
            ("doc", self.doc),
            ("quote", self.quote),
            ("url", self.url),
            ("section", self.section),
            ("note", self.note),
        )
        return {k: v for k, v in pairs if v}


@dataclass(frozen=True, slots=True)
class Ref:
    """An operand computed from other facts: ``{ref: memory.sharded_gb / 8}``."""

    expr: Expr

    @property
    def source(self) -> str:
        """The ref's expression as written."""
        return self.expr.source

    def reads(self, heads: Collection[str]) -> bool:
        """The expression reads a name whose first part is one of ``heads`` (e.g. an item alias)."""
        return not self.expr.heads.isdisjoint(heads)


Operand: TypeAlias = Scalar | Ref


@dataclass(frozen=True, slots=True)
class Test:
    """One operator applied to a value: ``gt: 0``, ``in: [a, b]``, ``exists: true``, ``contains: {ref: g.id}``."""

    op: Op
    operand: Operand | tuple[Scalar, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class AttrCond:
    """Tests on one attribute's value; all must hold."""

    attribute: str
    tests: tuple[Test, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class FieldCond:
    """Tests on one field of a catalog item."""

    field: str
    tests: tuple[Test, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ItemCond:
    """A join with a knowledge catalog: holds once for each item whose fields pass ``where``.

    ``each: [1, 2, 4, 8]`` is a join too, over the list's catalog (``list_catalog``): one item per
    member, whose one field ``value`` the alias reads (``n`` for ``n.value``); ``members`` is the list.
    """

    catalog: str
    alias: str
    where: tuple[FieldCond, ...]
    span: Span
    members: tuple[Scalar, ...] | None = None


LIST_FIELD = "value"  # the field of a list's item: the member
LIST_PREFIX = "each "  # a list's catalog is named so, then the list: each [1, 2, 4, 8]


def list_catalog_name(members: tuple[Scalar, ...]) -> str:
    """The name of the catalog a rule's ``each`` list ranges over: ``each [1, 2, 4, 8]``."""
    return LIST_PREFIX + json.dumps(list(members), ensure_ascii=False)


def list_catalog(members: tuple[Scalar, ...], span: Span) -> Catalog:
    """The catalog of an ``each`` list: one item per member (id: its text), in the list's order."""
    name = list_catalog_name(members)
    kinds = {"boolean" if isinstance(m, bool) else "string" if isinstance(m, str) else "number" for m in members}
    kind = kinds.pop() if len(kinds) == 1 else "string"
    items: dict[str, Item] = {}
    for m in members:
        key = m if isinstance(m, str) else json.dumps(m)
        items.setdefault(key, Item(name, key, key, {LIST_FIELD: m}, (), span))
    field = CatalogField(LIST_FIELD, kind, "a member of the list", required=True)
    return Catalog(name, f"the members of the list {name[len(LIST_PREFIX) :]}", {LIST_FIELD: field}, items, span.file)


@dataclass(frozen=True, slots=True)
class Not:
    """Holds when the inner condition does not: an attribute without such a value, or no such item."""

    inner: AttrCond | ItemCond
    span: Span


Simple: TypeAlias = AttrCond | ItemCond | Not


@dataclass(frozen=True, slots=True)
class AnyOf:
    """Holds when every condition of at least one branch holds."""

    branches: tuple[tuple[Simple, ...], ...]
    span: Span


Condition: TypeAlias = AttrCond | ItemCond | Not | AnyOf
Computed: TypeAlias = Expr | Template


@dataclass(frozen=True, slots=True)
class Let:
    """A named intermediate value of a rule."""

    name: str
    value: Computed
    span: Span


@dataclass(frozen=True, slots=True)
class Conclusion:
    """What a rule contributes to one attribute: one value, or a record of fields."""

    attribute: str
    value: Computed | None
    fields: tuple[tuple[str, Computed], ...] | None
    span: Span

    @property
    def is_record(self) -> bool:
        """It gives a record's fields."""
        return self.fields is not None

    def computed(self) -> tuple[Computed, ...]:
        """The expressions and templates it evaluates."""
        return tuple(v for _, v in self.fields) if self.fields is not None else (self.value,) if self.value else ()


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule as written (with its base expanded when it ``extends`` one)."""

    id: str
    summary: str
    file: str
    area: str
    span: Span
    sources: tuple[Source, ...]
    when: tuple[Condition, ...]
    lets: tuple[Let, ...]
    then: tuple[Conclusion, ...]
    then_span: Span
    sha256: str  # of the rule file, and of its bases when it extends one
    priority: int = 0
    description: str | None = None
    extends: str | None = None
    base_files: tuple[str, ...] = ()
    test_file: str | None = None
    overlay: str | None = None
    keys: Mapping[str, Span] = field(default_factory=dict)  # where each top-level key of the file is
    allow: Mapping[str, str] = field(default_factory=dict)  # lint finding code -> why the rule keeps it

    @property
    def writes(self) -> tuple[str, ...]:
        """The attributes the rule concludes, in file order."""
        return tuple(c.attribute for c in self.then)

    def key_span(self, key: str) -> Span:
        """Where a top-level key (when, then, source, priority, ...) is written, else the id's place."""
        return self.keys.get(key, self.span)

    def computed(self) -> tuple[Computed, ...]:
        """Every expression and template the rule's ``let`` and ``then`` evaluate."""
        return tuple(x.value for x in self.lets) + tuple(v for c in self.then for v in c.computed())


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of a named formula: a value, or an item of a catalog (``item: box``)."""

    name: str
    description: str
    item: str | None = None  # the catalog of an item parameter, read by its fields (box.width)


@dataclass(frozen=True, slots=True)
class Formula:
    """A named formula (``knowledge/formulas.yaml``): parameters, an expression over them (and over
    attributes and constants), its unit, a description and its sources. A call is expanded where it
    is written (planning substitutes each argument for its parameter), so a formula means exactly
    its expression.
    """

    name: str
    params: tuple[Param, ...]
    value: Expr
    unit: str
    description: str
    sources: tuple[Source, ...]
    span: Span

    @property
    def signature(self) -> str:
        """``name(a, b)``."""
        return f"{self.name}({', '.join(p.name for p in self.params)})"


AttrType = Literal["number", "integer", "string", "boolean", "list", "record", "scalar"]
Combine = Literal["single", "max", "min", "sum", "union", "prefer", "argmin", "argmax"]


UNIT_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
"""An attribute named in a unit: ``unit: "{price.currency}"`` shows costs in the market's currency."""


@dataclass(frozen=True, slots=True)
class Attribute:
    """An attribute, declared once: a workload input, a constant, or something rules conclude."""

    name: str
    type: AttrType
    description: str
    unit: str | None = None
    combine: Combine = "single"
    key: tuple[str, ...] = ()  # argmin/argmax: the record fields compared, in order
    first_by: str | None = None  # argmin/argmax: compared before key, lowest (false) first
    within: tuple[str, float] | None = None  # argmin/argmax: (field, factor): only records within factor x the lowest
    enum: tuple[Scalar, ...] | None = None
    items: str | None = None  # list attributes: the type of a member ("string" makes then-values text)
    fields: Mapping[str, str] | None = None  # record attributes: field -> type
    report: bool = True
    headline: bool = False  # a default column in what-if tables
    origin: Literal["rule", "input", "constant"] = "rule"
    span: Span = field(default_factory=lambda: Span("<builtin>"))

    @property
    def input(self) -> bool:
        """It comes from the workload file."""
        return self.origin == "input"

    @property
    def given(self) -> bool:
        """Its value is known before any rule runs (a workload input or a constant)."""
        return self.origin != "rule"

    @property
    def is_list(self) -> bool:
        """It holds a list."""
        return self.type == "list"

    @property
    def unit_names(self) -> tuple[str, ...]:
        """The attributes a unit names in braces (``{price.currency}``), in order."""
        return tuple(UNIT_NAME.findall(self.unit or ""))

    def unit_for(self, values: Mapping[str, Any]) -> str | None:
        """The unit for a report: each ``{name}`` replaced by that attribute's text value
        (``{price.currency}`` -> ``USD``); None when one of them has no value.
        """
        unit = self.unit
        if not unit or "{" not in unit:
            return unit
        shown = [values.get(n) for n in self.unit_names]
        if not all(isinstance(v, str) for v in shown):
            return None
        parts = iter(shown)
        return UNIT_NAME.sub(lambda m: str(next(parts)), unit)

    def takes_text(self, record_field: str | None = None) -> bool:
        """Whether a rule's ``then`` value for it (or for this record field) is text with {placeholders}."""
        if record_field is not None:
            return bool(self.fields) and (self.fields or {}).get(record_field) == "string"
        return self.type == "string" or (self.type == "list" and self.items == "string")


@dataclass(frozen=True, slots=True)
class CatalogField:
    """A field that a catalog's items may have, declared once with its type and unit."""

    name: str
    type: str
    description: str
    unit: str | None = None
    enum: tuple[Scalar, ...] | None = None
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    # required on the items whose other fields hold one of these values (every field named must match) ...
    required_when: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()
    # ... and on the items that give any of these fields (a price's currency, date and source go with the price)
    required_with: tuple[str, ...] = ()

    def required_on(self, values: Mapping[str, object]) -> str | None:
        """Why an item with these field values must give this field, or None when it need not."""
        if self.required:
            return "the field is required"
        if self.required_when and all(values.get(f) in allowed for f, allowed in self.required_when):
            return "its " + " and ".join(f"{f} is {_written(values.get(f))}" for f, _ in self.required_when)
        given = [f for f in self.required_with if values.get(f) is not None]
        if given:
            return f"it gives {' and '.join(given)}"
        return None

    def out_of_bounds(self, value: object) -> str | None:
        """Why a number is outside the declared bounds, or None."""
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        if self.exclusive_minimum is not None and not value > self.exclusive_minimum:
            return f"must be more than {_bound(self.exclusive_minimum)}"
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {_bound(self.minimum)}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {_bound(self.maximum)}"
        return None


def _written(v: object) -> str:
    """A field's value as YAML writes it (true, false)."""
    return str(v).lower() if isinstance(v, bool) else str(v)


def _bound(x: float) -> str:
    """A bound as written: whole numbers in full with thousands separators (4,398,046,511,104)."""
    if float(x).is_integer() and abs(x) < 1e18:
        return f"{int(x):,}"
    return f"{x:g}"


@dataclass(frozen=True, slots=True)
class Item:
    """One catalog entry, e.g. a GPU, with its fields and sources."""

    catalog: str
    id: str
    name: str
    fields: Mapping[str, Value]
    sources: tuple[Source, ...]
    span: Span
    note: str | None = None
    overlay: str | None = None  # the knowledge directory laid over the first that added or changed it

    def get(self, name: str) -> Value:
        """A field's value (id and name included), or None."""
        if name == "id":
            return self.id
        if name == "name":
            return self.name
        return self.fields.get(name)

    @property
    def file(self) -> str:
        """The catalog file the item is in."""
        return self.span.file

    @property
    def line(self) -> int | None:
        """The line the item starts on."""
        return self.span.line


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakref: semantics keeps an index per catalog
class Catalog:
    """A knowledge catalog: its declared fields and its items."""

    name: str
    description: str
    fields: Mapping[str, CatalogField]
    items: Mapping[str, Item]
    file: str
    sources: tuple[Source, ...] = ()

    def has_field(self, name: str) -> bool:
        """The catalog declares the field (id and name always)."""
        return name in ("id", "name") or name in self.fields


@dataclass(frozen=True, slots=True)
class InputValue:
    """A value known before any rule runs, and where it came from."""

    value: Value
    origin: Literal["workload", "default", "catalog", "constant", "config", "inferred"]
    # where exactly: file:line, the default's source, the catalog item, the constant's source, the
    # imported document and its field(s), or what an inference step inferred the value from
    detail: str
    line: int | None = None
