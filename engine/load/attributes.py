"""``rules/_attributes.yaml``: every attribute rules conclude, declared once with its combine policy."""

from __future__ import annotations

from types import MappingProxyType

from ..errors import InputError
from ..lang.ir import Attribute
from .schema import check, engine_schema
from .yamlsrc import Doc

ATTRIBUTES_FILE = "_attributes.yaml"


def load_attributes(doc: Doc, attributes: dict[str, Attribute], errors: list[InputError]) -> None:
    """Add (or, from a later directory, redeclare) the attributes of one declarations file."""
    found = check(doc, engine_schema("attributes"), "the attribute declarations")
    if found:
        errors.extend(found)
        return
    for name, a in doc.data["attributes"].items():
        where = ("attributes", name)
        prior = attributes.get(name)
        if prior is not None and prior.given:
            what = "workload input" if prior.input else "named constant"
            errors.append(
                doc.error(
                    where,
                    f"'{name}' is a {what} (declared by {prior.span.file}); rules cannot redeclare it",
                    "pick another name for the concluded attribute",
                    key=True,
                )
            )
            continue
        combine = a.get("combine", "single")
        kind = a["type"]
        raw_key = a.get("key")
        key = tuple(raw_key) if isinstance(raw_key, list) else (raw_key,) if raw_key else ()
        problems: list[tuple[tuple[str, ...], str, str]] = []
        if combine in ("argmin", "argmax") and (kind != "record" or not key):
            problems.append(
                (
                    where,
                    f"'{combine}' needs type: record and a 'key' field",
                    "e.g. type: record, combine: argmin, key: cost",
                )
            )
        if combine in ("max", "min", "sum") and kind not in ("number", "integer"):
            problems.append(
                (where, f"'{combine}' needs a number attribute", "use type: number, or another combine policy")
            )
        if a.get("first_by") and combine not in ("argmin", "argmax"):
            problems.append(
                (
                    (*where, "first_by"),
                    "'first_by' needs combine: argmin or argmax",
                    "remove it, or pick records with argmin / argmax",
                )
            )
        if combine == "union" and kind != "list":
            problems.append((where, "'union' needs type: list", "use type: list"))
        if "items" in a and kind != "list":
            problems.append(
                ((*where, "items"), "'items' describes the members of a list attribute", "remove it, or use type: list")
            )
        fields = a.get("fields")
        if fields is not None and kind != "record":
            problems.append(
                ((*where, "fields"), "'fields' describes a record attribute", "remove it, or use type: record")
            )
        within = a.get("within")
        if within and combine not in ("argmin", "argmax"):
            problems.append(
                (
                    (*where, "within"),
                    "'within' needs combine: argmin or argmax",
                    "remove it, or pick records with argmin / argmax",
                )
            )
        for need in (*key, a.get("first_by"), (within or {}).get("field")):
            if fields is not None and need and need not in fields:
                problems.append(
                    (
                        (*where, "fields"),
                        f"the record's fields lack '{need}', which the combine policy compares",
                        f"declare '{need}' under fields",
                    )
                )
        if problems:
            errors.extend(doc.error(p, m, h, key=True) for p, m, h in problems)
            continue
        attributes[name] = Attribute(
            name=name,
            type=kind,
            description=a["description"],
            unit=a.get("unit"),
            combine=combine,
            key=key,
            first_by=a.get("first_by"),
            within=(within["field"], float(within["factor"])) if within else None,
            enum=tuple(a["enum"]) if "enum" in a else None,
            items=a.get("items"),
            fields=MappingProxyType(dict(fields)) if fields is not None else None,
            report=a.get("report", True),
            headline=a.get("headline", False),
            origin="rule",
            span=doc.span(where, key=True),
        )
