"""Errors that carry a location and a fix, rendered without a traceback."""
from __future__ import annotations


class GpusizerError(Exception):
    """An error the user can act on: where it is, what is wrong, how to fix it."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 col: int | None = None, help: str | None = None, snippet: str | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.help = help
        self.snippet = snippet

    def location(self) -> str:
        parts = [self.file or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.col is not None:
                parts.append(str(self.col))
        return ":".join(parts)

    def render(self) -> str:
        lines = [f"{self.location()}: error: {self.message}"]
        if self.snippet is not None and self.line is not None:
            gutter = f"{self.line} | "
            lines.append(gutter + self.snippet.rstrip("\n"))
            if self.col is not None:
                lines.append(" " * (len(gutter) + self.col - 1) + "^")
        if self.help:
            lines.append(f"help: {self.help}")
        return "\n".join(lines)

    def __str__(self) -> str:  # pragma: no cover - used by pytest output
        return self.render()


class InputError(GpusizerError):
    """The workload, a rule file or a knowledge file is invalid (exit code 2)."""


class RuleError(GpusizerError):
    """A rule failed while it ran; names the rule and its file (exit code 2)."""


class Problems(InputError):
    """Several independent errors found in one pass, reported together."""

    def __init__(self, errors: list[GpusizerError]):
        super().__init__(errors[0].message, file=errors[0].file, line=errors[0].line,
                         col=errors[0].col, help=errors[0].help)
        self.errors = errors

    def render(self) -> str:
        return "\n".join(e.render() for e in self.errors)
