"""The one number formatter: reports, templates, graphs, rule messages and the CLI all use it;
and the one way a text that came from outside is shown (``printable``, ``excerpt``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

__all__ = ["excerpt", "num", "printable", "quantity", "text"]

# what a terminal or a viewer would act on instead of showing: C0 and C1 controls (line breaks;
# a tab is whitespace and stays), DEL, the line and paragraph separators, and the bidirectional embeddings,
# overrides and isolates that reorder what follows them
_HIDDEN = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(value: str) -> str:
    r"""A text with every character that a terminal or a viewer acts on shown as an escape
    (a line break as \n, U+202E as \u202e), so that a name can fake no line and reorder nothing.
    """
    if not _HIDDEN.search(value):
        return value
    return _HIDDEN.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), value)


_RUN = re.compile(r"\S{200,}")


def excerpt(value: str, limit: int = 1000) -> str:
    """A text cut to a short excerpt, for a message that echoes input: a run of 200 or more
    characters without a space keeps its first 60, and the whole its first ``limit``.
    """
    out = _RUN.sub(lambda m: f"{m.group()[:60]}...({len(m.group()):,} characters)", value)
    if len(out) > limit:
        out = f"{out[:limit]}... ({len(out):,} characters in all)"
    return out


def num(value: object, digits: int = 4) -> str:
    """A number for people: whole numbers below 10^12 with thousands separators (68,976,648,192),
    larger whole numbers in exponent form (1.5e+12), others to ``digits`` significant digits
    (153.7, 0.5, 0.0001234).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    if isinstance(value, int) or value.is_integer():
        return f"{int(value):,}" if abs(value) < 1e12 else f"{value:.{digits}g}"
    if value == 0 or not math.isfinite(value):
        return str(value)
    mag = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - mag)
    out = f"{value:,.{decimals}f}"
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return out


def text(value: object) -> str:
    """Any value as it reads in a sentence: numbers by ``num``, lists joined by commas."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "(none)"
    if isinstance(value, (int, float)):
        return num(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {text(v)}" for k, v in value.items())
    if isinstance(value, Sequence):
        return ", ".join(text(v) for v in value)
    return str(value)


def quantity(value: object, unit: str | None = None) -> str:
    """A value with its unit, as reports show it: yes/no for booleans, (none) for an empty list."""
    if isinstance(value, list):
        return ", ".join(quantity(v) for v in value) if value else "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k} {quantity(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    shown = num(value)
    return f"{shown} {unit}" if unit and shown else shown
