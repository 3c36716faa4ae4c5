"""Load, validate and compile a rulebase: attributes, knowledge catalogs, rules."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from . import cache
from . import expr as X
from .compiler import compile_rule
from .errors import GpusizerError, InputError, Problems
from .model import Attribute, Catalog, Field, Item, Rule, Source
from .resources import data_dir
from .validate import check, closest, engine_schema
from .workload import InputSchema
from .yamlsrc import Doc, load

ATTRIBUTES_FILE = "_attributes.yaml"
OVERLAY_FILE = "_overlay.yaml"
WORKLOAD_SCHEMA = "workload.schema.json"
_PY_TYPES = {"integer": (int,), "number": (int, float), "string": (str,), "boolean": (bool,)}


@dataclass
class Rulebase:
    rule_dirs: list
    knowledge_dirs: list
    attributes: dict  # name -> Attribute
    catalogs: dict  # name -> Catalog
    rules: dict  # id -> Rule, sorted by (stratum, id)
    inputs: InputSchema
    strata: int
    sha256: str
    files: dict  # display path -> sha256
    overlays: list = field(default_factory=list)  # what each later directory changed
    graph: object = None  # static graph: node -> its predecessors (attributes and rules)
    writers: dict = field(default_factory=dict)  # attribute -> [rule ids]

    def attribute(self, name: str, where: str = ""):
        """The declared attribute, or an input error naming the closest one (for command-line names)."""
        attr = self.attributes.get(name)
        if attr is None:
            guess = closest(name, self.attributes)
            raise InputError(f"{where}unknown attribute '{name}'",
                             help=(f"did you mean '{guess}'? " if guess else "")
                             + "see the conclusions in 'gpusizer recommend FILE'")
        return attr


def _display(path: Path, root: Path, label: str) -> str:
    try:
        return f"{label}/{path.relative_to(root).as_posix()}"
    except ValueError:  # pragma: no cover
        return str(path)


def _sources(raw) -> list:
    items = raw if isinstance(raw, list) else [raw]
    return [Source(**s) for s in items if isinstance(s, dict)]


def _type_ok(value, t: str) -> bool:
    if t in ("integer", "number") and isinstance(value, bool):
        return False
    if t == "number" and isinstance(value, int):
        return True
    return isinstance(value, _PY_TYPES[t])


def _load_catalog(doc: Doc, errors: list, trusted: bool = False, earlier: dict | None = None) -> Catalog | None:
    found = [] if trusted else check(doc, engine_schema("knowledge"), "a knowledge catalog")
    if found:
        errors.extend(found)
        return None
    data = doc.data
    fields = {n: Field(name=n, type=f["type"], description=f["description"], unit=f.get("unit"),
                       enum=f.get("enum"), required=f.get("required", False))
              for n, f in data["fields"].items()}
    base = (earlier or {}).get(data["catalog"])
    declared = dict(base.fields, **fields) if base else fields
    items = {}
    for i, raw in enumerate(data["items"]):
        path = ("items", i)
        if raw["id"] in items:
            errors.append(doc.error(path + ("id",), f"duplicate item id '{raw['id']}' in catalog '{data['catalog']}'",
                                    "ids are unique within a catalog; rename one"))
            continue
        values = {}
        for key, value in raw.items():
            if key in ("id", "name", "source", "note"):
                continue
            f = declared.get(key)
            if f is None:
                guess = closest(key, declared)
                errors.append(doc.error(path + (key,), f"field '{key}' is not declared in catalog '{data['catalog']}'",
                                        (f"did you mean '{guess}'? " if guess else "")
                                        + "declare it under 'fields:' at the top of the file", key=True))
                continue
            if value is None:
                continue
            if not _type_ok(value, f.type):
                errors.append(doc.error(path + (key,), f"'{key}' must be {f.type}, not {value!r}",
                                        f.description))
                continue
            if f.enum and value not in f.enum:
                errors.append(doc.error(path + (key,), f"'{key}': {value!r} is not one of {', '.join(map(str, f.enum))}",
                                        "use one of the declared values or extend the field's enum"))
                continue
            values[key] = value
        for f in ([] if base else fields.values()):
            if f.required and f.name not in values:
                errors.append(doc.error(path, f"item '{raw['id']}' lacks required field '{f.name}'",
                                        f.description))
        line, _ = doc.where(path)
        items[raw["id"]] = Item(catalog=data["catalog"], id=raw["id"], name=raw["name"], fields=values,
                                sources=_sources(raw["source"]), file=doc.file, line=line,
                                note=raw.get("note"))
    return Catalog(name=data["catalog"], description=data["description"], fields=fields, items=items,
                   file=doc.file, sources=_sources(data["source"]) if data.get("source") else [])


def _load_attributes(doc: Doc, attributes: dict, errors: list, trusted: bool = False) -> None:
    found = [] if trusted else check(doc, engine_schema("attributes"), "the attribute declarations")
    if found:
        errors.extend(found)
        return
    for name, a in doc.data["attributes"].items():
        line, _ = doc.where(("attributes", name), key=True)
        # a later directory may redeclare an attribute (its file is read after); inputs are fixed
        if name in attributes and attributes[name].input:
            errors.append(doc.error(("attributes", name), f"'{name}' is a workload input "
                                    f"(declared by {attributes[name].file}); rules cannot redeclare it",
                                    "pick another name for the concluded attribute", key=True))
            continue
        combine = a.get("combine", "single")
        if combine in ("argmin", "argmax") and (a["type"] != "record" or not a.get("key")):
            errors.append(doc.error(("attributes", name), f"'{combine}' needs type: record and a 'key' field",
                                    "e.g. type: record, combine: argmin, key: cost", key=True))
        if combine in ("max", "min", "sum") and a["type"] not in ("number", "integer"):
            errors.append(doc.error(("attributes", name), f"'{combine}' needs a number attribute",
                                    "use type: number, or another combine policy", key=True))
        if a.get("first_by") and combine not in ("argmin", "argmax"):
            errors.append(doc.error(("attributes", name, "first_by"), "'first_by' needs combine: argmin or argmax",
                                    "remove it, or pick records with argmin / argmax", key=True))
        if combine == "union" and a["type"] != "list":
            errors.append(doc.error(("attributes", name), "'union' needs type: list",
                                    "use type: list", key=True))
        attributes[name] = Attribute(name=name, type=a["type"], description=a["description"],
                                     unit=a.get("unit"), combine=combine, key=a.get("key"), first_by=a.get("first_by"),
                                     enum=a.get("enum"), report=a.get("report", True), headline=a.get("headline", False),
                                     file=doc.file, line=line)


def _load_rule(doc: Doc, path: Path, area: str, errors: list, trusted: bool = False) -> Rule | None:
    if not isinstance(doc.data, dict):
        errors.append(InputError("a rule file must be a mapping (id, summary, when, then, source)",
                                 file=doc.file, line=1, col=1, help="see docs or an existing rule"))
        return None
    found = [] if trusted else check(doc, engine_schema("rule"), "a rule")
    if found:
        errors.extend(found)
        return None
    d = doc.data
    if d["id"] != path.stem:
        errors.append(doc.error(("id",), f"rule id '{d['id']}' does not match its file name '{path.name}'",
                                f"rename the file to {d['id']}.yaml or set id: {path.stem}"))
        return None
    lets, then = {}, {}
    try:
        for name, src in (d.get("let") or {}).items():
            where = ("let", name)
            lets[name] = X.parse(src)
        for name, src in d["then"].items():
            where = ("then", name)
            then[name] = ({k: X.parse(v) for k, v in src.items()} if isinstance(src, dict) else X.parse(src))
    except X.ExprError as exc:
        line, col = doc.where(where)
        errors.append(InputError(f"rule '{d['id']}': {exc.message}", file=doc.file, line=line,
                                 col=(col + exc.col - 1) if col and exc.col else col,
                                 snippet=doc.line_text(line), help=exc.help))
        return None
    return Rule(id=d["id"], summary=d["summary"], file=doc.file, doc=doc, area=area,
                sources=_sources(d["source"]), priority=d.get("priority", 0),
                description=d.get("description"), when=d.get("when") or [], let=lets, then=then,
                writes=list(d["then"]))


def _apply_overlay(doc: Doc, rules: dict, here: set, note: dict, errors: list) -> None:
    found = check(doc, engine_schema("overlay"), "an overlay file")
    if found:
        errors.extend(found)
        return
    note["name"] = doc.data.get("name", note["name"])
    for i, rid in enumerate(doc.data.get("disable", [])):
        if rid in here:
            errors.append(doc.error(("disable", i), f"'{rid}' is defined in this same directory; "
                                    "an overlay disables rules of earlier directories",
                                    "remove the rule file instead"))
        elif rid not in rules:
            guess = closest(rid, rules)
            errors.append(doc.error(("disable", i), f"cannot disable unknown rule '{rid}'",
                                    (f"did you mean '{guess}'? " if guess else "")
                                    + "list ids of rules in the directories given before this one"))
        else:
            del rules[rid]
            note["disabled"].append(rid)


def _yaml_files(root: Path):
    return sorted(p for p in root.rglob("*.yaml") if p.is_file())


def load_rulebase(rule_dirs=None, knowledge_dirs=None) -> Rulebase:
    """Load and compile; raises InputError/Problems naming file:line for anything wrong."""
    rule_dirs = [Path(p) for p in (rule_dirs or [data_dir("rules")])]
    knowledge_dirs = [Path(p) for p in (knowledge_dirs or [data_dir("knowledge")])]
    errors: list[GpusizerError] = []
    hashes: dict[str, str] = {}
    parsed: dict[str, Doc] = {}
    cached_docs: dict = {}

    roots = {str(r): i for i, r in enumerate(rule_dirs + knowledge_dirs)}

    def read(path: Path, root: Path, label: str) -> Doc | None:
        shown = _display(path, root, label)
        key = f"{roots[str(root)]}:{shown}"  # an overlay may share its folder name with the base
        doc = cached_docs.get(key)
        if doc is None:
            try:
                doc = load(path, shown)
            except GpusizerError as exc:
                errors.append(exc)
                return None
        parsed[key] = doc
        hashes[key] = hashlib.sha256(doc.text.encode("utf-8")).hexdigest()
        return doc

    for d in rule_dirs + knowledge_dirs:
        if not d.is_dir():
            raise InputError("directory not found", file=str(d),
                             help="give an existing directory with --rules / --knowledge")
    # a rulebase whose exact bytes already passed validation skips the schema checks
    fingerprint = hashlib.sha256()
    for root in rule_dirs + knowledge_dirs:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".yaml", ".json")):
            fingerprint.update(f"{path.relative_to(root).as_posix()}\0".encode())
            fingerprint.update(path.read_bytes())
    cache_key = cache.key(fingerprint.hexdigest())
    trusted = cache.known(cache_key)
    if trusted:
        cached_docs = cache.load_docs(cache_key)

    # knowledge: catalogs and the workload schema
    overlay_notes: list[dict] = []
    catalogs: dict[str, Catalog] = {}
    cat_root: dict[str, Path] = {}
    schema_path = None
    for root in knowledge_dirs:
        if (root / WORKLOAD_SCHEMA).is_file():
            schema_path = (root / WORKLOAD_SCHEMA, root)
        for path in _yaml_files(root):
            doc = read(path, root, root.name)
            if doc is None:
                continue
            if not isinstance(doc.data, dict):
                errors.append(InputError("a knowledge file must be a mapping with catalog, fields and items",
                                         file=doc.file, line=1, col=1, help="see knowledge/gpus.yaml"))
                continue
            cat = _load_catalog(doc, errors, trusted, catalogs)
            if cat is None:
                continue
            if cat.name in catalogs:
                base = catalogs[cat.name]
                if cat_root[cat.name] == root:
                    errors.append(doc.error(("catalog",), f"catalog '{cat.name}' is defined twice "
                                            f"(also in {base.file})", "merge the two files"))
                    continue
                # a later knowledge directory amends a catalog: new fields, new items, changed values
                base.fields.update(cat.fields)
                for iid, item in cat.items.items():
                    if iid in base.items:
                        old_item = base.items[iid]
                        merged = dict(old_item.fields, **item.fields)
                        base.items[iid] = Item(catalog=cat.name, id=iid, name=item.name, fields=merged,
                                               sources=item.sources + old_item.sources, file=item.file,
                                               line=item.line, note=item.note or old_item.note)
                    else:
                        base.items[iid] = item
                overlay_notes.append({"name": root.name, "kind": "knowledge", "catalog": cat.name,
                                      "items": sorted(cat.items)})
                continue
            catalogs[cat.name] = cat
            cat_root[cat.name] = root
    if schema_path is None:
        raise InputError(f"no {WORKLOAD_SCHEMA} in the knowledge directories",
                         file=", ".join(map(str, knowledge_dirs)),
                         help="the knowledge directory must hold the workload JSON Schema")
    spath, sroot = schema_path
    shown = _display(spath, sroot, sroot.name)
    text = spath.read_text(encoding="utf-8")
    hashes[f"{roots[str(sroot)]}:{shown}"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    try:
        inputs = InputSchema(json.loads(text), shown)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=shown, line=exc.lineno, col=exc.colno,
                         help="fix the JSON syntax") from None

    # attributes: workload inputs plus the declarations beside the rules
    attributes: dict[str, Attribute] = {a.name: a for a in inputs.attributes()}
    for root in rule_dirs:
        path = root / ATTRIBUTES_FILE
        if path.is_file():
            doc = read(path, root, root.name)
            if doc is not None:
                _load_attributes(doc, attributes, errors, trusted)
    if errors:
        raise Problems(errors)

    # rules: a later directory adds rules, replaces one by id, or disables some (_overlay.yaml)
    rules: dict[str, Rule] = {}
    for n, root in enumerate(rule_dirs):
        here: set[str] = set()
        note = {"name": root.name, "kind": "rules", "added": [], "replaced": [],
                "disabled": []}
        for path in _yaml_files(root):
            if path.name.startswith("_") or path.name.endswith(".test.yaml"):
                continue
            doc = read(path, root, root.name)
            if doc is None:
                continue
            rel = path.relative_to(root)
            area = rel.parts[0] if len(rel.parts) > 1 else ""
            rule = _load_rule(doc, path, area, errors, trusted)
            if rule is None:
                continue
            if rule.id in here:
                errors.append(doc.error(("id",), f"duplicate rule id '{rule.id}' (also in {rules[rule.id].file})",
                                        "rule ids are unique and permanent; rename the new rule"))
                continue
            here.add(rule.id)
            test = path.with_name(f"{rule.id}.test.yaml")
            rule.test_file = str(test) if test.is_file() else None
            if test.is_file():
                read(test, root, root.name)
            if n > 0:
                rule.overlay = root.name
                note["replaced" if rule.id in rules else "added"].append(rule.id)
            rules[rule.id] = rule
        overlay_file = root / OVERLAY_FILE
        if overlay_file.is_file():
            doc = read(overlay_file, root, root.name)
            if doc is not None:
                _apply_overlay(doc, rules, here, note, errors)
        if n > 0:
            overlay_notes.append(note)
    for rule in rules.values():
        try:
            rule.variants = compile_rule(rule, attributes, catalogs)
            rule.compiled = rule.variants[0]
        except GpusizerError as exc:
            errors.append(exc)
    if errors:
        raise Problems(errors)

    graph, strata, writers = _stratify(rules, attributes)
    if not trusted:
        cache.save_docs(cache_key, parsed)
        cache.remember(cache_key)
    ordered = dict(sorted(rules.items(), key=lambda kv: (kv[1].stratum, kv[0])))
    digest = hashlib.sha256()
    for name in sorted(hashes):
        digest.update(f"{name}\0{hashes[name]}\n".encode())
    return Rulebase(rule_dirs=rule_dirs, knowledge_dirs=knowledge_dirs, attributes=attributes,
                    catalogs=catalogs, rules=ordered, inputs=inputs, strata=strata,
                    sha256=digest.hexdigest(), files=dict(sorted(hashes.items())), graph=graph,
                    overlays=overlay_notes,
                    writers=writers)


def _stratify(rules: dict, attributes: dict):
    """Strata from the static graph attribute -> rule -> attribute; a cycle is a load error.

    graphlib (stdlib) does the topological sort: networkx's dispatch machinery
    costs tens of milliseconds on first use, and this runs on every start.
    """
    from graphlib import CycleError, TopologicalSorter

    preds: dict = {}
    writers: dict[str, list] = {}
    for rule in rules.values():
        node = ("rule", rule.id)
        preds.setdefault(node, set()).update(("attr", a) for a in rule.reads)
        for a in rule.writes:
            preds.setdefault(("attr", a), set()).add(node)
            writers.setdefault(a, []).append(rule.id)
    try:
        order = list(TopologicalSorter(preds).static_order())
    except CycleError as exc:
        cycle = exc.args[1]
        ids = list(dict.fromkeys(n[1] for n in cycle if n[0] == "rule"))
        attrs = list(dict.fromkeys(n[1] for n in cycle if n[0] == "attr"))
        # blame the rule loaded last (an overlay's, a new file's): it closed the cycle
        loaded = {rid: i for i, rid in enumerate(rules)}
        start = ids.index(max(ids, key=loaded.__getitem__))
        ids = ids[start:] + ids[:start]
        first = rules[ids[0]]
        raise InputError(f"rules form a cycle: {' -> '.join(ids + ids[:1])} "
                         f"(through {', '.join(attrs)})", file=first.file, line=1, col=1,
                         help="a rule cannot depend, directly or through other rules, on its own "
                              "conclusion; split the attribute or remove one dependency") from None
    level: dict = {}
    for node in order:
        below = [level[p] for p in preds.get(node, ())]
        if node[0] == "attr":
            level[node] = max(below, default=0)
        else:
            level[node] = max(below, default=0) + 1
            rules[node[1]].stratum = level[node]
    strata = max((r.stratum for r in rules.values()), default=0)
    return preds, strata, writers
