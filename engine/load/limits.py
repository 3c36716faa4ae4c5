"""How much gpusizer reads: the limits every file meets before anything else sees it.

Each kind of file has its own bounds, sized far above what a real file of that kind needs and
far below what would exhaust memory or time: its size in bytes, the characters of one text
value, the nodes of its document (with every alias expanded, as a consumer would walk it) and
its nesting depth. A site that legitimately needs more raises a bound with an environment
variable, which the error message names:

=====================  ==========================  ===================================
bound                  variable                    default (workload / rules, knowledge / record)
=====================  ==========================  ===================================
file size              ``GPUSIZER_MAX_FILE_MB``    1 / 16 / 64 MB
one text value         ``GPUSIZER_MAX_TEXT``       65,536 characters (all kinds)
document nodes         ``GPUSIZER_MAX_NODES``      100,000 / 1,000,000 / 10,000,000
nesting depth          (fixed)                     64 levels
=====================  ==========================  ===================================

Two more kinds are read under the same bounds: a **document** a workload imports (a JSON file
named by a path or found in a local cache) as a rule or knowledge file, and a **reference** (a
cache's small pointer file naming a revision) as a workload; a **key** file too is read as a
workload. Nothing gpusizer opens is read past its kind's bounds.

The variables set one bound for every kind of file. Numbers must be finite everywhere; that is
not a limit but a rule of the formats, and is checked where each format is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from ..errors import InputError

Kind = Literal["workload", "rules", "record", "document", "reference"]

MAX_DEPTH = 64  # nesting of mappings and lists; no gpusizer file needs more than a dozen
FILE_MB_VAR = "GPUSIZER_MAX_FILE_MB"
TEXT_VAR = "GPUSIZER_MAX_TEXT"
NODES_VAR = "GPUSIZER_MAX_NODES"

_FILE_MB: dict[str, int] = {"workload": 1, "rules": 16, "record": 64, "document": 16, "reference": 1}
_NODES: dict[str, int] = {
    "workload": 100_000,
    "rules": 1_000_000,
    "record": 10_000_000,
    "document": 1_000_000,
    "reference": 100_000,
}
MAX_ENTRIES = 10_000  # entries of a folder gpusizer lists (a cache's revisions); a real one has a handful
_TEXT = 65_536
_MB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """The bounds one file is read under."""

    kind: str
    file_bytes: int
    text_chars: int
    nodes: int
    depth: int = MAX_DEPTH


def _env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise InputError(
            f"{name}={raw!r} is not a positive whole number",
            file="<environment>",
            help=f"set {name} to a whole number above 0, or unset it for the default ({default:,})",
        )
    return value


def limits(kind: Kind = "rules") -> Limits:
    """The bounds for a kind of file, raised where the environment says so."""
    return Limits(
        kind=kind,
        file_bytes=_env(FILE_MB_VAR, _FILE_MB[kind]) * _MB,
        text_chars=_env(TEXT_VAR, _TEXT),
        nodes=_env(NODES_VAR, _NODES[kind]),
    )


def raise_hint(variable: str, what: str) -> str:
    """The help line of a limit that a user may legitimately need to raise."""
    return f"if the {what} is meant to be this large, raise the limit: {variable}=N (see 'Limits' in the README)"


__all__ = ["FILE_MB_VAR", "MAX_DEPTH", "MAX_ENTRIES", "NODES_VAR", "TEXT_VAR", "Kind", "Limits", "limits", "raise_hint"]
