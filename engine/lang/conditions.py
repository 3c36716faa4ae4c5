"""Raw ``when`` lists (already schema-checked) into the condition IR: the one parser of conditions."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Protocol

from ..errors import InputError
from . import expr as X
from .ir import (
    LIST_FIELD,
    OPS,
    AnyOf,
    AttrCond,
    Condition,
    FieldCond,
    ItemCond,
    Not,
    Operand,
    Ref,
    Simple,
    Span,
    Test,
    list_catalog_name,
)

NodePath = tuple[str | int, ...]


class Doc(Protocol):
    """A parsed document that knows where each of its nodes is (``load.yamlsrc.Doc``)."""

    @property
    def file(self) -> str:
        """The document's file, as shown in messages."""

    def line_text(self, line: int | None) -> str | None:
        """The text of a line, for error snippets."""

    def where(self, path: Iterable[str | int], *, key: bool = False) -> tuple[int | None, int | None]:
        """Line and column of the node at path."""

    def span(self, path: Iterable[str | int], *, key: bool = False) -> Span:
        """Where the node at path is."""

    def error(
        self, path: Iterable[str | int], message: str, help: str | None = None, *, key: bool = False
    ) -> InputError:
        """An input error at the node at path."""


_KEYWORDS = ("item", "each", "not", "any")


def parse_when(
    doc: Doc, raw: list[Any], path: NodePath = ("when",), formulas: Collection[str] = ()
) -> tuple[Condition, ...]:
    """Every condition of a rule's ``when`` (or a base's), with positions in ``doc``; ``formulas``
    names the named formulas a ref may call.
    """
    return tuple(_Parser(doc, formulas).condition(c, (*path, i)) for i, c in enumerate(raw))


class _Parser:
    def __init__(self, doc: Doc, formulas: Collection[str]) -> None:
        self.doc, self.formulas = doc, formulas

    def condition(self, raw: dict[str, Any], path: NodePath) -> Condition:
        if "any" in raw:
            branches = tuple(
                tuple(self.simple(c, (*path, "any", j, m)) for m, c in enumerate(branch))
                for j, branch in enumerate(raw["any"])
            )
            return AnyOf(branches, self.doc.span(path))
        return self.simple(raw, path)

    def simple(self, raw: dict[str, Any], path: NodePath) -> Simple:
        if "not" in raw:
            inner = raw["not"]
            where = (*path, "not")
            cond = self.item(inner, where) if "item" in inner else self.attr(inner, where)
            return Not(cond, self.doc.span(path))
        if "item" in raw:
            return self.item(raw, path)
        if "each" in raw:
            return self.each(raw, path)
        return self.attr(raw, path)

    def each(self, raw: dict[str, Any], path: NodePath) -> ItemCond:
        """``each: [1, 2, 4, 8]``: a join over the list's catalog, the member tested by ``where``."""
        doc = self.doc
        members = tuple(raw["each"])
        kinds = {type(m) if not isinstance(m, (int, float)) or isinstance(m, bool) else float for m in members}
        if len(kinds) > 1:
            raise doc.error(
                (*path, "each"),
                "the members of an 'each' list are all numbers, all texts or all booleans",
                "split the list, or write the numbers as numbers",
            )
        tests = tests_of(doc, raw["where"], (*path, "where"), self.formulas) if "where" in raw else ()
        span = doc.span((*path, "each"), key=True)
        where = (FieldCond(LIST_FIELD, tests, doc.span((*path, "where"), key=True)),) if tests else ()
        return ItemCond(list_catalog_name(members), raw["as"], where, span, members)

    def item(self, raw: dict[str, Any], path: NodePath) -> ItemCond:
        doc = self.doc
        where = tuple(
            FieldCond(
                name,
                tests_of(doc, t, (*path, "where", name), self.formulas),
                doc.span((*path, "where", name), key=True),
            )
            for name, t in (raw.get("where") or {}).items()
        )
        return ItemCond(raw["item"], raw["as"], where, doc.span((*path, "item")))

    def attr(self, raw: dict[str, Any], path: NodePath) -> AttrCond:
        ((name, tests),) = raw.items()
        return AttrCond(
            name, tests_of(self.doc, tests, (*path, name), self.formulas), self.doc.span((*path, name), key=True)
        )


def is_test_map(tests: Any) -> bool:
    """A mapping of operators (``{gt: 0, lt: 8}``), as opposed to a shorthand for ``eq``."""
    return isinstance(tests, dict) and set(tests) != {"ref"}


def tests_of(doc: Doc, tests: Any, path: NodePath, formulas: Collection[str] = ()) -> tuple[Test, ...]:
    """The tests a value is put to; a bare value or ``{ref: ...}`` means ``eq``."""
    if not is_test_map(tests):
        return (Test("eq", _operand(doc, tests, path, formulas), doc.span(path)),)
    out = []
    for op, value in tests.items():
        if op not in OPS:  # pragma: no cover - the rule schema allows only these
            raise doc.error((*path, op), f"unknown operator '{op}'", key=True)
        where = (*path, op)
        operand: Operand | tuple[Any, ...]
        if op in ("in", "not_in"):
            operand = tuple(value)
        elif op in ("exists", "empty"):
            operand = bool(value)
        else:
            operand = _operand(doc, value, where, formulas)
        out.append(Test(op, operand, doc.span(where)))
    return tuple(out)


def _operand(doc: Doc, value: Any, path: NodePath, formulas: Collection[str]) -> Operand:
    if isinstance(value, dict) and "ref" in value:
        try:
            return Ref(X.parse(value["ref"], formulas))
        except X.ExprError as exc:
            line, col = doc.where((*path, "ref"))
            raise InputError(
                f"in ref: {exc.message}",
                file=doc.file,
                line=line,
                col=(col + exc.col - 1) if col and exc.col else col,
                snippet=doc.line_text(line),
                help=exc.help,
            ) from None
    return value  # type: ignore[no-any-return]


def keyword(raw: dict[str, Any]) -> str | None:
    """Which kind of condition a raw mapping is: 'item', 'not', 'any', or None for an attribute test."""
    return next((k for k in _KEYWORDS if k in raw), None)
