"""Knowledge files: catalogs (GPUs, models, DIMMs, ...) and named constants, with overlays."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from ..errors import InputError, hint
from ..lang import expr as X
from ..lang.ir import Attribute, AttrType, Catalog, CatalogField, Formula, InputValue, Item, Param, Value
from .rules import sources_of
from .schema import check, engine_schema
from .yamlsrc import Doc

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "boolean": (bool,),
}
CONSTANT_PREFIX = "const."


def _type_ok(value: Any, t: str) -> bool:
    if t in ("integer", "number") and isinstance(value, bool):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, _PY_TYPES[t])


def kind_of(doc: Doc) -> str | None:
    """'catalog', 'constants', 'formulas', 'import' (an import mapping) or 'infer' (input inference)
    by the file's top-level keys, or None when it is none of them.
    """
    if isinstance(doc.data, dict):
        for kind in ("catalog", "constants", "formulas", "import", "infer"):
            if kind in doc.data:
                return kind
    return None


def _item_values(
    doc: Doc,
    path: tuple[str | int, ...],
    raw: dict[str, Any],
    declared: Mapping[str, CatalogField],
    name: str,
    errors: list[InputError],
) -> dict[str, Value]:
    """An item's field values, each checked against its declaration (unknown, wrong type, not in enum)."""
    values: dict[str, Value] = {}
    for key, value in raw.items():
        if key in ("id", "name", "source", "note"):
            continue
        f = declared.get(key)
        if f is None:
            errors.append(
                doc.error(
                    (*path, key),
                    f"field '{key}' is not declared in catalog '{name}'",
                    f"{hint(key, declared)}declare it under 'fields:' at the top of the file",
                    key=True,
                )
            )
            continue
        if value is None:
            continue
        if not _type_ok(value, f.type):
            errors.append(doc.error((*path, key), f"'{key}' must be {f.type}, not {value!r}", f.description))
            continue
        bad = f.out_of_bounds(value)
        if bad:
            unit = f" {f.unit}" if f.unit else ""
            errors.append(
                doc.error(
                    (*path, key),
                    f"'{key}': {value!r}{unit} {bad}",
                    f"{f.description} (bounds are declared with the field; a site catalog may not widen them)",
                )
            )
            continue
        if f.enum and value not in f.enum:
            errors.append(
                doc.error(
                    (*path, key),
                    f"'{key}': {value!r} is not one of {', '.join(map(str, f.enum))}",
                    "use one of the declared values or extend the field's enum",
                )
            )
            continue
        values[key] = value
    return values


def _narrowest(prior: CatalogField, new: CatalogField) -> CatalogField:
    """An overlay's redeclared field: its own description, unit and enum, and the tighter of both
    bounds (a site catalog may narrow the physical bounds, never widen them).
    """

    def pick(a: float | None, b: float | None, tighter: Any) -> float | None:
        return b if a is None else a if b is None else tighter(a, b)

    return replace(
        new,
        required=prior.required or new.required,
        required_when=new.required_when or prior.required_when,
        required_with=tuple(dict.fromkeys(prior.required_with + new.required_with)),
        minimum=pick(prior.minimum, new.minimum, max),
        exclusive_minimum=pick(prior.exclusive_minimum, new.exclusive_minimum, max),
        maximum=pick(prior.maximum, new.maximum, min),
    )


def _declared(
    doc: Doc, fields: dict[str, CatalogField], earlier: Catalog | None, errors: list[InputError]
) -> dict[str, CatalogField] | None:
    """The catalog's fields after this file: an overlay's redeclared field keeps its type and the
    tighter bounds; None (with the error) when it changes a type.
    """
    if earlier is None:
        return fields
    declared = dict(earlier.fields, **fields)
    for n, f in fields.items():
        prior = earlier.fields.get(n)
        if prior is None:
            continue
        if prior.type != f.type:
            errors.append(
                doc.error(
                    ("fields", n, "type"),
                    f"field '{n}' is {prior.type} in {earlier.file}; an overlay cannot make it {f.type}",
                    "give the field the type it has in the catalog this file amends",
                )
            )
            return None
        declared[n] = _narrowest(prior, f)
    return declared


def _conditions_declared(doc: Doc, declared: Mapping[str, CatalogField], errors: list[InputError]) -> bool:
    """required_when and required_with name fields the catalog declares."""
    ok = True
    for f in declared.values():
        for key, named in (("required_when", [k for k, _ in f.required_when]), ("required_with", f.required_with)):
            for other in named:
                if other not in declared:
                    errors.append(
                        doc.error(
                            ("fields", f.name, key) if f.name in (doc.data.get("fields") or {}) else ("catalog",),
                            f"field '{f.name}': {key} names '{other}', which the catalog does not declare",
                            f"{hint(other, declared)}name a declared field",
                        )
                    )
                    ok = False
    return ok


def load_catalog(
    doc: Doc, errors: list[InputError], earlier: Catalog | None = None, overlay: str | None = None
) -> Catalog | None:
    """One catalog file; ``earlier`` is the same catalog from a knowledge directory given before,
    which this one amends (new fields, new items, changed values).

    A file that defines a catalog gives ``description`` and ``fields``, and each item its ``name``
    and ``source``. An overlay amending a catalog gives only what changes: an existing item needs
    its ``id`` and the fields that change. ``defaults`` gives field values every item of the file
    takes unless it gives its own, and a file-level ``source`` stands for items that give none.
    """
    found = check(doc, engine_schema("knowledge"), "a knowledge catalog")
    if found:
        errors.extend(found)
        return None
    data = doc.data
    name = data["catalog"]
    if earlier is None:
        for key, what in (("description", "a one-line description"), ("fields", "the fields its items give")):
            if key not in data:
                errors.append(
                    doc.error(
                        ("catalog",),
                        f"catalog '{name}' is defined here, so it needs '{key}'",
                        f"add '{key}:' with {what}; only an overlay amending a catalog of an earlier "
                        "knowledge directory may leave it out",
                    )
                )
                return None
    fields = {
        n: CatalogField(
            name=n,
            type=f["type"],
            description=f["description"],
            unit=f.get("unit"),
            enum=tuple(f["enum"]) if "enum" in f else None,
            required=f.get("required", False),
            minimum=f.get("minimum"),
            maximum=f.get("maximum"),
            exclusive_minimum=f.get("exclusiveMinimum"),
            required_when=tuple((k, tuple(v)) for k, v in (f.get("required_when") or {}).items()),
            required_with=tuple(f.get("required_with") or ()),
        )
        for n, f in (data.get("fields") or {}).items()
    }
    declared = _declared(doc, fields, earlier, errors)
    if declared is None:
        return None
    if not _conditions_declared(doc, declared, errors):
        return None
    file_sources = sources_of(data["source"]) if data.get("source") else ()
    defaults = _item_values(doc, ("defaults",), dict(data.get("defaults") or {}), declared, name, errors)
    items: dict[str, Item] = {}
    for i, raw in enumerate(data["items"]):
        path = ("items", i)
        if raw["id"] in items:
            errors.append(
                doc.error(
                    (*path, "id"),
                    f"duplicate item id '{raw['id']}' in catalog '{name}'",
                    "ids are unique within a catalog; rename one",
                )
            )
            continue
        old = earlier.items.get(raw["id"]) if earlier is not None else None
        values = dict(defaults, **_item_values(doc, path, raw, declared, name, errors))
        if old is None:
            missing = [k for k in ("name", "source") if k not in raw and not (k == "source" and file_sources)]
            if missing:
                errors.append(
                    doc.error(
                        path,
                        f"item '{raw['id']}' is new to catalog '{name}', so it needs {' and '.join(missing)}",
                        f"{hint(raw['id'], earlier.items) if earlier else ''}give name and source, or a file-level "
                        "source; only an item that amends an existing one may leave them out",
                    )
                )
                continue
        merged = dict(old.fields, **values) if old is not None else values
        for f in declared.values():
            why = f.required_on(merged) if f.name not in merged else None
            if why:
                lacks = "required field" if f.required else "field"
                because = "" if f.required else f", which it must give: {why}"
                errors.append(doc.error(path, f"item '{raw['id']}' lacks {lacks} '{f.name}'{because}", f.description))
        sources = sources_of(raw["source"]) if "source" in raw else file_sources
        if old is not None:
            items[raw["id"]] = Item(
                catalog=name,
                id=raw["id"],
                name=raw.get("name", old.name),
                fields=MappingProxyType(dict(old.fields, **values)),
                sources=sources + old.sources,
                span=doc.span(path),
                note=raw.get("note") or old.note,
                overlay=overlay,
            )
            continue
        items[raw["id"]] = Item(
            catalog=name,
            id=raw["id"],
            name=raw["name"],
            fields=MappingProxyType(values),
            sources=sources,
            span=doc.span(path),
            note=raw.get("note"),
            overlay=overlay,
        )
    if earlier is not None:
        return Catalog(
            name=name,
            description=earlier.description,
            fields=MappingProxyType(declared),
            items=MappingProxyType(dict(earlier.items, **items)),
            file=earlier.file,
            sources=earlier.sources,
        )
    return Catalog(
        name=name,
        description=data["description"],
        fields=MappingProxyType(fields),
        items=MappingProxyType(items),
        file=doc.file,
        sources=file_sources,
    )


def load_constants(
    doc: Doc, errors: list[InputError], attributes: dict[str, Attribute], values: dict[str, InputValue]
) -> None:
    """Named constants into ``attributes`` (as ``const.<name>``) and ``values``; a later file's
    value for a name replaces an earlier one's (a site's own figure).
    """
    found = check(doc, engine_schema("constants"), "the named constants")
    if found:
        errors.extend(found)
        return
    for name, c in doc.data["constants"].items():
        value = c["value"]
        if isinstance(value, float) and not math.isfinite(value):
            errors.append(
                doc.error(("constants", name, "value"), f"'{name}' is not a finite number", "give a finite value")
            )
            continue
        full = CONSTANT_PREFIX + name
        kind: AttrType = "boolean" if isinstance(value, bool) else "string" if isinstance(value, str) else "number"
        items: str | None = None
        if isinstance(value, list):  # texts, or numbers (the schema takes no other member)
            kind, items = "list", "string" if all(isinstance(v, str) for v in value) else "number"
            if items == "number" and not all(isinstance(v, (int, float)) and math.isfinite(v) for v in value):
                errors.append(
                    doc.error(
                        ("constants", name, "value"),
                        f"'{name}' is neither a list of texts nor a list of finite numbers",
                        "give one kind of member",
                    )
                )
                continue
        span = doc.span(("constants", name), key=True)
        attributes[full] = Attribute(
            name=full,
            type=kind,
            description=c["description"],
            unit=c.get("unit"),
            items=items,
            origin="constant",
            report=False,
            span=span,
        )
        source = sources_of(c["source"])
        detail = "; ".join(filter(None, (_source_text(s.as_dict()) for s in source)))
        values[full] = InputValue(value, "constant", f"{doc.file}:{span.line}: {detail}", span.line)


def load_formulas(doc: Doc, errors: list[InputError], formulas: dict[str, Formula]) -> None:
    """Named formulas into ``formulas``; a later file's formula of a name replaces an earlier one's
    (a site's own). What a formula reads is checked when the rules are planned (``plan.formulas``).
    """
    found = check(doc, engine_schema("formulas"), "the named formulas")
    if found:
        errors.extend(found)
        return
    names = set(formulas) | set(doc.data["formulas"])
    for name, f in doc.data["formulas"].items():
        if name in X.FUNCTIONS:
            errors.append(
                doc.error(
                    ("formulas", name),
                    f"formula '{name}' has the name of a built-in function",
                    f"rename it; the functions are: {', '.join(sorted(X.FUNCTIONS))}",
                    key=True,
                )
            )
            continue
        params = tuple(
            Param(p, v) if isinstance(v, str) else Param(p, v["description"], v.get("item"))
            for p, v in f["params"].items()
        )
        try:
            value = X.parse(f["value"], names)
        except X.ExprError as exc:
            line, col = doc.where(("formulas", name, "value"))
            raw = f["value"]
            errors.append(
                InputError(
                    f"formula '{name}': {exc.message}",
                    file=doc.file,
                    line=line,
                    col=(col + exc.col - 1) if col and exc.col and isinstance(raw, str) else col,
                    snippet=doc.line_text(line),
                    help=exc.help,
                )
            )
            continue
        formulas[name] = Formula(
            name=name,
            params=params,
            value=value,
            unit=f["unit"],
            description=f["description"],
            sources=sources_of(f["source"]),
            span=doc.span(("formulas", name), key=True),
        )


def _source_text(s: Mapping[str, str]) -> str:
    out = s.get("doc", "")
    if s.get("quote"):
        out += f': "{s["quote"]}"'
    elif s.get("url"):
        out += f" <{s['url']}>"
    return out
