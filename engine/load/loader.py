"""Read a rulebase from disk: knowledge, attributes, bases and rules, overlays applied.

Every file is read once; its bytes are fingerprinted and parsed from those same bytes. The
product, :class:`Loaded`, holds the rules as IR; planning (``engine.plan``) resolves names and
orders them.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import InputError, Problems, hint
from ..lang.ir import Attribute, Catalog, Formula, InputValue, Rule
from .attributes import ATTRIBUTES_FILE, load_attributes
from .imports import ImportMapping, Inference, load_import, load_inference
from .knowledge import kind_of, load_catalog, load_constants, load_formulas
from .limits import Limits, limits
from .resources import data_dir
from .rules import BASE_SUFFIX, Base, load_base, load_rule
from .schema import check, engine_schema
from .workload import InputSchema, check_schema
from .yamlsrc import Doc, decode, parse, parse_json, read_bytes

OVERLAY_FILE = "_overlay.yaml"
GUIDANCE_FILE = "_guidance.yaml"
WORKLOAD_SCHEMA = "workload.schema.json"
TEST_SUFFIX = ".test.yaml"


@dataclass(frozen=True)
class Loaded:
    """Everything read from the rule and knowledge directories, as typed values."""

    rule_dirs: tuple[Path, ...]
    knowledge_dirs: tuple[Path, ...]
    attributes: Mapping[str, Attribute]
    catalogs: Mapping[str, Catalog]
    constants: Mapping[str, InputValue]
    rules: Mapping[str, Rule]  # in load order: a later directory's rules come later
    inputs: InputSchema
    files: Mapping[str, str]  # display path -> sha256 of its bytes
    sha256: str
    overlays: tuple[Mapping[str, Any], ...] = ()
    imports: Mapping[str, ImportMapping] = field(default_factory=dict)
    inferences: Mapping[str, Inference] = field(default_factory=dict)
    formulas: Mapping[str, Formula] = field(default_factory=dict)


class ParseCache:
    """Parsed rulebase files by shown name, bytes (their sha256) and limits, the least recently used
    dropped past ``size``: a process that loads several rulebases over the same files (a test run, a
    program laying overlays over the shipped rules through the API) parses each file once. Loading
    never changes a parsed document (tests/test_engine.py holds it to that), so one serves every load.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._docs: OrderedDict[tuple[str, str, Limits], Doc] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, Limits]) -> Doc | None:
        """The document parsed from that file, if kept."""
        with self._lock:
            doc = self._docs.get(key)
            if doc is not None:
                self._docs.move_to_end(key)
            return doc

    def put(self, key: tuple[str, str, Limits], doc: Doc) -> None:
        """Keep a parsed document, dropping the least recently used past the bound."""
        with self._lock:
            self._docs[key] = doc
            while len(self._docs) > self.size:
                self._docs.popitem(last=False)

    def clear(self) -> None:
        """Forget every parsed document."""
        with self._lock:
            self._docs.clear()


# Several rulebases' files (the shipped one has about 400 parsed files, some 15 MB of documents)
PARSED = ParseCache(1024)


@dataclass
class _Reader:
    """Reads each file once; remembers its hash; collects errors instead of stopping at the first."""

    roots: dict[str, int]
    limits: Limits  # what every file is read and parsed under
    parsed: ParseCache | None = None  # where a parsed file is looked up and kept, if anywhere
    errors: list[InputError] = field(default_factory=list)
    raw: dict[str, bytes] = field(default_factory=dict)
    sha: dict[str, str] = field(default_factory=dict)  # of each file read, taken once
    hashes: dict[str, str] = field(default_factory=dict)  # of the files the rulebase's hash counts
    listed: dict[Path, list[Path]] = field(default_factory=dict)  # root -> its files, listed once
    names: dict[tuple[Path, Path], str] = field(default_factory=dict)  # (file, root) -> shown name

    def files(self, root: Path) -> list[Path]:
        """The YAML and JSON files under a root, sorted; the tree is walked once per load."""
        found = self.listed.get(root)
        if found is None:
            found = self.listed[root] = _files(root)
        return found

    def key(self, path: Path, root: Path) -> str:
        return f"{self.roots[str(root)]}:{self.shown(path, root)}"

    def shown(self, path: Path, root: Path) -> str:
        name = self.names.get((path, root))
        if name is None:
            name = self.names[(path, root)] = f"{root.name}/{path.relative_to(root).as_posix()}"
        return name

    def take(self, path: Path, root: Path) -> None:
        """Read the bytes now, so that the fingerprint and the parse see the same file."""
        k = self.key(path, root)
        try:
            raw = self.raw[k] = read_bytes(path, self.shown(path, root))
        except InputError as exc:
            self.errors.append(exc)
            return
        self.sha[k] = hashlib.sha256(raw).hexdigest()

    def count(self, k: str) -> str:
        """Count a file read in the rulebase's hash; its sha256."""
        sha = self.hashes[k] = self.sha[k]
        return sha

    def hash_only(self, path: Path, root: Path) -> None:
        """Count a file in the rulebase's hash without parsing it (rule test files)."""
        k = self.key(path, root)
        if k in self.raw:
            self.count(k)

    def doc(self, path: Path, root: Path) -> Doc | None:
        k = self.key(path, root)
        raw = self.raw.get(k)
        if raw is None:
            return None
        sha = self.count(k)
        shown = self.shown(path, root)
        key = (shown, sha, self.limits)
        doc = self.parsed.get(key) if self.parsed is not None else None
        if doc is not None:
            return doc
        try:
            doc = parse(decode(raw, shown), shown)
        except InputError as exc:
            self.errors.append(exc)
            return None
        if self.parsed is not None:
            self.parsed.put(key, doc)
        return doc


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".yaml", ".json"))


def overlay_files(
    rule_dirs: Sequence[Path], knowledge_dirs: Sequence[Path], files: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The files of every directory laid over the shipped ones, as the rulebase's hash counted them:
    per directory its kind, name and files (path, sha256, text), read again and checked against the
    hash taken when they were loaded (an InputError if one changed since).
    """
    shipped = {data_dir("rules").resolve(), data_dir("knowledge").resolve()}
    out: list[dict[str, Any]] = []
    roots = [("rules", d) for d in rule_dirs] + [("knowledge", d) for d in knowledge_dirs]
    for index, (kind, root) in enumerate(roots):
        if Path(root).resolve() in shipped:
            continue
        prefix = f"{index}:{Path(root).name}/"
        entries = []
        for key, sha in files.items():
            if not key.startswith(prefix):
                continue
            rel = key[len(prefix) :]
            shown = f"{Path(root).name}/{rel}"
            raw = read_bytes(Path(root) / rel, shown)
            if hashlib.sha256(raw).hexdigest() != sha:
                raise InputError(
                    "the file changed after the rulebase was loaded",
                    file=shown,
                    help="run the command again, and keep overlay files unchanged while it runs",
                )
            entries.append({"path": rel, "sha256": sha, "text": decode(raw, shown)})
        out.append({"kind": kind, "name": Path(root).name, "files": entries})
    return out


@dataclass(frozen=True)
class Read:
    """The rule and knowledge directories' files, read but not yet parsed (``read_rulebase_files``)."""

    rule_dirs: tuple[Path, ...]
    knowledge_dirs: tuple[Path, ...]
    reader: _Reader

    def fingerprint(self) -> str | None:
        """A digest of everything a load's result depends on: the directories as given (a rulebase
        keeps them), each file's shown name and bytes, and the limits the environment sets; None
        when a file could not be read (the load reports it).
        """
        if self.reader.errors:
            return None
        digest = hashlib.sha256()
        dirs = [str(d) for d in self.rule_dirs] + ["\0"] + [str(d) for d in self.knowledge_dirs]
        digest.update(repr((dirs, self.reader.limits)).encode())
        for key, sha in sorted(self.reader.sha.items()):
            digest.update(f"\n{key}\0{sha}".encode())
        return digest.hexdigest()


def read_rulebase_files(
    rule_dirs: Sequence[Path | str] | None = None, knowledge_dirs: Sequence[Path | str] | None = None
) -> Read:
    """Read every file of the rule and knowledge directories (the shipped ones by default), once: what
    ``load_rulebase_files`` parses. A missing directory or a bad limit variable raises an InputError; a
    file that cannot be read is one of the load's errors.
    """
    rdirs = tuple(Path(p) for p in (rule_dirs or [data_dir("rules")]))
    kdirs = tuple(Path(p) for p in (knowledge_dirs or [data_dir("knowledge")]))
    for d in rdirs + kdirs:
        if not d.is_dir():
            raise InputError(
                "directory not found", file=str(d), help="give an existing directory with --rules / --knowledge"
            )
    # a bad GPUSIZER_MAX_* variable is one error, not one per file
    reader = _Reader({str(r): i for i, r in enumerate(rdirs + kdirs)}, limits())
    for root in rdirs + kdirs:
        for path in reader.files(root):
            reader.take(path, root)
    return Read(rdirs, kdirs, reader)


def load_rulebase_files(
    rule_dirs: Sequence[Path | str] | None = None,
    knowledge_dirs: Sequence[Path | str] | None = None,
    *,
    read: Read | None = None,
    parsed: ParseCache | None = None,
) -> Loaded:
    """Load the rule and knowledge directories (the shipped ones by default), later ones laid over
    earlier ones; raises an InputError (or Problems) naming file:line for anything wrong. ``read``:
    their files as ``read_rulebase_files`` read them (not read again); ``parsed``: where parsed files
    are looked up and kept.
    """
    if read is None:
        read = read_rulebase_files(rule_dirs, knowledge_dirs)
    rdirs, kdirs, reader = read.rule_dirs, read.knowledge_dirs, read.reader
    reader.parsed = parsed

    attributes: dict[str, Attribute] = {}
    constants: dict[str, InputValue] = {}
    overlays: list[Mapping[str, Any]] = []
    imports: dict[str, ImportMapping] = {}
    inferences: dict[str, Inference] = {}
    formulas: dict[str, Formula] = {}
    catalogs = _knowledge(reader, kdirs, attributes, constants, overlays, imports, inferences, formulas)
    inputs = _workload_schema(reader, kdirs)
    reader.errors.extend(inputs.attach(imports, inferences))
    for a in inputs.attributes():
        attributes.setdefault(a.name, a)
    for root in rdirs:
        path = root / ATTRIBUTES_FILE
        if path.is_file():
            doc = reader.doc(path, root)
            if doc is not None:
                load_attributes(doc, attributes, reader.errors)
    if reader.errors:
        raise Problems(reader.errors)
    bases = _bases(reader, rdirs)
    rules = _rules(reader, rdirs, attributes, bases, overlays, frozenset(formulas))
    if reader.errors:
        raise Problems(reader.errors)
    digest = hashlib.sha256()
    for name in sorted(reader.hashes):
        digest.update(f"{name}\0{reader.hashes[name]}\n".encode())
    return Loaded(
        rule_dirs=rdirs,
        knowledge_dirs=kdirs,
        attributes=MappingProxyType(attributes),
        catalogs=MappingProxyType(catalogs),
        constants=MappingProxyType(constants),
        rules=MappingProxyType(rules),
        inputs=inputs,
        files=MappingProxyType(dict(sorted(reader.hashes.items()))),
        sha256=digest.hexdigest(),
        overlays=tuple(overlays),
        imports=MappingProxyType(imports),
        inferences=MappingProxyType(inferences),
        formulas=MappingProxyType(formulas),
    )


def _knowledge(
    reader: _Reader,
    kdirs: tuple[Path, ...],
    attributes: dict[str, Attribute],
    constants: dict[str, InputValue],
    overlays: list[Mapping[str, Any]],
    imports: dict[str, ImportMapping],
    inferences: dict[str, Inference],
    formulas: dict[str, Formula],
) -> dict[str, Catalog]:
    catalogs: dict[str, Catalog] = {}
    home: dict[str, Path] = {}
    for n, root in enumerate(kdirs):
        for path in reader.files(root):
            if path.suffix != ".yaml":
                continue
            doc = reader.doc(path, root)
            if doc is None:
                continue
            kind = kind_of(doc)
            if kind == "constants":
                load_constants(doc, reader.errors, attributes, constants)
                continue
            if kind == "formulas":
                load_formulas(doc, reader.errors, formulas)
                continue
            if kind == "import":
                name = doc.data.get("import")
                mapping = load_import(doc, reader.errors, imports.get(name) if isinstance(name, str) else None)
                if mapping is not None:
                    imports[mapping.name] = mapping
                continue
            if kind == "infer":
                name = doc.data.get("infer")
                spec = load_inference(doc, reader.errors, inferences.get(name) if isinstance(name, str) else None)
                if spec is not None:
                    inferences[spec.name] = spec
                continue
            if kind is None:
                reader.errors.append(
                    InputError(
                        "a knowledge file must be a mapping with catalog, fields and "
                        "items (or a constants file with 'constants', a formulas file with 'formulas', "
                        "an import mapping with 'import', an inference file with 'infer')",
                        file=doc.file,
                        line=1,
                        col=1,
                        help="see knowledge/gpus.yaml",
                    )
                )
                continue
            name = doc.data.get("catalog")
            earlier = catalogs.get(name) if isinstance(name, str) else None
            if earlier is not None and home[name] == root:
                reader.errors.append(
                    doc.error(
                        ("catalog",),
                        f"catalog '{name}' is defined twice (also in {earlier.file})",
                        "merge the two files",
                    )
                )
                continue
            cat = load_catalog(doc, reader.errors, earlier, overlay=root.name if n > 0 else None)
            if cat is None:
                continue
            if earlier is not None:
                overlays.append(
                    {
                        "name": root.name,
                        "kind": "knowledge",
                        "catalog": cat.name,
                        "items": sorted(i["id"] for i in doc.data["items"]),
                    }
                )
            else:
                home[cat.name] = root
            catalogs[cat.name] = cat
    return catalogs


def _workload_schema(reader: _Reader, kdirs: tuple[Path, ...]) -> InputSchema:
    found = [(root / WORKLOAD_SCHEMA, root) for root in kdirs if (root / WORKLOAD_SCHEMA).is_file()]
    if not found:
        raise InputError(
            f"no {WORKLOAD_SCHEMA} in the knowledge directories",
            file=", ".join(map(str, kdirs)),
            help="the knowledge directory must hold the workload JSON Schema",
        )
    path, root = found[-1]
    k = reader.key(path, root)
    shown = reader.shown(path, root)
    raw = reader.raw.get(k)
    if raw is None:
        raise Problems(reader.errors)
    reader.count(k)
    text = decode(raw, shown)
    schema = parse_json(text, shown, "rules")
    check_schema(schema, shown, text)
    return InputSchema(schema, shown)


def _bases(reader: _Reader, rdirs: tuple[Path, ...]) -> dict[str, Base]:
    bases: dict[str, Base] = {}
    for root in rdirs:
        for path in reader.files(root):
            if path.name.endswith(BASE_SUFFIX):
                doc = reader.doc(path, root)
                if doc is not None:
                    base = load_base(doc, path.name[: -len(BASE_SUFFIX)], reader.errors)
                    if base is not None:
                        bases[base.name] = base
    return bases


def _is_rule_file(path: Path) -> bool:
    name = path.name
    return (
        path.suffix == ".yaml"
        and not name.startswith("_")
        and not name.endswith(TEST_SUFFIX)
        and not name.endswith(BASE_SUFFIX)
    )


def _rules(
    reader: _Reader,
    rdirs: tuple[Path, ...],
    attributes: Mapping[str, Attribute],
    bases: Mapping[str, Base],
    overlays: list[Mapping[str, Any]],
    formulas: frozenset[str] = frozenset(),
) -> dict[str, Rule]:
    """Rules by id; a later directory adds rules, replaces one by id, or disables some (_overlay.yaml)."""
    rules: dict[str, Rule] = {}
    for n, root in enumerate(rdirs):
        here: set[str] = set()
        note: dict[str, Any] = {"name": root.name, "kind": "rules", "added": [], "replaced": [], "disabled": []}
        for path in reader.files(root):
            if not _is_rule_file(path):
                continue
            mark = len(reader.errors)
            doc = reader.doc(path, root)
            if doc is None:
                _tag(reader.errors, mark, path.stem)
                continue
            rel = path.relative_to(root)
            test = path.with_name(path.stem + TEST_SUFFIX)
            has_test = test.is_file()
            if has_test:
                reader.hash_only(test, root)  # its cases are part of the rulebase; they are read by 'test'
            rule = load_rule(
                doc,
                path.stem,
                rel.parts[0] if len(rel.parts) > 1 else "",
                attributes,
                bases,
                reader.errors,
                overlay=root.name if n > 0 else None,
                test_file=str(test) if has_test else None,
                formulas=formulas,
            )
            _tag(reader.errors, mark, path.stem)
            if rule is None:
                continue
            if rule.id in here:
                reader.errors.append(
                    doc.error(
                        ("id",),
                        f"duplicate rule id '{rule.id}' (also in {rules[rule.id].file})",
                        "rule ids are unique and permanent; rename the new rule",
                    )
                )
                _tag(reader.errors, len(reader.errors) - 1, rule.id)
                continue
            here.add(rule.id)
            if n > 0:
                note["replaced" if rule.id in rules else "added"].append(rule.id)
            rules[rule.id] = rule
        overlay_file = root / OVERLAY_FILE
        if overlay_file.is_file():
            doc = reader.doc(overlay_file, root)
            if doc is not None:
                _apply_overlay(doc, rules, here, note, reader.errors)
        if n > 0:
            overlays.append(note)
    return rules


def _tag(errors: list[InputError], start: int, rule: str) -> None:
    """Name the rule in the errors found while reading its file (validate reports it)."""
    for i in range(start, len(errors)):
        errors[i] = InputError(diagnostics=[replace(d, rule=d.rule or rule) for d in errors[i].diagnostics])


def _apply_overlay(
    doc: Doc, rules: dict[str, Rule], here: set[str], note: dict[str, Any], errors: list[InputError]
) -> None:
    found = check(doc, engine_schema("overlay"), "an overlay file")
    if found:
        errors.extend(found)
        return
    note["name"] = doc.data.get("name", note["name"])
    for i, rid in enumerate(doc.data.get("disable", [])):
        if rid in here:
            errors.append(
                doc.error(
                    ("disable", i),
                    f"'{rid}' is defined in this same directory; an overlay disables rules of earlier directories",
                    "remove the rule file instead",
                )
            )
        elif rid not in rules:
            errors.append(
                doc.error(
                    ("disable", i),
                    f"cannot disable unknown rule '{rid}'",
                    f"{hint(rid, rules)}list ids of rules in the directories given before this one",
                )
            )
        else:
            del rules[rid]
            note["disabled"].append(rid)


__all__ = [
    "GUIDANCE_FILE",
    "PARSED",
    "TEST_SUFFIX",
    "Loaded",
    "ParseCache",
    "Read",
    "load_rulebase_files",
    "overlay_files",
    "read_rulebase_files",
]
