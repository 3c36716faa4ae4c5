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
* ``default`` with ``x-default-source``: a default is a fact with a source;
* ``x-import``: ``{mapping, path, locate}`` on an object: the key ``path`` names a JSON document
  (relative to the workload file), the key ``locate`` a name found in a local cache, and the named
  import mapping (a knowledge file) turns it into the object's keys (explicit values win);
* ``x-infer``: the name of an inference file (knowledge) whose steps complete the inputs the
  workload leaves out, each with its reason, and whose requirements refuse what cannot be run.

Inputs come, in this order of precedence: the file, its imported document, its catalog item, an
inference step, the declared default (which an inference step may replace).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import InputError, Problems, closest, hint
from ..lang.ir import Attribute, Catalog, InputValue, Span
from . import imports as I
from .schema import check, engine_schema, valid, validator_for
from .yamlsrc import Doc, load, parse, parse_json

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
    # the documents it imported (x-import), each {key, value, file, sha256, text}: a record carries them
    documents: tuple[Mapping[str, str], ...] = ()


class InputSchema:
    """What a workload may contain, derived once from the JSON Schema."""

    def __init__(self, schema: dict[str, Any], file: str) -> None:
        self.schema = schema
        self.file = file
        self.leaves: dict[tuple[str, ...], dict[str, Any]] = {}  # path -> leaf schema
        self.attr_of: dict[tuple[str, ...], str] = {}
        self.objects: dict[tuple[str, ...], dict[str, Any]] = {}
        self.imports: Mapping[str, I.ImportMapping] = {}
        self.inferences: Mapping[str, I.Inference] = {}
        self._plain: dict[tuple[str, ...], dict[str, Any]] = {}  # leaf schemas without annotations
        self._walk(schema, ())

    def attach(self, imports: Mapping[str, I.ImportMapping], inferences: Mapping[str, I.Inference]) -> list[InputError]:
        """Take the knowledge's import mappings and inference files; what in them or in the schema's
        x-import / x-infer annotations does not fit together, as errors.
        """
        self.imports, self.inferences = imports, inferences
        errors: list[InputError] = []
        for opath, onode in self.objects.items():
            if onode.get("x-import"):
                errors += self._check_import(opath, onode)
        name = self.schema.get("x-infer")
        if name:
            errors += self._check_inference(name)
        return errors

    def _check_import(self, opath: tuple[str, ...], onode: dict[str, Any]) -> list[InputError]:
        spec = onode["x-import"]
        where = ".".join(opath) or "the workload"
        mapping = self.imports.get(spec.get("mapping", ""))
        if mapping is None:
            return [
                InputError(
                    f"{where}: x-import names the import mapping '{spec.get('mapping')}', which no knowledge "
                    "file defines",
                    file=self.file,
                    help=f"{hint(spec.get('mapping'), self.imports)}add a knowledge file with 'import: "
                    f"{spec.get('mapping')}'",
                )
            ]
        errors = []
        for role in ("path", "locate"):
            key = spec.get(role)
            if key is not None and key not in onode["properties"]:
                errors.append(
                    InputError(f"{where}: x-import's {role} key '{key}' is not a key of {where}", file=self.file)
                )
        if spec.get("locate") and mapping.locate is None:
            errors.append(
                InputError(
                    f"{where}: x-import locates documents by '{spec['locate']}', but the import mapping "
                    f"'{mapping.name}' has no 'locate'",
                    file=mapping.file,
                    help="add a locate section to the mapping",
                )
            )
        for entry in mapping.entries.values():
            for setter in entry.setters:
                if (*opath, setter.key) in self.leaves and not setter.exprs:
                    # a literal is known now: a value the workload key refuses is the mapping's error
                    bad = self._leaf_problem((*opath, setter.key), setter.literal)
                    if bad:
                        errors.append(
                            InputError(
                                f"entry '{entry.id}' fixes {'.'.join((*opath, setter.key))} to "
                                f"{setter.literal!r}, which {bad}",
                                file=setter.span.file,
                                line=setter.span.line,
                                col=setter.span.col,
                                help="give a value the workload key takes (knowledge/workload.schema.json)",
                            )
                        )
                if (*opath, setter.key) not in self.leaves:
                    errors.append(
                        InputError(
                            f"entry '{entry.id}' sets '{setter.key}', which is not a key of {where}",
                            file=setter.span.file,
                            line=setter.span.line,
                            col=setter.span.col,
                            help=f"{hint(setter.key, onode['properties'])}the keys are: "
                            f"{', '.join(onode['properties'])}",
                        )
                    )
        return errors

    def _check_inference(self, name: str) -> list[InputError]:
        spec = self.inferences.get(name)
        if spec is None:
            return [
                InputError(
                    f"x-infer names the inference '{name}', which no knowledge file defines",
                    file=self.file,
                    help=f"{hint(name, self.inferences)}add a knowledge file with 'infer: {name}'",
                )
            ]
        attrs = set(self.attr_of.values())
        errors = []
        for step in spec.steps:
            for n in (step.target, *sorted(step.reads)):
                if n not in attrs:
                    errors.append(
                        InputError(
                            f"step '{step.id}' reads or sets '{n}', which is not a workload input",
                            file=step.span.file,
                            line=step.span.line,
                            col=step.span.col,
                            help=f"{hint(n, attrs)}steps work on the workload's inputs",
                        )
                    )
        for req in spec.requirements:
            names = [*req.keys, *([req.waiver] if req.waiver else [])]
            names += sorted(req.unless.names) if req.unless else []
            for n in names:
                if n not in attrs:
                    errors.append(
                        InputError(
                            f"requirement '{req.id}' names '{n}', which is not a workload input",
                            file=req.span.file,
                            line=req.span.line,
                            col=req.span.col,
                            help=f"{hint(n, attrs)}requirements name the workload's inputs",
                        )
                    )
        return errors

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
        self,
        path: Any,
        catalogs: Mapping[str, Catalog],
        display: str | None = None,
        text: str | None = None,
        attached: Mapping[str, str] | None = None,
        documents: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Workload:
        """A workload file (or text) -> a validated Workload.

        ``attached``: documents given with the workload text, by name (a server's request). When it
        is given, an ``x-import`` path names one of them and is never read from disk, and nothing is
        looked up in a local cache. ``documents`` (key -> a recorded document) stand in for the
        files its keys name, as when a decision record is verified.
        """
        if text is not None:
            doc = parse(text, display or str(path), "workload")
        else:
            doc = load(path, display, "workload")
        return self.from_doc(doc, catalogs, attached, documents)

    def from_doc(
        self,
        doc: Doc,
        catalogs: Mapping[str, Catalog],
        attached: Mapping[str, str] | None = None,
        documents: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Workload:
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
        read: list[Mapping[str, str]] = []
        problems += self._imported(doc, data, inputs, attached, documents or {}, read)
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
        problems = self._inferred(doc, inputs)
        if problems:
            raise Problems(problems)
        problems = self._relations(doc, inputs)
        problems += self._requirements(doc, inputs)
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
            documents=tuple(read),
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

    def _leaf_problem(self, path: tuple[str, ...], value: Any) -> str | None:
        """What makes a value unfit for a key (its type, enum or bounds), or None."""
        node = self.leaves.get(path)
        if node is None:
            return "is not a key of the workload"
        plain = self._plain.get(path)
        if plain is None:
            plain = {k: v for k, v in node.items() if not k.startswith("x-") and k not in ("default", "description")}
            if node.get("x-quantity"):
                plain.pop("type", None)
            self._plain[path] = plain
        if valid(value, plain):
            return None
        e = next(iter(validator_for(plain).iter_errors(value)))
        if e.validator == "enum":
            return f"is not one of {', '.join(map(str, e.validator_value))}"
        if e.validator == "type":
            return f"is not of type {e.validator_value}"
        return str(e.message)

    @staticmethod
    def _document(
        doc: Doc,
        role: str,
        value: str,
        mapping: Any,
        attached: Mapping[str, str] | None,
        recorded: Mapping[str, str] | None,
    ) -> tuple[str, str, Any]:
        """The document an ``x-import`` key names (shown name, text, parsed): attached to a request,
        recorded in a decision record, a file, or found in a local cache.
        """
        if attached is not None:
            return value, attached[value], _attached_document(attached[value], value)
        if recorded is not None and recorded.get("value") == value:
            return recorded["file"], recorded["text"], I.parse_document(recorded["text"], recorded["file"])
        if role == "path":
            base = Path(doc.file).parent if doc.file and not doc.file.startswith("<") else Path(".")
            target = Path(value).expanduser()
            target = target if target.is_absolute() else base / target
            shown = target.as_posix()
        else:
            assert mapping.locate is not None
            found, shown = I.locate(mapping.locate, value)
            target = found
        document, text = I.read_document(target, shown)
        return shown, text, document

    def _imported(
        self,
        doc: Doc,
        data: Mapping[str, Any],
        inputs: dict[str, InputValue],
        attached: Mapping[str, str] | None,
        documents: Mapping[str, Mapping[str, str]],
        read: list[Mapping[str, str]],
    ) -> list[InputError]:
        """``x-import``: the keys a document named by the object (a path, or a name found in a cache)
        gives, through the import mapping; the file's own keys win. With ``attached`` documents the
        path names one of them, and no cache is searched.
        """
        problems: list[InputError] = []
        for opath, onode in self.objects.items():
            spec = onode.get("x-import")
            mapping = self.imports.get(spec.get("mapping", "")) if spec else None
            if not spec or mapping is None:
                continue
            given = [
                (role, spec[role])
                for role in ("path", "locate")
                if spec.get(role) and _get(data, (*opath, spec[role]))[0]
            ]
            if not given:
                continue
            catalog_key = (onode.get("x-catalog") or {}).get("key")
            if len(given) > 1 or (catalog_key and _get(data, (*opath, catalog_key))[0]):
                keys = [k for _, k in given] + (
                    [catalog_key] if catalog_key and _get(data, (*opath, catalog_key))[0] else []
                )
                problems.append(
                    doc.error(
                        (*opath, keys[1]),
                        f"{'.'.join(opath)}: {' and '.join(keys)} each describe the whole object; give one",
                        f"keep one of {', '.join(keys)} and give any number to change beside it",
                    )
                )
                continue
            role, key = given[0]
            kpath = (*opath, key)
            value = _get(data, kpath)[1]
            if attached is not None:
                refused = _attached_problem(role, str(value), attached)
                if refused:
                    problems.append(doc.error(kpath, f"{'.'.join(kpath)}: {refused[0]}", refused[1]))
                    continue
            try:
                shown, text, document = self._document(
                    doc, role, str(value), mapping, attached, documents.get(".".join(kpath))
                )
                read.append(I.document_entry(".".join(kpath), str(value), shown, text))
                explicit = frozenset(k for k in onode["properties"] if _get(data, (*opath, k))[0])
                got = I.apply_mapping(mapping, document, shown, explicit, text)
            except I.ImportFailure as exc:
                if exc.file:
                    problems.append(
                        InputError(
                            f"{exc.message} (read for {'.'.join(kpath)}, {doc.file}:{doc.where(kpath)[0]})",
                            file=exc.file,
                            line=exc.line,
                            col=exc.col,
                            help=exc.help,
                        )
                    )
                else:
                    problems.append(doc.error(kpath, f"{'.'.join(kpath)}: {exc.message}", exc.help))
                continue
            line = doc.where(kpath)[0]
            for k, (v, detail) in got.values.items():
                path = (*opath, k)
                attr = self.attr_of[path]
                if attr in inputs:
                    continue
                node = self.leaves[path]
                if node.get("x-quantity"):
                    q = parse_quantity(v)
                    v = q if q is not None else v
                bad = self._leaf_problem(path, v)
                if bad:
                    problems.append(
                        doc.error(
                            kpath,
                            f"{'.'.join(path)} from {detail}: {v!r} {bad}",
                            f"give {'.'.join(path)} beside {key} to override it ({got.entry.name})",
                        )
                    )
                    continue
                inputs[attr] = InputValue(v, "config", detail, line)
        return problems

    def _inferred(self, doc: Doc, inputs: dict[str, InputValue]) -> list[InputError]:
        """``x-infer``: inputs the workload leaves out, inferred from the ones it has."""
        spec = self.inferences.get(self.schema.get("x-infer", ""))
        if spec is None:
            return []
        paths = {a: p for p, a in self.attr_of.items()}

        def check_value(step: I.Step, value: Any) -> str | None:
            return self._leaf_problem(paths[step.target], value)

        got, failed = I.infer(
            spec,
            {a: iv.value for a, iv in inputs.items()},
            lambda a: a not in inputs or inputs[a].origin == "default",
            check_value,
        )
        for attr, (value, because) in got.items():
            inputs[attr] = InputValue(value, "inferred", because)
        problems = []
        for step, why in failed:
            path = paths[step.target]
            problems.append(
                doc.error(
                    path[:-1] or path,
                    f"{'.'.join(path)} cannot be inferred: {why}",
                    f"give {'.'.join(path)} (inference step '{step.id}', {step.span.file}:{step.span.line})",
                )
            )
        return problems

    def _requirements(self, doc: Doc, inputs: dict[str, InputValue]) -> list[InputError]:
        """The inference file's requirements: what the workload still lacks, or a waiver set in vain."""
        spec = self.inferences.get(self.schema.get("x-infer", ""))
        if spec is None:
            return []
        paths = {a: p for p, a in self.attr_of.items()}
        problems = []
        values = {a: iv.value for a, iv in inputs.items()}
        for c, why in I.failed_checks(spec, values):
            blamed = next((k for k in c.keys if inputs[k].origin == "workload"), c.keys[0])
            where = f" ({inputs[blamed].detail})" if inputs[blamed].origin != "workload" else ""
            problems.append(doc.error(paths.get(blamed, ()), f"{why}{where}", c.help))
        for req, missing, waived in I.unmet(spec, values):
            at = paths.get(req.at or "") or (paths[missing[0]][:-1] if missing else ())
            if missing and not waived:
                names = ", ".join(".".join(paths[m][len(at) :]) or m for m in missing)
                problems.append(doc.error(at, f"{req.message}: missing {names}", req.help, key=bool(at)))
            elif waived and not missing and req.waiver and inputs[req.waiver].origin == "workload":
                wpath = paths[req.waiver]
                problems.append(
                    doc.error(
                        wpath,
                        f"{'.'.join(wpath)} is true, but nothing is missing: {', '.join(req.keys)} are all known",
                        f"remove {'.'.join(wpath)}: the whole need is sized",
                    )
                )
        return problems

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
                if v is None:
                    continue
                bad = self._leaf_problem(path, v)
                ref = (self.leaves[path].get("x-item") or "") if path in self.leaves else ""
                if not bad and ref and ref in catalogs and v not in catalogs[ref].items:
                    bad = f"is not an item of catalog '{ref}'"
                if bad:
                    problems.append(
                        InputError(
                            f"{'.'.join(path)} from {spec['catalog']} '{item.id}': {v!r} {bad}",
                            file=item.file,
                            line=item.line,
                            help=f"fix the catalog item's '{prop}' ({self.leaves[path].get('description', '')})",
                        )
                    )
                    continue
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
                        f"remove {'.'.join(path)}, or change {attr}"
                        if inputs[attr].origin == "workload"
                        # a value the file did not write (a catalog item's field, an inferred one): say where it is from
                        else f"remove {'.'.join(path)}, or change what gives {attr} its value: {inputs[attr].detail}",
                    )
                )
        return out

    def _path_of(self, attr: str) -> tuple[str, ...] | None:
        return next((p for p, a in self.attr_of.items() if a == attr), None)


def _attached_problem(role: str, name: str, attached: Mapping[str, str]) -> tuple[str, str] | None:
    """Why an imported document cannot be had from the attached ones (message, help), or None."""
    if role != "path":
        return (
            f"{name!r} would be looked up in a local cache, which is not read here",
            "attach the document itself to the request and name it where the workload names this one",
        )
    if name not in attached:
        given = ", ".join(sorted(attached)) or "none"
        return (
            f"{name!r} is not a document attached to the request (attached: {given}); no file is read from disk here",
            "attach the document to the request and name it by the name it was attached under",
        )
    return None


def _attached_document(text: str, shown: str) -> dict[str, Any]:
    """An attached JSON document, read as a file of its kind is (within a rule file's limits, strictly)."""
    try:
        data = parse_json(text, shown, "rules")
    except InputError as exc:
        d = exc.diagnostics[0]
        raise I.ImportFailure(d.message, d.help or "give a JSON file", file=shown, line=d.line, col=d.col) from None
    if not isinstance(data, dict):
        raise I.ImportFailure(
            f"{shown} holds a JSON {type(data).__name__}, not an object", "give a JSON object", file=shown
        )
    return data


_ATTR_TYPES = ("number", "integer", "string", "boolean", "list", "record", "scalar")
_ANNOTATIONS: dict[str, type | tuple[type, ...]] = {
    "x-attribute": str,
    "x-quantity": bool,
    "x-item": str,
    "x-at-most": str,
    "x-default-source": str,
    "x-unit": str,
    "x-report": bool,
    "x-type": str,
    "description": str,
}


def check_schema(schema: Any, file: str, text: str) -> None:
    """The workload schema is a JSON Schema object whose annotations have the shapes the engine reads;
    an input error at the first place where it is not.
    """
    problem = _schema_problem(schema)
    if problem is None and not _plainly_valid(schema):
        import jsonschema  # the slowest import there is: only for a schema outside the quick subset

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            problem = (tuple(error.absolute_path), f"not a valid JSON Schema: {error.message[:200]}")
    if problem is None:
        return
    path, message = problem
    try:
        doc: Doc | None = parse(text, file)
    except InputError:  # pragma: no cover - JSON that is not also YAML: no positions
        doc = None
    line, col = doc.where(path) if doc else (1, 1)
    raise InputError(
        f"the workload schema: {message}" + (f" (at {'.'.join(map(str, path))})" if path else ""),
        file=file,
        line=line,
        col=col,
        snippet=doc.line_text(line) if doc else None,
        help="start from the shipped knowledge/workload.schema.json; gpusizer reads its x- annotations",
    )


def _plainly_valid(schema: Any) -> bool:
    """Whether the schema keeps to the subset of JSON Schema in ``json-schema-subset.schema.json``
    and its patterns compile: then it is valid under JSON Schema 2020-12's meta-schema as well
    (``tests/test_fastcheck.py`` holds the subset to it), and the meta-schema check, which costs
    more than loading the rest of the knowledge, is not needed.
    """
    if not valid(schema, engine_schema("json-schema-subset")):
        return False
    todo = [schema]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        if "pattern" in node:
            try:
                re.compile(node["pattern"])
            except re.error:
                return False
        todo += node.get("properties", {}).values()
        todo += [node[k] for k in _SUBSCHEMAS if k in node]
        todo += [s for k in ("allOf", "anyOf", "oneOf") for s in node.get(k, ())]
    return True


_SUBSCHEMAS = ("additionalProperties", "items", "not", "propertyNames", "contains", "if", "then", "else")


def _schema_problem(schema: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The first part of the schema the engine cannot read, or None."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        return ((), "it must be a JSON Schema object with type: object and properties")
    todo: list[tuple[tuple[str | int, ...], Any]] = [(("properties", k), v) for k, v in schema["properties"].items()]
    while todo:
        path, node = todo.pop(0)
        if not isinstance(node, dict):
            return (path, f"each property must be a schema object, not {type(node).__name__}")
        for key, kind in _ANNOTATIONS.items():
            if key in node and not isinstance(node[key], kind):
                return ((*path, key), f"'{key}' must be {getattr(kind, '__name__', kind)}")
        if "x-type" in node and node["x-type"] not in _ATTR_TYPES:
            return ((*path, "x-type"), f"'x-type' must be one of {', '.join(_ATTR_TYPES)}")
        spec = node.get("x-catalog")
        if spec is not None and not (
            isinstance(spec, dict) and isinstance(spec.get("catalog"), str) and isinstance(spec.get("key"), str)
        ):
            return ((*path, "x-catalog"), "'x-catalog' must be {catalog: <name>, key: <property>}")
        when = node.get("x-only-when")
        if when is not None and not (
            isinstance(when, dict) and all(isinstance(k, str) and isinstance(v, list) for k, v in when.items())
        ):
            return ((*path, "x-only-when"), "'x-only-when' must map attribute names to lists of values")
        if node.get("type") == "object" and "properties" in node:
            if not isinstance(node["properties"], dict):
                return ((*path, "properties"), "'properties' must be a mapping")
            todo.extend(((*path, "properties", k), v) for k, v in node["properties"].items())
    return None


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
