"""Knowledge that completes a workload before any rule runs: import mappings and input inference.

An **import mapping** (a knowledge file with ``import: NAME``) turns a JSON document into workload
keys. The workload schema says which object may name such a document (``x-import``): by a path
relative to the workload file, or by a name found in a local cache (``locate``: the name's form as
a template of name segments, and folder templates with ``{env.VAR}`` and ``{home}`` placeholders;
never the network). The document's ``select`` field
picks one entry; the entry fills the fields the document leaves out (``defaults``), computes named
values (``let``) and gives each workload key a literal (``fixed``) or an expression over the
document's fields (``set``). A key whose expression reads a missing or null field stays unset.

An **inference** (a knowledge file with ``infer: NAME``, named by the schema's ``x-infer``) runs
after the workload, its import, its catalog item and the declared defaults are in: each step sets
one input the workload left out (or only defaulted) from inputs it has, with a ``because`` text that
becomes the input's origin; then each requirement refuses the workload if inputs it needs are still
unknown, unless its waiver input is set.

Both are domain-free here: the field names, the formulas and the cache layout are in the knowledge
files. Expressions are the rule language's (``expr``).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, overload

from ..errors import InputError, hint
from ..lang import expr as X
from ..lang.ir import Source, Span, Value
from .limits import MAX_ENTRIES
from .rules import sources_of
from .schema import check, engine_schema, valid, validator_for
from .yamlsrc import Doc, decode, parse_json, read_bytes

MISSING = object()

# a snapshot folder name as the cache layout writes it (a commit hash); nothing that leaves the folder
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

# -- name templates (locate.pattern) ----------------------------------------------------------------
#
# A name's form is a template, not a regular expression: text with {placeholders}, each standing
# for one name segment. Matching is one pass over the name (no backtracking), so no pattern and no
# name can make it slow.

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
SEGMENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEGMENT_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
MAX_NAME = 1024  # characters of a name matched against a template; a repository id has at most 96 a part


def template_parts(pattern: str) -> list[tuple[str, str]]:
    """A name template as ('text', literal) and ('name', placeholder) parts."""
    parts: list[tuple[str, str]] = []
    at = 0
    for m in _PLACEHOLDER.finditer(pattern):
        if m.start() > at:
            parts.append(("text", pattern[at : m.start()]))
        parts.append(("name", m.group(1)))
        at = m.end()
    if at < len(pattern):
        parts.append(("text", pattern[at:]))
    return parts


def template_problem(pattern: str) -> str | None:
    """What makes a name template ambiguous or unreadable, or None."""
    parts = template_parts(pattern)
    text = "".join(v for k, v in parts if k == "text")
    if any(ch in text for ch in "()[]{}*+?|^$\\"):
        return (
            "it holds characters of a regular expression; a pattern is a template of name segments, "
            "such as '{org}/{name}', not a regular expression"
        )
    names = [v for k, v in parts if k == "name"]
    if not names:
        return "it has no {placeholder}: write the name's form as text with {placeholders}, such as '{org}/{name}'"
    if len(set(names)) != len(names):
        return "a placeholder appears twice"
    if any(n in ("home", "revision") for n in names):
        return "{home} and {revision} are filled by gpusizer, not from the name"
    for (k1, v1), (k2, v2) in itertools.pairwise(parts):
        if k1 == "name" and k2 == "name":
            return f"{{{v1}}} and {{{v2}}} touch: put text between them that a name segment cannot hold, such as '/'"
        if k1 == "name" and k2 == "text" and v2[0] in SEGMENT_CHARS:
            return (
                f"the text after {{{v1}}} starts with '{v2[0]}', which a name segment can hold: the split would be "
                "ambiguous; start it with another character, such as '/'"
            )
    return None


def match_template(pattern: str, name: str) -> dict[str, str] | None:
    """The placeholders' values if ``name`` has the template's form, else None; one pass, no backtracking.

    A placeholder takes a run of letters, digits, '.', '_' and '-' starting with a letter or a digit;
    the text after it starts with a character no segment holds, so the run ends exactly there.
    """
    if len(name) > MAX_NAME:
        return None
    values: dict[str, str] = {}
    pos = 0
    for kind, value in template_parts(pattern):
        if kind == "text":
            if not name.startswith(value, pos):
                return None
            pos += len(value)
            continue
        end = pos
        while end < len(name) and name[end] in SEGMENT_CHARS:
            end += 1
        if end == pos or name[pos] not in _SEGMENT_FIRST:
            return None
        values[value] = name[pos:end]
        pos = end
    return values if pos == len(name) else None


class ImportFailure(Exception):
    """A problem with an imported document; ``file``/``line``/``col`` when it is inside that document."""

    def __init__(
        self, message: str, help: str, file: str | None = None, line: int | None = None, col: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.help = help
        self.file = file
        self.line = line
        self.col = col


# -- the IR ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    """A named expression of an entry or a step (a default, a let): the first of its alternatives
    whose names are all known gives the value.
    """

    name: str
    exprs: tuple[X.Expr | X.Template, ...]  # a template for text with {placeholders}, as a rule's let
    span: Span

    @property
    def names(self) -> frozenset[str]:
        """Every name its alternatives read."""
        return frozenset(n for e in self.exprs for n in e.names)


@dataclass(frozen=True)
class Setter:
    """How an entry gives one workload key: a literal or an expression (with an optional explanation)."""

    key: str
    span: Span
    literal: Value = None
    exprs: tuple[X.Expr, ...] = ()
    explain: X.Template | None = None


@dataclass(frozen=True)
class Check:
    """A refusal: the document (or the workload) is refused, naming ``key``, when the value at ``key``
    does not fit ``schema`` or when ``when`` holds or cannot be computed.
    """

    id: str
    key: str
    help: str
    span: Span
    schema: Mapping[str, Any] | None = None
    when: X.Expr | None = None
    message: X.Template | None = None
    unless_given: str | None = None
    keys: tuple[str, ...] = ()  # an inference check: the inputs it reads, the first given is blamed


@dataclass(frozen=True)
class Entry:
    """One kind of document: the entry its selecting field names."""

    id: str
    name: str
    match: tuple[str, ...]
    span: Span
    sources: tuple[Source, ...] = ()
    within: str | None = None
    outer: tuple[str, ...] = ()
    defaults: tuple[Named, ...] = ()
    lets: tuple[Named, ...] = ()
    setters: tuple[Setter, ...] = ()
    checks: tuple[Check, ...] = ()
    note: str | None = None


@dataclass(frozen=True)
class Locate:
    """Where a named document is found in a local cache."""

    pattern: str
    roots: tuple[str, ...]
    file: str
    span: Span
    revision: str | None = None
    revisions: str | None = None
    example: str | None = None
    help: str | None = None


@dataclass(frozen=True)
class ImportMapping:
    """An import mapping: its entries by id and by selecting value."""

    name: str
    description: str
    file: str
    select: str
    entries: Mapping[str, Entry]
    help: str = ""
    locate: Locate | None = None

    def entry_for(self, value: object) -> Entry | None:
        """The entry whose ``match`` holds ``value``."""
        return next((e for e in self.entries.values() if value in e.match), None)

    @property
    def supported(self) -> list[str]:
        """Every selecting value some entry reads, sorted."""
        return sorted({m for e in self.entries.values() for m in e.match})


@dataclass(frozen=True)
class Step:
    """One inference step."""

    id: str
    target: str
    value: X.Expr
    because: X.Template
    span: Span
    when: X.Expr | None = None
    lets: tuple[Named, ...] = ()
    sources: tuple[Source, ...] = ()

    @property
    def reads(self) -> frozenset[str]:
        """Every input the step reads (its own let names excluded)."""
        own = {n.name for n in self.lets}
        names = set(self.value.names) | set(self.because.names) | (set(self.when.names) if self.when else set())
        for n in self.lets:
            names |= n.names
        return frozenset(names - own)


@dataclass(frozen=True)
class Requirement:
    """Inputs that must be known once the steps have run."""

    id: str
    keys: tuple[str, ...]
    message: str
    help: str
    span: Span
    unless: X.Expr | None = None
    waiver: str | None = None
    at: str | None = None


@dataclass(frozen=True)
class Inference:
    """An inference file: its steps, in order, its requirements and its checks."""

    name: str
    file: str
    steps: tuple[Step, ...]
    requirements: tuple[Requirement, ...] = ()
    checks: tuple[Check, ...] = ()


@dataclass
class Imported:
    """What an import gave: per workload key, its value, how it was found and the document's line."""

    entry: Entry
    document: str
    values: dict[str, tuple[Value, str]] = field(default_factory=dict)


# -- loading --------------------------------------------------------------------------------------


def _parse(doc: Doc, path: tuple[str | int, ...], source: object, errors: list[InputError]) -> X.Expr | None:
    try:
        parsed = X.parse(source)
    except X.ExprError as exc:
        errors.append(doc.error(path, f"expression {source!r}: {exc.message}", exc.help or "fix the expression"))
        return None
    if parsed.reads_catalog:
        errors.append(doc.error(path, f"expression {source!r} reads a catalog", _NO_CATALOG))
        return None
    return parsed


def _template(doc: Doc, path: tuple[str | int, ...], source: str, errors: list[InputError]) -> X.Template | None:
    try:
        parsed = X.parse_template(source)
    except X.ExprError as exc:
        errors.append(doc.error(path, f"text {source!r}: {exc.message}", exc.help or "fix the placeholder"))
        return None
    if parsed.reads_catalog:
        errors.append(doc.error(path, f"text {source!r} reads a catalog", _NO_CATALOG))
        return None
    return parsed


_NO_CATALOG = (
    "the catalog functions (min_in, max_in) are for a rule's 'let' and 'then'; inputs are inferred before any "
    "catalog is read"
)


@overload
def _alternatives(
    doc: Doc, path: tuple[str | int, ...], source: object, errors: list[InputError], *, texts: Literal[False] = False
) -> tuple[X.Expr, ...] | None: ...


@overload
def _alternatives(
    doc: Doc, path: tuple[str | int, ...], source: object, errors: list[InputError], *, texts: Literal[True]
) -> tuple[X.Expr | X.Template, ...] | None: ...


def _alternatives(
    doc: Doc, path: tuple[str | int, ...], source: object, errors: list[InputError], *, texts: bool = False
) -> tuple[X.Expr | X.Template, ...] | None:
    """One expression, or a list of alternatives (the first whose names are known is used). With
    ``texts``, a string with a '{' is text with {placeholders}, as a rule's let is.
    """
    items = source if isinstance(source, list) else [source]
    out: list[X.Expr | X.Template] = []
    for i, s in enumerate(items):
        at = (*path, i) if isinstance(source, list) else path
        e = _template(doc, at, s, errors) if texts and isinstance(s, str) and "{" in s else _parse(doc, at, s, errors)
        if e is None:
            return None
        out.append(e)
    return tuple(out)


def _named(doc: Doc, base: tuple[str | int, ...], raw: Mapping[str, Any], errors: list[InputError]) -> list[Named]:
    """Defaults or lets, each one value or a list of alternatives: a string with a '{' is text with
    {placeholders} (as a rule's let is), anything else an expression.
    """
    out = []
    for name, source in raw.items():
        exprs = _alternatives(doc, (*base, name), source, errors, texts=True)
        if exprs is not None:
            out.append(Named(name, exprs, doc.span((*base, name), key=True)))
    return out


def _merge_named(first: tuple[Named, ...], then: list[Named]) -> tuple[Named, ...]:
    """``first`` in its order with same-named values replaced by ``then``'s, then ``then``'s new ones."""
    mine = {n.name: n for n in then}
    out = [mine.pop(n.name, n) for n in first]
    return (*out, *[n for n in then if n.name in mine])


def _ordered(named: tuple[Named, ...]) -> tuple[Named, ...] | str:
    """The named values in an order where each comes after the ones it reads (written order
    otherwise), or the names of a cycle.
    """
    by_name = {n.name: n for n in named}
    done: dict[str, Named] = {}
    visiting: list[str] = []

    def visit(n: Named) -> str | None:
        if n.name in done:
            return None
        if n.name in visiting:
            return " -> ".join([*visiting[visiting.index(n.name) :], n.name])
        visiting.append(n.name)
        for dep in sorted(n.names):
            if dep in by_name and dep != n.name:
                cycle = visit(by_name[dep])
                if cycle:
                    return cycle
        visiting.pop()
        done[n.name] = n
        return None

    for n in named:
        cycle = visit(n)
        if cycle:
            return cycle
    return tuple(done.values())


def _entry(doc: Doc, i: int, raw: dict[str, Any], known: Mapping[str, Entry], errors: list[InputError]) -> Entry | None:
    path: tuple[str | int, ...] = ("entries", i)
    base: Entry | None = None
    if "extends" in raw:
        base = known.get(raw["extends"])
        if base is None:
            errors.append(
                doc.error(
                    (*path, "extends"),
                    f"entry '{raw['id']}' extends unknown entry '{raw['extends']}'",
                    f"{hint(raw['extends'], known)}an entry can extend one written before it",
                )
            )
            return None
    mark = len(errors)
    defaults = _named(doc, (*path, "defaults"), raw.get("defaults", {}), errors)
    lets = _named(doc, (*path, "let"), raw.get("let", {}), errors)
    setters: dict[str, Setter] = {s.key: s for s in base.setters} if base else {}
    for key, value in raw.get("fixed", {}).items():
        setters[key] = Setter(key, doc.span((*path, "fixed", key), key=True), literal=value)
    for key, value in raw.get("set", {}).items():
        at: tuple[str | int, ...] = (*path, "set", key)
        source, explain = (value.get("value"), value.get("explain")) if isinstance(value, dict) else (value, None)
        exprs = _alternatives(doc, (*at, "value") if isinstance(value, dict) else at, source, errors)
        t = _template(doc, (*at, "explain"), explain, errors) if explain is not None else None
        if exprs is not None:
            setters[key] = Setter(key, doc.span(at, key=True), exprs=exprs, explain=t)
    checks: dict[str, Check] = {c.id: c for c in base.checks} if base else {}
    for j, raw_check in enumerate(raw.get("checks", [])):
        c = _check(doc, (*path, "checks", j), raw_check, errors)
        if c is not None:
            checks[c.id] = c
    if len(errors) > mark:
        return None
    ordered = []
    for what, mine, inherited in (
        ("defaults", defaults, base.defaults if base else ()),
        ("let", lets, base.lets if base else ()),
    ):
        result = _ordered(_merge_named(inherited, mine))
        if isinstance(result, str):
            errors.append(
                doc.error(
                    (*path, what),
                    f"entry '{raw['id']}': {what} read each other in a cycle: {result}",
                    "break the cycle",
                )
            )
            return None
        ordered.append(result)
    return Entry(
        id=raw["id"],
        name=raw["name"],
        match=tuple(raw.get("match", [raw["id"]])),
        span=doc.span(path),
        sources=sources_of(raw["source"]),
        within=raw.get("within", base.within if base else None),
        outer=tuple(raw.get("outer", base.outer if base else ())),
        defaults=ordered[0],
        lets=ordered[1],
        setters=tuple(setters.values()),
        checks=tuple(checks.values()),
        note=raw.get("note"),
    )


def _check(doc: Doc, path: tuple[str | int, ...], raw: Mapping[str, Any], errors: list[InputError]) -> Check | None:
    """A check of an import entry or an inference file, its expression and template parsed."""
    when = _parse(doc, (*path, "when"), raw["when"], errors) if "when" in raw else None
    message = _template(doc, (*path, "message"), raw["message"], errors) if "message" in raw else None
    if ("when" in raw and when is None) or ("message" in raw and message is None):
        return None
    if when is None and "schema" not in raw:
        errors.append(doc.error(path, f"check '{raw['id']}' has neither 'when' nor 'schema'", "give one of them"))
        return None
    if when is not None and message is None:
        errors.append(doc.error(path, f"check '{raw['id']}' has a 'when' and no 'message'", "say what is wrong"))
        return None
    return Check(
        id=raw["id"],
        key=raw.get("key") or (raw.get("keys") or [""])[0],
        help=raw["help"],
        span=doc.span(path),
        schema=raw.get("schema"),
        when=when,
        message=message,
        unless_given=raw.get("unless_given"),
        keys=tuple(raw.get("keys", ())),
    )


def load_import(doc: Doc, errors: list[InputError], earlier: ImportMapping | None = None) -> ImportMapping | None:
    """An import mapping file; ``earlier`` is the same mapping from a knowledge directory given before,
    whose entries this one adds to or replaces (by id).
    """
    found = check(doc, engine_schema("import"), "an import mapping")
    if found:
        errors.extend(found)
        return None
    data = doc.data
    entries: dict[str, Entry] = dict(earlier.entries) if earlier else {}
    mine: set[str] = set()
    for i, raw in enumerate(data["entries"]):
        if raw["id"] in mine:
            errors.append(
                doc.error(("entries", i, "id"), f"duplicate entry id '{raw['id']}'", "ids are unique; rename one")
            )
            continue
        e = _entry(doc, i, raw, entries, errors)
        if e is not None:
            mine.add(e.id)
            entries[e.id] = e
    claimed: dict[str, str] = {}
    for e in entries.values():
        for m in e.match:
            if m in claimed and claimed[m] != e.id:
                errors.append(
                    InputError(
                        f"'{m}' is read by two entries, '{claimed[m]}' and '{e.id}'",
                        file=e.span.file,
                        line=e.span.line,
                        col=e.span.col,
                        help="each selecting value belongs to one entry: remove it from one match list",
                    )
                )
            claimed[m] = e.id
    locate = earlier.locate if earlier else None
    if "locate" in data:
        loc = data["locate"]
        errors.extend(_locate_problems(doc, loc))
        locate = Locate(
            pattern=loc["pattern"],
            roots=tuple(loc["roots"]),
            file=loc["file"],
            span=doc.span(("locate",), key=True),
            revision=loc.get("revision"),
            revisions=loc.get("revisions"),
            example=loc.get("example"),
            help=loc.get("help"),
        )
    return ImportMapping(
        name=data["import"],
        description=data["description"],
        file=earlier.file if earlier else doc.file,
        select=data["select"],
        entries=MappingProxyType(entries),
        help=data.get("help", earlier.help if earlier else ""),
        locate=locate,
    )


def _locate_problems(doc: Doc, loc: Mapping[str, Any]) -> list[InputError]:
    """What in a locate section cannot work: an ambiguous name template, a placeholder nothing
    fills, a path that leaves the cache folder. Found when the knowledge is loaded (so ``validate``
    finds them), never when a workload first names a model.
    """
    out: list[InputError] = []
    why = template_problem(loc["pattern"])
    if why:
        out.append(doc.error(("locate", "pattern"), f"locate.pattern {loc['pattern']!r}: {why}", "e.g. '{org}/{name}'"))
        return out
    captured = {v for k, v in template_parts(loc["pattern"]) if k == "name"}
    allowed = {
        "roots": captured | {"home"},
        "revision": captured,
        "revisions": captured,
        "file": captured | {"revision"},
    }
    for key, names in allowed.items():
        values = loc.get(key)
        if values is None:
            continue
        for i, text in enumerate(values if isinstance(values, list) else [values]):
            where: tuple[str | int, ...] = ("locate", key, i) if isinstance(values, list) else ("locate", key)
            for m in _PLACEHOLDER_ANY.finditer(text):
                ph = m.group(1)
                if ph in names or (key == "roots" and ph.startswith("env.")):
                    continue
                out.append(
                    doc.error(
                        where,
                        f"locate.{key}: {{{ph}}} is filled by nothing",
                        f"use the pattern's placeholders ({', '.join(sorted(names))})"
                        + (", {env.VAR} or {home}" if key == "roots" else ""),
                    )
                )
            if key == "roots":
                continue
            segments = text.replace("\\", "/").split("/")
            if text.startswith(("/", "~")) or ".." in segments or "" in segments or "." in segments:
                out.append(
                    doc.error(
                        where,
                        f"locate.{key} {text!r} is not a plain path inside the cache folder",
                        "write a relative path of folder names and placeholders, without '..', '.', '~' or '//'",
                    )
                )
    return out


_PLACEHOLDER_ANY = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def load_inference(doc: Doc, errors: list[InputError], earlier: Inference | None = None) -> Inference | None:
    """An inference file; a later directory's file with the same name adds steps and requirements
    (a step or requirement with the same id replaces the earlier one in place).
    """
    found = check(doc, engine_schema("infer"), "an inference file")
    if found:
        errors.extend(found)
        return None
    data = doc.data
    mark = len(errors)
    steps: dict[str, Step] = {s.id: s for s in earlier.steps} if earlier else {}
    for i, raw in enumerate(data["steps"]):
        path: tuple[str | int, ...] = ("steps", i)
        value = _parse(doc, (*path, "value"), raw["value"], errors)
        when = _parse(doc, (*path, "when"), raw["when"], errors) if "when" in raw else None
        because = _template(doc, (*path, "because"), raw["because"], errors)
        lets = _named(doc, (*path, "let"), raw.get("let", {}), errors)
        if value is None or because is None or ("when" in raw and when is None):
            continue
        steps[raw["id"]] = Step(
            id=raw["id"],
            target=raw["set"],
            value=value,
            because=because,
            span=doc.span(path),
            when=when,
            lets=tuple(lets),
            sources=sources_of(raw["source"]),
        )
    reqs: dict[str, Requirement] = {r.id: r for r in earlier.requirements} if earlier else {}
    for i, raw in enumerate(data.get("requirements", [])):
        path = ("requirements", i)
        unless = _parse(doc, (*path, "unless"), raw["unless"], errors) if "unless" in raw else None
        reqs[raw["id"]] = Requirement(
            id=raw["id"],
            keys=tuple(raw["keys"]),
            message=raw["message"],
            help=raw["help"],
            span=doc.span(path),
            unless=unless,
            waiver=raw.get("waiver"),
            at=raw.get("at"),
        )
    checks: dict[str, Check] = {c.id: c for c in earlier.checks} if earlier else {}
    for i, raw in enumerate(data.get("checks", [])):
        c = _check(doc, ("checks", i), raw, errors)
        if c is not None:
            checks[c.id] = c
    if len(errors) > mark:
        return None
    return Inference(
        name=data["infer"],
        file=earlier.file if earlier else doc.file,
        steps=tuple(steps.values()),
        requirements=tuple(reqs.values()),
        checks=tuple(checks.values()),
    )


# -- evaluation -----------------------------------------------------------------------------------


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A document's fields by dotted name (nested objects both whole and field by field).

    A key that itself holds a dot is no field: ``"a.b": 1`` at the top is not ``a``'s ``b``
    (transformers sets it as an attribute of that odd name, which nothing reads).
    """
    out: dict[str, Any] = {}
    for k, v in data.items():
        if not isinstance(k, str) or "." in k:
            continue
        name = f"{prefix}{k}"
        out[name] = v
        if isinstance(v, dict):
            out.update(_flatten(v, f"{name}."))
    return out


def _known(value: Any) -> bool:
    return value is not None and value is not MISSING


class _Unknown(Exception):
    """A name an expression reads (on the branch it takes) is unknown or null."""


def evaluate(e: X.Expr | X.Template, env: Mapping[str, Any]) -> Any:
    """The value of an expression over ``env``; MISSING when a name it reads (on the branch it
    takes: ``a if c else b`` reads ``b`` only when ``c`` is false) is unknown or null.
    """

    def resolve(name: str) -> X.Getter:
        def get(_: Any) -> Any:
            v = env.get(name, MISSING)
            if not _known(v):
                raise _Unknown(name)
            return v

        return get

    try:
        return e.bind(resolve)({})
    except _Unknown:
        return MISSING


def first(exprs: Sequence[X.Expr | X.Template], env: Mapping[str, Any]) -> Any:
    """The value of the first alternative whose names are known (and not null), or MISSING."""
    for e in exprs:
        v = evaluate(e, env)
        if _known(v):
            return v
    return MISSING


def _number_text(value: Any) -> str:
    return str(X.FUNCTIONS["text"](value))


def read_json(path: Path, shown: str) -> dict[str, Any]:
    """A JSON object from a file, or an ImportFailure at the file (and line, for a syntax error)."""
    return read_document(path, shown)[0]


def read_document(path: Path, shown: str) -> tuple[dict[str, Any], str]:
    """A JSON object from a file and the text it was parsed from; ImportFailure at the file (and line).

    The file is read as every other input is: a regular file only, within the bounds of a document
    (``limits.py``: those of a rule or knowledge file), as UTF-8, and parsed strictly (no duplicate
    keys, finite numbers, bounded depth, node count and text length).
    """
    if not path.exists() and not path.is_symlink():
        raise ImportFailure(f"{shown}: no such file", "give the path of the document, relative to the workload file")
    try:
        text = decode(read_bytes(path, shown, "document"), shown)
    except InputError as exc:
        d = exc.diagnostics[0]
        raise ImportFailure(d.message, d.help or "give a JSON file", file=shown, line=d.line, col=d.col) from None
    return parse_document(text, shown), text


def parse_document(text: str, shown: str) -> dict[str, Any]:
    """A JSON object from a document's text (read from its file, or carried by a decision record)."""
    try:
        data = parse_json(text, shown, "document")
    except InputError as exc:
        d = exc.diagnostics[0]
        raise ImportFailure(d.message, d.help or "give a JSON file", file=shown, line=d.line, col=d.col) from None
    if not isinstance(data, dict):
        raise ImportFailure(
            f"{shown} holds a JSON {type(data).__name__}, not an object", "give a JSON object", file=shown
        )
    return data


def document_entry(key: str, value: str, shown: str, text: str) -> dict[str, str]:
    """What a decision record keeps of an imported document: the key that named it, how (its
    value), where it was read, its sha256 and its whole text.
    """
    return {
        "key": key,
        "value": value,
        "file": shown,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "text": text,
    }


def _fill(template: str, values: Mapping[str, str]) -> str | None:
    """``{name}`` placeholders replaced; None when one has no value."""
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        v = values.get(m.group(1))
        if v is None:
            missing = True
            return ""
        return v

    out = re.sub(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}", sub, template)
    return None if missing else out


def locate(spec: Locate, name: str, environ: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """The cached document for ``name``, and how it was found; ImportFailure saying where it looked.

    Everything read on the way is bounded: the revision file as a reference (``limits.py``), the
    folder of revisions to its first entries. A file of the cache is never quoted in a message:
    it is not an input the user named, and it may hold anything (a link to the environment).
    """
    environ = os.environ if environ is None else environ
    found = match_template(spec.pattern, name)
    if found is None:
        example = f", e.g. {spec.example}" if spec.example else ""
        raise ImportFailure(f"'{name}' is not a name of the expected form{example}", spec.help or "check the name")
    values = dict(found)
    values.update({f"env.{k}": v for k, v in environ.items() if v})
    values["home"] = str(Path.home())
    root = None
    tried = []
    for r in spec.roots:
        filled = _fill(r, values)
        tried.append(r)
        if filled is not None:
            root = Path(filled).expanduser()
            break
    if root is None:
        raise ImportFailure(f"no cache folder: none of {', '.join(tried)} is set", spec.help or "set one of them")
    shown_roots = ", ".join(re.sub(r"\{env\.(\w+)\}", r"$\1", r).replace("{home}", "~") for r in spec.roots)
    chosen = f"{root} (the first of {shown_roots} that is set)"
    revision = None
    if spec.revision:
        ref_path = _fill(spec.revision, values)
        ref_file = root / ref_path if ref_path else None
        if ref_file is not None and ref_file.is_file():
            try:
                revision = decode(read_bytes(ref_file, str(ref_file), "reference"), str(ref_file)).strip()
            except InputError as exc:
                raise ImportFailure(
                    f"'{name}': the revision file {ref_file} cannot be read: {exc.message}",
                    "repair the cache entry (download the config again) or give the file with model: {config: PATH}",
                ) from None
            if not _REVISION.fullmatch(revision):  # a folder name, never a way out of the cache
                raise ImportFailure(
                    f"'{name}': the revision file {ref_file} does not name a snapshot folder "
                    "(its text, not shown, is not a revision's name)",
                    "repair the cache entry (download the config again) or give the file with model: {config: PATH}",
                )
    if revision is None and spec.revisions:
        folder_name = _fill(spec.revisions, values)
        folder = root / folder_name if folder_name else None
        subs = _subfolders(folder, name) if folder and folder.is_dir() else []
        if len(subs) == 1:
            revision = subs[0]
        elif len(subs) > 1:
            raise ImportFailure(
                f"'{name}': {len(subs)} revisions in {folder} and no revision file naming one",
                spec.help or "keep one revision in the cache",
            )
    if revision is not None:
        values["revision"] = revision
    rel = _fill(spec.file, values)
    path = root / rel if rel else None
    if path is None or not path.is_file():
        # a revision not found is shown as a wildcard, so the path reads as where to put the file
        shown = _fill(spec.file, {"revision": "*", **values})
        where = str(root / shown) if shown else str(root / spec.file)
        raise ImportFailure(
            f"'{name}' is not in the local cache: looked for {where} in the cache folder {chosen}; "
            "nothing is downloaded",
            spec.help or "put the document there, or give its path instead",
        )
    return path, str(path)


def _subfolders(folder: Path, name: str) -> list[str]:
    """The names of a folder's sub-folders that are revisions, sorted; at most MAX_ENTRIES entries are looked at."""
    subs = []
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_ENTRIES:
                    raise ImportFailure(
                        f"'{name}': the folder {folder} has more than {MAX_ENTRIES:,} entries; "
                        "a cache's revisions are few",
                        "remove the stray entries, or give the document with model: {config: PATH}",
                    )
                if _REVISION.fullmatch(entry.name) and entry.is_dir():
                    subs.append(entry.name)
    except OSError as exc:
        raise ImportFailure(
            f"'{name}': cannot list {folder}: {exc.strerror or exc}", "check the cache folder's permissions"
        ) from None
    return sorted(subs)


def apply_mapping(
    mapping: ImportMapping,
    data: Mapping[str, Any],
    shown: str,
    given: frozenset[str] = frozenset(),
    text: str | None = None,
) -> Imported:
    """The workload keys a document gives through its entry; ImportFailure at the document's key when
    one of the entry's checks refuses it (``given``: the keys the workload sets itself, which make a
    check on them moot; ``text``: the document's text, to find a key's line).
    """
    kind = data.get(mapping.select)
    entry = mapping.entry_for(kind)
    if entry is None:
        what = f"{mapping.select} {kind!r}" if kind is not None else f"no {mapping.select}"
        raise ImportFailure(
            f"{shown}: {what} is not supported; supported: {', '.join(mapping.supported)}",
            mapping.help or "give the numbers by hand",
        )
    view = _view(entry, data)
    env: dict[str, Any] = dict(view)
    where = f"{entry.name}, {entry.span.file}:{entry.span.line}"

    def run(exprs: tuple[X.Expr | X.Template, ...], what: str) -> Any:
        try:
            v = first(exprs, env)
        except X.ExprError as exc:
            raise ImportFailure(
                f"{shown}: cannot compute {what} ({' | '.join(e.source for e in exprs)}): {exc.message}",
                f"check the document's fields ({where})",
            ) from None
        if isinstance(v, float) and not math.isfinite(v):
            raise ImportFailure(f"{shown}: {what} is not a finite number", f"check the document's fields ({where})")
        return v

    defaulted: dict[str, str] = {}
    for d in entry.defaults:
        if not _known(env.get(d.name, MISSING)):
            v = run(d.exprs, d.name)
            if v is not MISSING:
                env[d.name] = v
                defaulted[d.name] = " | ".join(e.source for e in d.exprs)
    for n in entry.lets:
        env[n.name] = run(n.exprs, n.name)
    _run_checks(entry, env, given, shown, text, where)
    out = Imported(entry, shown)
    for s in entry.setters:
        if not s.exprs:
            out.values[s.key] = (s.literal, f"{shown}: {mapping.select} {kind} ({where})")
            continue
        v = run(s.exprs, s.key)
        if v is MISSING:
            continue
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        used = next(e for e in s.exprs if _known(evaluate(e, env)))
        if s.explain is not None:
            detail = run_text(s.explain, env)
        elif used.constant:
            detail = f"{mapping.select} {kind} ({where})"
        else:
            detail = _detail(used.source, v, view, defaulted, where)
        out.values[s.key] = (v, f"{shown}: {detail}")
    return out


def _view(entry: Entry, data: Mapping[str, Any]) -> dict[str, Any]:
    """The document's fields an entry reads: the whole document, or with ``within`` its sub-document's
    fields and of the top level only the fields ``outer`` names (the rest are the outer document's own,
    which the model the entry sizes never reads).
    """
    if not entry.within:
        return _flatten(data)
    inner = data.get(entry.within)
    own = {k: v for k, v in inner.items() if k not in entry.outer} if isinstance(inner, dict) else {}
    own.update({k: data[k] for k in entry.outer if k in data})
    return _flatten(own)


def _run_checks(
    entry: Entry, env: Mapping[str, Any], given: frozenset[str], shown: str, text: str | None, where: str
) -> None:
    """The first of an entry's checks that refuses the document, as an ImportFailure at its key."""
    for c in entry.checks:
        if c.unless_given and c.unless_given in given:
            continue
        why = _refused(c, env)
        if why is not None:
            raise ImportFailure(f"{c.key}: {why}", f"{c.help} ({where})", file=shown, line=key_line(text, c.key))


def _refused(c: Check, env: Mapping[str, Any]) -> str | None:
    """Why a check refuses (its message, or the schema's complaint), or None."""
    if c.schema is not None:
        value = env.get(c.key, MISSING)
        if _known(value) and not valid(value, dict(c.schema)):
            return f"{_excerpt(value)} {_schema_words(value, dict(c.schema))}"
    if c.when is not None:
        try:
            holds = evaluate(c.when, env)
        except X.ExprError as exc:
            return f"{run_text(c.message, env) if c.message else ''} ({exc.message})".strip()
        if holds is not MISSING and holds:
            return run_text(c.message, env) if c.message else "refused"
    return None


def _excerpt(value: Any, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _schema_words(value: Any, schema: dict[str, Any]) -> str:
    """The first way a value misses a schema, in a few words."""
    e = next(iter(validator_for(schema).iter_errors(value)), None)
    if e is None:  # pragma: no cover - valid() said it was not
        return "does not fit"
    where = "".join(f"[{p}]" for p in e.absolute_path)
    v = e.validator_value
    if e.validator == "type":
        what = f"is not of type {v}"
    elif e.validator == "minimum":
        what = f"is below {v}"
    elif e.validator == "maximum":
        what = f"is above {v}"
    elif e.validator == "uniqueItems":
        what = "holds a value twice"
    elif e.validator == "enum" and isinstance(v, list):
        what = f"is not one of {', '.join(map(str, v))}"
    else:
        what = str(e.message)[:120]
    return f"{'its item ' + where + ' ' if where else ''}{what}"


def key_line(text: str | None, dotted: str) -> int | None:
    """The line of a (dotted) key in a JSON text, found by its names in order; None if not found."""
    if not text:
        return None
    at = 0
    for part in dotted.split("."):
        m = re.compile(r'"' + re.escape(part) + r'"\s*:').search(text, at)
        if m is None:
            return None
        at = m.end()
    return text.count("\n", 0, at) + 1


def failed_checks(spec: Inference, values: Mapping[str, Any]) -> list[tuple[Check, str]]:
    """An inference file's checks that refuse these inputs: (check, why). A check runs only when
    every key it reads is known.
    """
    out = []
    for c in spec.checks:
        if not all(_known(values.get(k, MISSING)) for k in c.keys):
            continue
        why = _refused(c, values)
        if why is not None:
            out.append((c, why))
    return out


def _detail(source: str, value: Any, view: Mapping[str, Any], defaulted: Mapping[str, str], where: str) -> str:
    """How a key's value was found: a field of the document, a default, or a computation."""
    if source in defaulted:
        return f"{source} = {_number_text(value)}, not in the file: the default, {defaulted[source]} ({where})"
    if source in view:
        return source
    return f"{source} = {_number_text(value)}"


def run_text(t: X.Template, env: Mapping[str, Any]) -> str:
    """A template over ``env`` (unknown names written as '?')."""
    filled = {n: env.get(n, MISSING) for n in t.names}
    safe = {n: (v if _known(v) else "?") for n, v in filled.items()}

    def resolve(name: str) -> X.Getter:
        return lambda _: safe[name]

    return str(t.bind(resolve)({}))


def infer(
    spec: Inference,
    values: Mapping[str, Any],
    replaceable: Callable[[str], bool],
    check_value: Callable[[Step, Any], str | None],
) -> tuple[dict[str, tuple[Any, str]], list[tuple[Step, str]]]:
    """Run the steps over ``values``: the inferred inputs (value, because) and the steps that failed
    (step, why). ``replaceable(attr)`` says whether an input may be set (unknown, or only defaulted);
    ``check_value`` says what is wrong with a value for its input, or None.
    """
    env = dict(values)
    out: dict[str, tuple[Any, str]] = {}
    failed: list[tuple[Step, str]] = []
    for step in spec.steps:
        if step.target in env and not replaceable(step.target):
            continue
        local = dict(env)
        try:
            ok = True
            for n in step.lets:
                v = first(n.exprs, local)
                if v is MISSING:
                    ok = False
                    break
                local[n.name] = v
            if not ok:
                continue
            if step.when is not None:
                w = evaluate(step.when, local)
                if w is MISSING or not w:
                    continue
            v = evaluate(step.value, local)
            if v is MISSING:
                continue
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            local[step.target] = v
            because = run_text(step.because, local)
        except X.ExprError as exc:
            failed.append((step, exc.message))
            continue
        problem = check_value(step, v)
        if problem:
            failed.append((step, f"{_number_text(v)} {problem}: {because}"))
            continue
        env[step.target] = v
        out[step.target] = (v, because)
    return out, failed


def unmet(spec: Inference, values: Mapping[str, Any]) -> list[tuple[Requirement, list[str], bool]]:
    """Each requirement that applies: (requirement, the keys still unknown, whether its waiver is set)."""
    out = []
    for r in spec.requirements:
        if r.unless is not None:
            try:
                u = evaluate(r.unless, values)
            except X.ExprError:
                u = MISSING
            if u is not MISSING and u:
                continue
        missing = [k for k in r.keys if not _known(values.get(k, MISSING))]
        waived = bool(r.waiver) and values.get(r.waiver or "") is True
        if missing or waived:
            out.append((r, missing, waived))
    return out


__all__ = [
    "MAX_NAME",
    "SEGMENT_CHARS",
    "Check",
    "Entry",
    "ImportFailure",
    "ImportMapping",
    "Imported",
    "Inference",
    "Locate",
    "Requirement",
    "Step",
    "apply_mapping",
    "document_entry",
    "failed_checks",
    "infer",
    "key_line",
    "load_import",
    "load_inference",
    "locate",
    "match_template",
    "parse_document",
    "read_document",
    "read_json",
    "template_parts",
    "template_problem",
    "unmet",
]
