"""YAML loading that remembers where every key and value came from."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .ir import Span

try:  # libyaml is much faster; the pure-Python loader gives the same nodes
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
        lines = self.text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None

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


def _mark(node: yaml.Node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def parse(text: str, file: str) -> Doc:
    """Parse one YAML document, rejecting duplicate keys, keeping positions."""
    doc = Doc(file=file, text=text, data=None)
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                doc.data = None
                return doc
            doc.data = _build(loader, node, (), doc)
        finally:
            loader.dispose()
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
    except yaml.YAMLError as exc:
        raise InputError(f"YAML error: {exc}", file=file, help="make the file a valid YAML document") from None
    return doc


def _build(loader: Any, node: yaml.Node, path: NodePath, doc: Doc) -> Any:
    doc.positions[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                line, col = _mark(key_node)
                raise InputError(
                    "a mapping key must be a plain value, not a list or mapping",
                    file=doc.file,
                    line=line,
                    col=col,
                    snippet=doc.line_text(line),
                    help="write keys as plain words, e.g. 'batch_size: 8'",
                )
            key = _scalar(loader, key_node)
            if not isinstance(key, str):
                key = str(key).lower() if isinstance(key, bool) else str(key)
            if key in out:
                line, col = _mark(key_node)
                first = doc.key_positions.get((*path, key), (None, None))[0]
                raise InputError(
                    f"duplicate key '{key}' (first given on line {first})",
                    file=doc.file,
                    line=line,
                    col=col,
                    snippet=doc.line_text(line),
                    help="give each key once; remove or merge the repeated one",
                )
            doc.key_positions[(*path, key)] = _mark(key_node)
            out[key] = _build(loader, value_node, (*path, key), doc)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, child, (*path, i), doc) for i, child in enumerate(node.value)]
    return _scalar(loader, node)


_STR = "tag:yaml.org,2002:str"


def _scalar(loader: Any, node: yaml.Node) -> Any:
    """A scalar's value; text (most of any rule file) without the constructor's dispatch."""
    if node.tag == _STR:
        return node.value
    return loader.construct_object(node)


def read_bytes(path: Path | str, display: str | None = None) -> bytes:
    """A file's bytes, or an input error saying why it cannot be read."""
    p = Path(path)
    name = display or str(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(
            "file not found",
            file=name,
            code="unreadable",
            help="check the path; it is relative to the current directory",
        ) from None
    except IsADirectoryError:
        raise InputError(
            "is a directory, not a YAML file", file=name, code="unreadable", help="name a .yaml file"
        ) from None
    except OSError as exc:
        raise InputError(
            f"cannot read file: {exc.strerror}", file=name, code="unreadable", help="check the file's permissions"
        ) from None


def decode(raw: bytes, name: str) -> str:
    """UTF-8 text, or an input error naming the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte {exc.start})", file=name, code="unreadable", help="save the file as UTF-8"
        ) from None


def load(path: Path | str, display: str | None = None) -> Doc:
    """Read and parse one YAML file."""
    name = display or str(path)
    return parse(decode(read_bytes(path, name), name), name)
