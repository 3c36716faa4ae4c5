"""Workload files: validated against the workload JSON Schema kept in knowledge/.

The schema is plain JSON Schema (editors can use it) with a few annotations
that the engine reads generically:

* ``x-attribute``: the attribute name a leaf becomes (default: its dotted path);
* ``x-quantity``: the value may be written as "70B", "6.7b", "125M" or 7e9;
* ``x-catalog``: ``{catalog, key}`` on an object: the named catalog item fills
  the object's keys that the file leaves out (explicit values win);
* ``x-item: <catalog>``: the value (or each member of a list) is an item id of that catalog,
  checked with a did-you-mean; ``x-item-fields: [field, ...]`` also accepts a value that one of
  those fields takes in the catalog;
* ``default`` with ``x-default-source``: a default is a fact with a source.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import InputError, Problems, closest, hint
from .ir import Attribute, Catalog, InputValue, Span
from .schema import check
from .yamlsrc import Doc, load, parse

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*$")


def parse_quantity(value: object) -> float | None:
    """70e9, "70B", "6.7b", "125M" -> a number; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value)
    if not m:
        return None
    number = float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1)
    return int(number) if number.is_integer() else number


@dataclass(frozen=True)
class Workload:
    """A validated workload: its text, and every input value with its origin."""

    file: str
    name: str
    text: str
    sha256: str
    data: Mapping[str, Any]
    inputs: Mapping[str, InputValue] = field(default_factory=dict)  # attribute -> InputValue


class InputSchema:
    """What a workload may contain, derived once from the JSON Schema."""

    def __init__(self, schema: dict[str, Any], file: str) -> None:
        self.schema = schema
        self.file = file
        self.leaves: dict[tuple[str, ...], dict[str, Any]] = {}  # path -> leaf schema
        self.attr_of: dict[tuple[str, ...], str] = {}
        self.objects: dict[tuple[str, ...], dict[str, Any]] = {}
        self._walk(schema, ())

    def _walk(self, node: dict[str, Any], path: tuple[str, ...]) -> None:
        if node.get("type") == "object" and "properties" in node:
            self.objects[path] = node
            for key, sub in node["properties"].items():
                self._walk(sub, (*path, key))
            return
        self.leaves[path] = node
        self.attr_of[path] = node.get("x-attribute", ".".join(path))

    def attributes(self) -> list[Attribute]:
        """The workload inputs as attributes, one per leaf of the schema."""
        out = []
        for path, node in self.leaves.items():
            t: Any = node.get("x-type") or _attr_type(node)
            enum = node.get("enum")
            member = (node.get("items") or {}).get("type") if isinstance(node.get("items"), dict) else None
            out.append(
                Attribute(
                    name=self.attr_of[path],
                    type=t,
                    description=node.get("description", ""),
                    unit=node.get("x-unit"),
                    enum=tuple(enum) if enum else None,
                    items=member if member in ("string", "number", "integer", "boolean") else None,
                    origin="input",
                    span=Span(self.file),
                    report=node.get("x-report", False),
                )
            )
        return out

    def load(
        self, path: Any, catalogs: Mapping[str, Catalog], display: str | None = None, text: str | None = None
    ) -> Workload:
        """A workload file (or text) -> a validated Workload."""
        doc = parse(text, display or str(path)) if text is not None else load(path, display)
        return self.from_doc(doc, catalogs)

    def from_doc(self, doc: Doc, catalogs: Mapping[str, Catalog]) -> Workload:
        """A parsed workload file, checked and completed: explicit values, catalog fills, defaults."""
        if not isinstance(doc.data, dict):
            got = "an empty file" if doc.data is None else f"a {type(doc.data).__name__}"
            raise InputError(
                f"a workload must be a mapping of keys to values, not {got}",
                file=doc.file,
                line=1,
                col=1,
                help="start from an example in examples/: 'name: ...', 'task: ...', 'model: ...'",
            )
        errors = check(doc, self.schema, "the workload")
        if errors:
            raise Problems(errors)
        data = doc.data
        inputs, problems = self._explicit(doc, data, catalogs)
        problems += self._catalog_fills(doc, data, catalogs, inputs)
        if problems:
            raise Problems(problems)
        # declared defaults
        for path, node in self.leaves.items():
            attr = self.attr_of[path]
            if attr in inputs or "default" not in node:
                continue
            inputs[attr] = InputValue(
                node["default"], "default", node.get("x-default-source", f"default in {self.file}")
            )
        problems = self._relations(doc, inputs)
        if problems:
            raise Problems(problems)
        sha = hashlib.sha256(doc.text.encode("utf-8")).hexdigest()
        name = str(data.get("name", doc.file))
        return Workload(
            file=doc.file,
            name=name,
            text=doc.text,
            sha256=sha,
            data=data,
            inputs=MappingProxyType(dict(sorted(inputs.items()))),
        )

    @staticmethod
    def _unknown_items(
        doc: Doc,
        path: tuple[str, ...],
        value: Any,
        catalog: str,
        catalogs: Mapping[str, Catalog],
        by_fields: tuple[str, ...] = (),
    ) -> InputError | None:
        """``x-item: <catalog>``: the value (or each member) names an item of that catalog, or, with
        ``x-item-fields: [field, ...]``, a value one of those fields takes (a class or a vendor).
        """
        items = catalogs.get(catalog)
        if items is None:
            return None
        known = dict.fromkeys(items.items)
        for f in by_fields:
            known.update(dict.fromkeys(str(v) for it in items.items.values() if (v := it.get(f)) is not None))
        for i, v in enumerate(value if isinstance(value, list) else [value]):
            if v not in known:
                where: tuple[str | int, ...] = (*path, i) if isinstance(value, list) else path
                also = f", or a {' or '.join(by_fields)} ({', '.join(sorted(set(known) - set(items.items)))})"
                return doc.error(
                    where,
                    f"unknown {catalog} '{v}' in {'.'.join(path)}",
                    f"{hint(v, known)}give an id from gpusizer's catalog of {catalog} (knowledge/)"
                    f"{also if by_fields else ''}",
                )
        return None

    def _explicit(
        self, doc: Doc, data: Mapping[str, Any], catalogs: Mapping[str, Catalog]
    ) -> tuple[dict[str, InputValue], list[InputError]]:
        """The values the file gives, quantities ("70B") parsed and checked against their bounds."""
        inputs: dict[str, InputValue] = {}
        problems: list[InputError] = []
        for path, node in self.leaves.items():
            present, value = _get(data, path)
            if not present:
                continue
            line, _ = doc.where(path)
            if node.get("x-quantity"):
                q = parse_quantity(value)
                if q is None or not math.isfinite(q):
                    problems.append(
                        doc.error(
                            path,
                            f"{'.'.join(path)}: {value!r} is not a number",
                            "write a number such as 7e9, or with a suffix: 7B, 6.7b, 125M",
                        )
                    )
                    continue
                low, high = node.get("exclusiveMinimum"), node.get("maximum")
                if low is not None and not q > low:
                    problems.append(
                        doc.error(
                            path,
                            f"{'.'.join(path)} must be > {low}, got {value!r}",
                            node.get("description") or "give a positive value",
                        )
                    )
                    continue
                if high is not None and q > high:
                    problems.append(
                        doc.error(
                            path,
                            f"{'.'.join(path)} must be <= {high:g}, got {value!r}",
                            node.get("description") or "give a smaller value",
                        )
                    )
                    continue
                value = q
            catalog = node.get("x-item")
            if catalog:
                unknown = self._unknown_items(
                    doc, path, value, catalog, catalogs, tuple(node.get("x-item-fields") or ())
                )
                if unknown:
                    problems.append(unknown)
                    continue
            inputs[self.attr_of[path]] = InputValue(value, "workload", f"{doc.file}:{line}", line)
        return inputs, problems

    def _catalog_fills(
        self, doc: Doc, data: Mapping[str, Any], catalogs: Mapping[str, Catalog], inputs: dict[str, InputValue]
    ) -> list[InputError]:
        """A named catalog item (model: {name: ...}) supplies the keys the file leaves out."""
        problems: list[InputError] = []
        for opath, onode in self.objects.items():
            spec = onode.get("x-catalog")
            if not spec:
                continue
            present, key = _get(data, (*opath, spec["key"]))
            if not present:
                continue
            cat = catalogs.get(spec["catalog"])
            item = cat.items.get(key) if cat else None
            if item is None:
                options = sorted(cat.items) if cat else []
                guess = closest(key, options)
                hint = f"did you mean '{guess}'? " if guess else ""
                problems.append(
                    doc.error(
                        (*opath, spec["key"]),
                        f"unknown {spec['catalog']} '{key}'",
                        f"{hint}known: {', '.join(options)}; or leave the name out and give the numbers explicitly",
                    )
                )
                continue
            for prop in onode["properties"]:
                path = (*opath, prop)
                attr = self.attr_of.get(path)
                if attr is None or attr in inputs or prop == spec["key"]:
                    continue
                v = item.get(prop)
                if v is not None:
                    inputs[attr] = InputValue(
                        v, "catalog", f"{spec['catalog']} '{item.id}' ({item.file}:{item.line})", item.line
                    )
        return problems

    def _relations(self, doc: Doc, inputs: dict[str, InputValue]) -> list[InputError]:
        """Checks between keys that JSON Schema cannot state, from two annotations on a leaf:
        ``x-at-most: <attribute>`` (a number no larger than that attribute's) and
        ``x-only-when: {<attribute>: [values]}`` (a value given in the file that only means
        something when that attribute has one of those values).
        """
        out = []
        for path, node in self.leaves.items():
            mine = inputs.get(self.attr_of[path])
            if mine is None:
                continue
            other = node.get("x-at-most")
            if other and other in inputs:
                limit = inputs[other].value
                if isinstance(mine.value, (int, float)) and isinstance(limit, (int, float)) and mine.value > limit:
                    at = path if mine.origin == "workload" else self._path_of(other) or path
                    out.append(
                        doc.error(
                            at,
                            f"{'.'.join(path)} = {mine.value!r} is more than {other} = {limit!r} "
                            f"({inputs[other].detail})",
                            f"give {'.'.join(path)} a value of at most {limit!r}, or change {other}",
                        )
                    )
            for attr, allowed in (node.get("x-only-when") or {}).items():
                if mine.origin != "workload" or attr not in inputs or inputs[attr].value in allowed:
                    continue
                if "default" in node and mine.value == node["default"]:
                    continue
                out.append(
                    doc.error(
                        path,
                        f"{'.'.join(path)}: {mine.value!r} applies only when {attr} is "
                        f"{' or '.join(map(str, allowed))}, and it is {inputs[attr].value!r}",
                        f"remove {'.'.join(path)}, or change {attr}",
                    )
                )
        return out

    def _path_of(self, attr: str) -> tuple[str, ...] | None:
        return next((p for p, a in self.attr_of.items() if a == attr), None)


def _get(data: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    node = data
    for p in path:
        if not isinstance(node, dict) or p not in node:
            return False, None
        node = node[p]
    return True, node


def _attr_type(node: dict[str, Any]) -> str:
    t = node.get("type")
    if isinstance(t, list):
        return "scalar"
    return {
        "number": "number",
        "integer": "integer",
        "string": "string",
        "boolean": "boolean",
        "array": "list",
        "object": "record",
    }.get(str(t), "scalar")
