"""YAML (and JSON) loading that remembers where every key and value came from, within limits.

Every file gpusizer reads passes through here, and nothing reaches the engine before it has
met the limits of :mod:`engine.load.limits`: a regular file only (a FIFO or a device such as
``/dev/zero`` would block or never end), at most so many bytes, UTF-8 without control
characters, and a document of bounded depth, node count (aliases expanded) and text length,
whose numbers are finite. Every problem is an :class:`InputError` at ``file:line:col``.

The document is built from the parser's events with an explicit stack rather than through
PyYAML's recursive composer and constructor: nesting cannot exhaust Python's stack, a
recursive alias is found instead of followed, an alias's expansion is counted before it is
copied, and a scalar that fails to construct (``!!int ''``, ``!!bool maybe``, an impossible
date) is an error at its position instead of an exception from deep inside PyYAML.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..errors import InputError
from ..lang.ir import Span
from .limits import FILE_MB_VAR, NODES_VAR, TEXT_VAR, Kind, Limits, limits, raise_hint

try:  # libyaml is much faster; the pure-Python parser gives the same events
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Base = yaml.SafeLoader

NodePath = tuple[str | int, ...]


class _Loader(_Base):  # type: ignore[misc]
    """YAML 1.1 reads ``70e9`` and ``1.0e9`` as text; people mean numbers (as YAML 1.2 does)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)

# A character outside YAML's printable set (what libyaml accepts in a stream), written as the
# complement of that set (a negated class of it took 5 ms to compile at every start); and the
# control characters a text value may not hold even when written as an escape (tab and newline are fine)
_NON_PRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_TAG = "tag:yaml.org,2002:"
_STR = _TAG + "str"
_MERGE = _TAG + "merge"
_SCALAR_TAGS = {_TAG + t for t in ("null", "bool", "int", "float", "str")}
_MAP_TAGS = {None, "!", _TAG + "map"}
_SEQ_TAGS = {None, "!", _TAG + "seq"}
_MB = 1 << 20


@dataclass
class Doc:
    """A parsed YAML document and the position of each node, keyed by path."""

    file: str
    text: str
    data: Any
    positions: dict[NodePath, tuple[int, int]] = field(default_factory=dict)  # value positions
    key_positions: dict[NodePath, tuple[int, int]] = field(default_factory=dict)

    def line_text(self, line: int | None) -> str | None:
        """The text of a line, for error snippets."""
        if line is None:
            return None
        lines = self.lines
        return lines[line - 1] if 0 < line <= len(lines) else None

    @functools.cached_property
    def lines(self) -> list[str]:
        """The text's lines, split once (every span quotes its line)."""
        return self.text.splitlines()

    def where(self, path: Iterable[str | int], *, key: bool = False) -> tuple[int | None, int | None]:
        """Line and column of the node at path, or of its nearest ancestor."""
        table = self.key_positions if key else self.positions
        p = tuple(path)
        while True:
            if p in table:
                return table[p]
            if p in self.positions:
                return self.positions[p]
            if not p:
                return (None, None)
            p = p[:-1]

    def span(self, path: Iterable[str | int], *, key: bool = False) -> Span:
        """Where the node at path is, as a Span with its line's text."""
        line, col = self.where(path, key=key)
        return Span(self.file, line, col, self.line_text(line))

    def error(
        self,
        path: Iterable[str | int],
        message: str,
        help: str | None = None,
        *,
        key: bool = False,
        cls: type[InputError] = InputError,
    ) -> InputError:
        """An input error at the node at path, quoting its line."""
        line, col = self.where(path, key=key)
        return cls(message, file=self.file, line=line, col=col, help=help, snippet=self.line_text(line))


# -- reading bytes ------------------------------------------------------------------------------


def _kind_of_file(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # pragma: no cover - every other kind is listed above


def read_bytes(path: Path | str, display: str | None = None, kind: Kind = "rules") -> bytes:
    """A regular file's bytes, at most the limit for its kind; an input error saying why not."""
    name = display or str(path)
    lim = limits(kind)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)  # non-blocking: opening a FIFO does not wait for a writer
    except FileNotFoundError:
        raise InputError(
            "file not found",
            file=name,
            code="unreadable",
            help="check the path; it is relative to the current directory",
        ) from None
    except OSError as exc:
        raise InputError(
            f"cannot read file: {exc.strerror}", file=name, code="unreadable", help="check the file's permissions"
        ) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError("is a directory, not a YAML file", file=name, code="unreadable", help="name a .yaml file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                f"is {_kind_of_file(st.st_mode)}, not a regular file",
                file=name,
                code="unreadable",
                help="gpusizer reads regular files only; save the input to a file first",
            )
        if st.st_size > lim.file_bytes:
            _too_large(name, st.st_size, lim)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_MB, lim.file_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > lim.file_bytes:  # it grew while being read
                _too_large(name, total, lim)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(
            f"cannot read file: {exc.strerror}", file=name, code="unreadable", help="check the file's permissions"
        ) from None
    finally:
        os.close(fd)


def _too_large(name: str, size: int, lim: Limits) -> NoReturn:
    raise InputError(
        f"the file is {size / _MB:,.1f} MB; a {lim.kind} file may have at most {lim.file_bytes // _MB:,} MB",
        file=name,
        code="unreadable",
        help=raise_hint(FILE_MB_VAR, "file"),
    )


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def decode(raw: bytes, name: str) -> str:
    """UTF-8 text, or an input error at the line and column of the first bad byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        start = raw.rfind(b"\n", 0, exc.start) + 1
        col = len(raw[start : exc.start].decode("utf-8", "replace")) + 1
        end = raw.find(b"\n", exc.start)
        snippet = raw[start : end if end >= 0 else len(raw)].decode("utf-8", "replace")
        raise InputError(
            f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at byte offset {exc.start} is not part of a UTF-8 character",
            file=name,
            line=line,
            col=col,
            snippet=snippet,
            code="unreadable",
            help="save the file as UTF-8",
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def check_text(text: str, name: str, lim: Limits) -> None:
    """The text of a whole file: not too long, and no character YAML or JSON cannot hold."""
    if len(text) > lim.file_bytes:
        _too_large(name, len(text.encode("utf-8", "surrogatepass")), lim)
    bad = _NON_PRINTABLE.search(text)
    if bad:
        line, col = _line_col(text, bad.start())
        raise InputError(
            f"control character U+{ord(bad.group()):04X} is not allowed in the file",
            file=name,
            line=line,
            col=col,
            snippet=text.split("\n")[line - 1],
            code="unreadable",
            help="remove it; a YAML or JSON file holds printable text, tabs and line breaks only",
        )


# -- building a document from events --------------------------------------------------------------


class _Fail(Exception):
    """A problem at a mark, turned into an InputError by parse()."""

    def __init__(self, message: str, mark: Any, help: str) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark
        self.help = help


_INT = _TAG + "int"
# PyYAML's Resolver.resolve() for a plain scalar, without its per-call list building: the implicit
# resolvers by first character ('' for the empty value), then those for any character
_Resolvers = tuple[tuple[str, "re.Pattern[str]"], ...]
_WILD: _Resolvers = tuple(_Loader.yaml_implicit_resolvers.get(None, ()))
_FIRST: dict[str, _Resolvers] = {k: (*v, *_WILD) for k, v in _Loader.yaml_implicit_resolvers.items() if k is not None}


def _resolve(text: str) -> str:
    for tag, regexp in _FIRST.get(text[:1], _WILD):
        if regexp.match(text):
            return tag
    return _STR


_NOKEY = object()
_MERGE_KEY = object()


@dataclass
class _Frame:
    mapping: bool
    value: Any
    path: NodePath
    anchor: str | None
    start: int  # node count before this node
    key: Any = _NOKEY
    key_mark: Any = None
    merges: list[dict[str, Any]] = field(default_factory=list)


def _mark(m: Any) -> tuple[int, int]:
    return (m.line + 1, m.column + 1)


class _Builder:
    """Turns parser events into plain values, checking every limit as it goes."""

    def __init__(self, loader: Any, doc: Doc, lim: Limits) -> None:
        self.loader = loader
        self.doc = doc
        self.lim = lim
        self.stack: list[_Frame] = []
        self.nodes = 0
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open: set[str] = set()
        self.root: Any = None

    def run(self) -> Any:
        loader = self.loader
        get_event = loader.get_event
        handlers = {  # the parser makes these exact classes; a dict beats a chain of isinstance
            yaml.ScalarEvent: self.scalar,
            yaml.MappingStartEvent: self.start,
            yaml.SequenceStartEvent: self.start,
            yaml.MappingEndEvent: self.end,
            yaml.SequenceEndEvent: self.end,
            yaml.AliasEvent: self.alias,
        }
        started = False
        while True:
            e = get_event()
            handler = handlers.get(type(e))
            if handler is not None:
                handler(e)
            elif isinstance(e, yaml.DocumentStartEvent):
                if started:
                    raise _Fail(
                        "a second YAML document in the file",
                        e.start_mark,
                        "a gpusizer file holds one document; remove the '---' and what follows, or split the file",
                    )
                started = True
            elif isinstance(e, yaml.StreamEndEvent):
                return self.root

    # -- counting -------------------------------------------------------------------------------
    def count(self, n: int, mark: Any) -> None:
        self.nodes += n
        if self.nodes > self.lim.nodes:
            raise _Fail(
                f"the document has more than {self.lim.nodes:,} nodes (values, keys and list members, "
                "with every alias expanded)",
                mark,
                raise_hint(NODES_VAR, "document"),
            )

    # -- events ---------------------------------------------------------------------------------
    def scalar(self, e: Any) -> None:
        self.nodes += 1
        if self.nodes > self.lim.nodes:
            self.count(0, e.start_mark)  # raises
        value = self.construct(e)
        if e.anchor is not None:
            self.anchors[e.anchor] = (value, 1)
        # the common cases inline (a key, a value under its key, a list member); add() has the rest
        if self.stack:
            top = self.stack[-1]
            key = top.key
            if not top.mapping:
                m = e.start_mark
                self.doc.positions[(*top.path, len(top.value))] = (m.line + 1, m.column + 1)
                top.value.append(value)
                return
            if key is _NOKEY:
                self.set_key(top, value, e.start_mark)
                return
            if key is not _MERGE_KEY:
                top.key = _NOKEY
                m = e.start_mark
                self.doc.positions[(*top.path, key)] = (m.line + 1, m.column + 1)
                top.value[key] = value
                return
        self.add(value, 1, e.start_mark, scalar=True)

    def start(self, e: Any) -> None:
        mapping = isinstance(e, yaml.MappingStartEvent)
        self.count(1, e.start_mark)
        if e.tag not in (_MAP_TAGS if mapping else _SEQ_TAGS):
            raise _Fail(
                f"the tag {e.tag!r} is not supported",
                e.start_mark,
                "write a plain mapping or list; gpusizer reads no sets, ordered maps or pairs",
            )
        if len(self.stack) >= self.lim.depth:
            raise _Fail(
                f"the document nests deeper than {self.lim.depth} levels",
                e.start_mark,
                "flatten the structure; no gpusizer file needs this depth",
            )
        path = self.child_path(e.start_mark)
        self.doc.positions[path] = _mark(e.start_mark)
        if e.anchor is not None:
            self.open.add(e.anchor)
        self.stack.append(_Frame(mapping, {} if mapping else [], path, e.anchor, self.nodes - 1))

    def end(self, e: Any) -> None:
        f = self.stack.pop()
        if f.mapping:
            for merged in f.merges:  # explicit keys win, then the earlier merge
                for k, v in merged.items():
                    f.value.setdefault(k, v)
        size = self.nodes - f.start
        if f.anchor is not None:
            self.anchors[f.anchor] = (f.value, size)
            self.open.discard(f.anchor)
        self.add(f.value, size, e.start_mark, placed=True)

    def alias(self, e: Any) -> None:
        if e.anchor in self.open:
            raise _Fail(
                f"the alias *{e.anchor} refers to the node that contains it (a recursive structure)",
                e.start_mark,
                "an alias may only repeat a node that is complete; remove the self-reference",
            )
        if e.anchor not in self.anchors:
            raise _Fail(f"unknown alias *{e.anchor}", e.start_mark, f"define '&{e.anchor}' before using '*{e.anchor}'")
        value, size = self.anchors[e.anchor]
        self.count(size, e.start_mark)
        if isinstance(value, (dict, list)):
            value = copy.deepcopy(value)
        self.add(value, size, e.start_mark, scalar=not isinstance(value, (dict, list)))

    # -- placing a value in its parent ---------------------------------------------------------------
    def child_path(self, mark: Any) -> NodePath:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if not top.mapping:
            return (*top.path, len(top.value))
        if top.key is _NOKEY:
            raise _Fail(
                "a mapping key must be a plain value, not a list or mapping",
                mark,
                "write keys as plain words, e.g. 'batch_size: 8'",
            )
        return (*top.path, "<<" if top.key is _MERGE_KEY else top.key)

    def add(self, value: Any, size: int, mark: Any, *, scalar: bool = False, placed: bool = False) -> None:
        if not self.stack:
            self.root = value
            if not placed:
                self.doc.positions[()] = _mark(mark)
            return
        top = self.stack[-1]
        if not top.mapping:
            if not placed:
                self.doc.positions[(*top.path, len(top.value))] = _mark(mark)
            top.value.append(value)
            return
        if top.key is _NOKEY:
            if not scalar:
                self.child_path(mark)  # raises: a key must be a plain value
            self.set_key(top, value, mark)
            return
        key, top.key = top.key, _NOKEY
        if key is _MERGE_KEY:
            for part in value if isinstance(value, list) else [value]:
                if not isinstance(part, dict):
                    raise _Fail(
                        "a merge key '<<' takes a mapping or a list of mappings",
                        mark,
                        "write '<<: *anchor' where the anchor names a mapping",
                    )
                top.merges.append(part)
            return
        if not placed:
            self.doc.positions[(*top.path, key)] = _mark(mark)
        top.value[key] = value

    def set_key(self, top: _Frame, key: Any, mark: Any) -> None:
        if key is _MERGE_KEY:
            top.key = key
            return
        if not isinstance(key, str):
            key = str(key).lower() if isinstance(key, bool) else str(key)
        if key in top.value:
            first = self.doc.key_positions.get((*top.path, key), (None, None))[0]
            raise _Fail(
                f"duplicate key '{key}' (first given on line {first})",
                mark,
                "give each key once; remove or merge the repeated one",
            )
        self.doc.key_positions[(*top.path, key)] = _mark(mark)
        top.key = key

    # -- scalars --------------------------------------------------------------------------------
    def construct(self, e: Any) -> Any:
        text = e.value
        if len(text) > self.lim.text_chars:
            raise _Fail(
                f"a text value of {len(text):,} characters; at most {self.lim.text_chars:,}",
                e.start_mark,
                raise_hint(TEXT_VAR, "text"),
            )
        tag = e.tag
        if tag is None or tag == "!":
            tag = _resolve(text) if e.implicit[0] else _STR
        if tag == _STR:
            return self.text(text, e) if _CONTROL.search(text) else text
        if tag == _INT and len(text) < 16 and text.isascii() and text.isdigit() and (text[0] != "0" or len(text) == 1):
            return int(text)  # a plain decimal (a leading 0 is octal in YAML 1.1, so PyYAML reads that)
        if tag == _MERGE:
            if self.stack and self.stack[-1].mapping and self.stack[-1].key is _NOKEY:
                return _MERGE_KEY
            return self.text(text, e)
        if tag not in _SCALAR_TAGS:
            if tag == _TAG + "timestamp" and e.tag is None:
                raise _Fail(
                    f"{text!r} reads as a date, and gpusizer takes no dates",
                    e.start_mark,
                    f"write it in quotes for text: '{text}'",
                )
            raise _Fail(
                f"the tag {e.tag!r} is not supported",
                e.start_mark,
                "gpusizer reads text, numbers, true/false and null; remove the tag",
            )
        node = yaml.ScalarNode(tag, text, e.start_mark, e.end_mark, e.style)
        try:
            value = self.loader.yaml_constructors[tag](self.loader, node)
        except Exception as exc:  # PyYAML's constructors raise anything from KeyError to ValueError
            raise _Fail(
                f"{text!r} cannot be read as {tag[len(_TAG) :]} ({type(exc).__name__}: {exc})",
                e.start_mark,
                "write a value of that type, or remove the tag",
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise _Fail(
                f"{text!r} is not a finite number", e.start_mark, "give a finite number; gpusizer takes no .nan or .inf"
            )
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                float(value)
            except OverflowError:
                raise _Fail(
                    f"a whole number of {len(text):,} digits is beyond the numbers gpusizer computes with (1.8e308)",
                    e.start_mark,
                    "give a smaller number",
                ) from None
        return value

    def text(self, value: str, e: Any) -> str:
        bad = _CONTROL.search(value)
        if bad:
            raise _Fail(
                f"the text holds the control character U+{ord(bad.group()):04X}",
                e.start_mark,
                "remove it; text values may hold tabs and line breaks, but no other control characters",
            )
        return value


def parse(text: str, file: str, kind: Kind = "rules") -> Doc:
    """Parse one YAML document within the limits for its kind, rejecting duplicate keys, keeping positions."""
    lim = limits(kind)
    check_text(text, file, lim)
    doc = Doc(file=file, text=text, data=None)
    try:
        loader = _Loader(text)
        try:
            doc.data = _Builder(loader, doc, lim).run()
        finally:
            loader.dispose()
    except _Fail as exc:
        at = _mark(exc.mark)
        raise InputError(
            exc.message, file=file, line=at[0], col=at[1], snippet=doc.line_text(at[0]), help=exc.help
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem and exc.context_mark is not None:
            problem += f" ({exc.context} at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1})"
        raise InputError(
            f"YAML syntax error: {problem}",
            file=file,
            line=line,
            col=col,
            snippet=doc.line_text(line),
            help="fix the YAML syntax at this position (check indentation, "
            "quotes and that each 'key: value' sits on its own line)",
        ) from None
    except yaml.YAMLError as exc:  # pragma: no cover - check_text() refuses what the reader would
        raise InputError(f"YAML error: {exc}", file=file, help="make the file a valid YAML document") from None
    return doc


def load(path: Path | str, display: str | None = None, kind: Kind = "rules") -> Doc:
    """Read and parse one YAML file."""
    name = display or str(path)
    return parse(decode(read_bytes(path, name, kind), name), name, kind)


# -- JSON ------------------------------------------------------------------------------------------


class _JsonFail(ValueError):
    def __init__(self, message: str, needle: str | None) -> None:
        super().__init__(message)
        self.message = message
        self.needle = needle


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _JsonFail(f"duplicate key '{k}'", json.dumps(k, ensure_ascii=False))
        out[k] = v
    return out


def _constant(name: str) -> Any:
    raise _JsonFail(f"{name} is not a finite number", name)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _JsonFail(f"{text} is not a finite number (it overflows)", text)
    return value


def _int(text: str) -> int:
    try:
        value = int(text)
        float(value)
    except (ValueError, OverflowError):
        raise _JsonFail(
            f"a number of {len(text):,} digits is beyond the range gpusizer computes with", text[:40]
        ) from None
    return value


def _locate(text: str, needle: str | None, nth: int = 2) -> tuple[int | None, int | None]:
    """Where the nth occurrence of a token is (best effort: JSON gives no positions for these)."""
    if not needle:
        return (None, None)
    found = [m.start() for m in re.finditer(re.escape(needle), text)]
    if not found:
        return (None, None)
    return _line_col(text, found[min(nth, len(found)) - 1])


def parse_json(text: str, file: str, kind: Kind = "record") -> Any:
    """Parse JSON within the limits for its kind: no duplicate keys, finite numbers, bounded size."""
    lim = limits(kind)
    check_text(text, file, lim)
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except _JsonFail as exc:
        line, col = _locate(text, exc.needle, 2 if exc.message.startswith("duplicate") else 1)
        snippet = text.splitlines()[line - 1] if line else None
        raise InputError(
            f"invalid JSON: {exc.message}", file=file, line=line, col=col, snippet=snippet, help="fix the JSON"
        ) from None
    except json.JSONDecodeError as exc:
        snippet = text.splitlines()[exc.lineno - 1] if 0 < exc.lineno <= len(text.splitlines()) else None
        raise InputError(
            f"invalid JSON: {exc.msg}", file=file, line=exc.lineno, col=exc.colno, snippet=snippet, help="fix the JSON"
        ) from None
    except RecursionError:
        raise InputError(
            f"the JSON document nests deeper than {lim.depth} levels", file=file, help="flatten the structure"
        ) from None
    _check_tree(data, file, lim)
    return data


def _check_tree(data: Any, file: str, lim: Limits) -> None:
    """Depth, node count and text length of a parsed JSON document (iteratively)."""
    todo: list[tuple[Any, int]] = [(data, 0)]
    nodes = 0
    while todo:
        v, depth = todo.pop()
        nodes += 1
        problem = None
        if depth > lim.depth:
            problem = (f"the JSON document nests deeper than {lim.depth} levels", "flatten the structure")
        elif nodes > lim.nodes:
            problem = (f"the JSON document has more than {lim.nodes:,} nodes", raise_hint(NODES_VAR, "document"))
        elif isinstance(v, str) and len(v) > lim.text_chars:
            problem = (
                f"a text value of {len(v):,} characters; at most {lim.text_chars:,}",
                raise_hint(TEXT_VAR, "text"),
            )
        elif isinstance(v, str) and _CONTROL.search(v):
            problem = ("a text value holds a control character", "remove it")
        if problem:
            raise InputError(problem[0], file=file, help=problem[1])
        if isinstance(v, dict):
            todo.extend((x, depth + 1) for x in v.values())
            todo.extend((k, depth + 1) for k in v)
        elif isinstance(v, list):
            todo.extend((x, depth + 1) for x in v)


def load_json(path: Path | str, display: str | None = None, kind: Kind = "record") -> Any:
    """Read and parse one JSON file within the limits for its kind."""
    name = display or str(path)
    return parse_json(decode(read_bytes(path, name, kind), name), name, kind)
