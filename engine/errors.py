"""Diagnostics that carry a location and a fix, errors made of them, and the exit codes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Literal

from .format import excerpt, printable

__all__ = [
    "Diagnostic",
    "EngineUnavailable",
    "ExitCode",
    "GpusizerError",
    "InputError",
    "OutputError",
    "Problems",
    "RuleBug",
    "RuleError",
    "closest",
    "hint",
]


class ExitCode(IntEnum):
    """What the ``gpusizer`` command returns; the README's table is this one."""

    OK = 0
    FINDINGS = 1  # validate/test found errors; audit verify or diff found a changed decision
    INVALID = 2  # a workload, rule, knowledge or record file is invalid (or tampered with)
    UNAVAILABLE = 69  # the rule engine (durable-rules) cannot be loaded (sysexits EX_UNAVAILABLE)
    INTERNAL = 70  # a bug in gpusizer itself (sysexits EX_SOFTWARE)
    OUTPUT = 73  # a report or record could not be written (sysexits EX_CANTCREAT)
    INTERRUPTED = 130


Level = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem: where it is, what is wrong, how to fix it (and, for validate, its code and rule)."""

    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    help: str | None = None
    snippet: str | None = None
    level: Level = "error"
    code: str = "load"
    rule: str | None = None

    def __post_init__(self) -> None:
        # a message may echo input: it is shown escaped and cut to an excerpt, whoever made it
        object.__setattr__(self, "message", excerpt(printable(self.message)))
        if self.help is not None:
            object.__setattr__(self, "help", excerpt(printable(self.help)))
        if self.file is not None:
            object.__setattr__(self, "file", printable(self.file))

    def location(self) -> str:
        """``file:line:col``, as far as it is known."""
        parts = [self.file or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.col is not None:
                parts.append(str(self.col))
        return ":".join(parts)

    def render(self) -> str:
        """``file:line:col: error: message``, the line with a caret under the column, ``help:``."""
        lines = [f"{self.location()}: {self.level}: {self.message}"]
        if self.snippet is not None and self.line is not None:
            gutter = f"{self.line} | "
            text, at = _window(self.snippet.rstrip("\n"), self.col)
            lines.append(gutter + _printable(text))
            if at is not None:
                lines.append(" " * (len(gutter) + at - 1) + "^")
        if self.help:
            lines.append(f"help: {self.help}")
        return "\n".join(lines)

    def render_finding(self) -> str:
        """The one-line form ``validate`` prints: ``file:line:col: error[code] rule: message``."""
        where = ":".join(str(p) for p in (self.file or "<input>", self.line, self.col) if p is not None)
        who = f" {self.rule}:" if self.rule else ""
        out = f"{where}: {self.level}[{self.code}]{who} {self.message}"
        return out + (f"\n  help: {self.help}" if self.help else "")


_SNIPPET = 120  # characters of a long line shown around the column


def _window(text: str, col: int | None) -> tuple[str, int | None]:
    """A long line cut to the part around the column (with '...' where it was cut), and the column in it."""
    if len(text) <= _SNIPPET:
        return text, col
    start = max(0, min((col or 1) - 1 - _SNIPPET // 2, len(text) - _SNIPPET))
    cut = ("..." if start else "") + text[start : start + _SNIPPET] + ("..." if start + _SNIPPET < len(text) else "")
    return cut, None if col is None else col - start + (3 if start else 0)


def _printable(text: str) -> str:
    """A snippet line with control characters shown as escapes, so a terminal shows what is there."""
    return "".join(ch if ch == "\t" or ch.isprintable() else repr(ch)[1:-1] for ch in text)


class GpusizerError(Exception):
    """An error the user can act on; it holds one or more diagnostics and renders without a traceback."""

    exit_code: int = ExitCode.INVALID

    def __init__(
        self,
        message: str = "",
        *,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        help: str | None = None,
        snippet: str | None = None,
        code: str = "load",
        rule: str | None = None,
        diagnostics: Sequence[Diagnostic] | None = None,
    ) -> None:
        if diagnostics:
            self.diagnostics = list(diagnostics)
        else:
            self.diagnostics = [Diagnostic(message, file, line, col, help, snippet, "error", code, rule)]
        super().__init__(self.diagnostics[0].message)

    @property
    def first(self) -> Diagnostic:
        """The first diagnostic, whose location and message the error carries."""
        return self.diagnostics[0]

    @property
    def message(self) -> str:
        """The first diagnostic's message."""
        return self.first.message

    @property
    def file(self) -> str | None:
        """The first diagnostic's file."""
        return self.first.file

    @property
    def line(self) -> int | None:
        """The first diagnostic's line."""
        return self.first.line

    @property
    def col(self) -> int | None:
        """The first diagnostic's column."""
        return self.first.col

    @property
    def help(self) -> str | None:
        """The first diagnostic's help."""
        return self.first.help

    def with_code(self, code: str) -> GpusizerError:
        """The same error, its diagnostics tagged with a validate finding code."""
        return type(self)(diagnostics=[replace(d, code=code) for d in self.diagnostics])

    def render(self) -> str:
        """Every diagnostic, each with its location, snippet and help."""
        return "\n".join(d.render() for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()


class InputError(GpusizerError):
    """The workload, a rule file, a knowledge file or a record is invalid (exit code 2)."""


class RuleError(GpusizerError):
    """A rule or a catalog value of the user's own overlay failed while it ran (exit code 2); names the rule."""


class RuleBug(RuleError):
    """A shipped rule failed on shipped knowledge while it ran: a bug in gpusizer (exit code 70)."""

    exit_code = ExitCode.INTERNAL


class OutputError(GpusizerError):
    """A report or record could not be written (exit code 73)."""

    exit_code = ExitCode.OUTPUT


class EngineUnavailable(GpusizerError):
    """The rule engine cannot be loaded: not installed, or its C extension does not import (exit 69)."""

    exit_code = ExitCode.UNAVAILABLE


class Problems(InputError):
    """Several independent errors found in one pass, reported together."""

    def __init__(self, errors: Iterable[GpusizerError]) -> None:
        found = [d for e in errors for d in e.diagnostics]
        super().__init__(diagnostics=found)

    @property
    def errors(self) -> list[GpusizerError]:
        """One error per diagnostic."""
        return [InputError(diagnostics=[d]) for d in self.diagnostics]


def closest(word: object, options: Iterable[object]) -> str | None:
    """The option most like ``word``, if one is close enough to be a likely typo."""
    match = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.5)
    return match[0] if match else None


def hint(word: object, options: Iterable[object]) -> str:
    """``"did you mean 'x'? "`` for the closest option, or nothing."""
    guess = closest(word, options)
    return f"did you mean '{guess}'? " if guess else ""
