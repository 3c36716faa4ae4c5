"""Plain data classes shared by the loader, the compiler and the session."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .yamlsrc import Doc


def is_number(v) -> bool:
    """A real number, not a bool (which Python counts as an int)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclass(frozen=True)
class Source:
    doc: str
    quote: str | None = None
    url: str | None = None
    section: str | None = None
    note: str | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in (("doc", self.doc), ("quote", self.quote), ("url", self.url),
                                  ("section", self.section), ("note", self.note)) if v}

    def short(self) -> str:
        text = self.doc
        if self.section:
            text += f", {self.section}"
        if self.quote:
            text += f': "{self.quote}"'
        return text


@dataclass
class Attribute:
    name: str
    type: str
    description: str
    unit: str | None = None
    combine: str = "single"
    key: str | None = None
    first_by: str | None = None  # argmin/argmax: a record field compared before key (false/low first)
    enum: list | None = None
    report: bool = True
    headline: bool = False  # a default column in what-if tables
    input: bool = False  # comes from the workload file
    file: str | None = None
    line: int | None = None

    @property
    def is_list(self) -> bool:
        return self.type == "list"


@dataclass
class Field:
    name: str
    type: str
    description: str
    unit: str | None = None
    enum: list | None = None
    required: bool = False


@dataclass
class Item:
    catalog: str
    id: str
    name: str
    fields: dict
    sources: list
    file: str
    line: int | None
    note: str | None = None

    def get(self, name: str) -> Any:
        if name == "id":
            return self.id
        if name == "name":
            return self.name
        return self.fields.get(name)


@dataclass
class Catalog:
    name: str
    description: str
    fields: dict  # name -> Field
    items: dict  # id -> Item
    file: str
    sources: list = field(default_factory=list)

    def has_field(self, name: str) -> bool:
        return name in ("id", "name") or name in self.fields


@dataclass
class Rule:
    id: str
    summary: str
    file: str
    doc: Doc
    area: str
    sources: list
    priority: int = 0
    description: str | None = None
    when: list = field(default_factory=list)
    let: dict = field(default_factory=dict)  # name -> expr.Expr
    then: dict = field(default_factory=dict)  # attr -> Expr | {field: Expr}
    reads: set = field(default_factory=set)  # attribute names
    writes: list = field(default_factory=list)  # attribute names, in file order
    items: dict = field(default_factory=dict)  # alias -> catalog name
    stratum: int = 1
    compiled: Any = None  # compiler.CompiledRule of the first alternative
    variants: list = field(default_factory=list)  # one CompiledRule per alternative of 'any' conditions
    test_file: str | None = None
    overlay: str | None = None
