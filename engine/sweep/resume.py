"""Resuming a sweep: the rows of ``results.jsonl`` that still answer a case of the specification.

A row is reused when its ``key`` (the case's whole workload, the rulebase's SHA-256 and the
recorded attributes) is the key of a case now, and it finished: ``ok``, ``invalid`` or
``error`` (deterministic answers). A case that crashed or timed out runs again. A line that is
not a row (a run stopped in the middle of writing it) is skipped; the file is rewritten with the
reused rows only, renumbered as the specification numbers its cases now.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .spec import Case

FINISHED = ("ok", "invalid", "error")


def previous_rows(path: Path, cases: Iterable[Case]) -> dict[str, dict[str, Any]]:
    """Case id -> the earlier row that answers it (renumbered, with its varied values now)."""
    by_key = {c.key: c for c in cases}
    out: dict[str, dict[str, Any]] = {}
    try:
        stream = path.open(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return out
    with stream:
        for line in stream:
            row = _row(line)
            if row is None or row["status"] not in FINISHED:
                continue
            case = by_key.get(row["key"])
            if case is None or case.id in out:
                continue
            row["case"] = case.id
            row["vary"] = dict(case.vary)
            out[case.id] = row
    return out


def _row(line: str) -> dict[str, Any] | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("key"), str) or not isinstance(row.get("status"), str):
        return None
    if not isinstance(row.get("values", {}), Mapping):
        return None
    return row


def jsonl(row: Mapping[str, Any]) -> str:
    """One row as one line of ``results.jsonl``."""
    order = ("case", "vary", "status", "values", "units", "error", "seconds", "key")
    ordered = {k: row[k] for k in order if k in row}
    return json.dumps(ordered, ensure_ascii=False, sort_keys=False, default=str) + "\n"
