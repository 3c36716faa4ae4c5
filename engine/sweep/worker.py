"""One case, run where a worker runs it: in this process, a pool's process or a Dask worker.

A worker loads the rulebase once (``init``, or on its first case) and then runs each case to its
conclusions only: the session's final values, without the derivation graph or the JSON document
that a report needs. The values are the ones the full path reports (``tests/test_sweep.py``
holds the two to each other).

A row is a plain dict that pickles and serialises as JSON: ``case``, ``key``, ``status``
(``ok``, ``invalid`` for a workload that is not valid, ``error`` for a rule that failed or a
bug, ``crashed`` and ``timeout`` for a worker that died or hung), ``values`` (attribute ->
value), ``units``, ``error`` and ``seconds``.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import GpusizerError, InputError

STATUSES = ("ok", "invalid", "error", "crashed", "timeout")


@dataclass(frozen=True)
class Config:
    """What a worker needs to load the same rulebase as the command that started it."""

    rules: tuple[str, ...]  # --rules folders laid over the worker's own shipped rules
    knowledge: tuple[str, ...]  # --knowledge folders
    rulebase_sha: str  # what the command loaded; a worker with another rulebase refuses its cases
    fields: tuple[str, ...]  # the attributes each row records
    # documents a server's request sent with the specification: a case's imports name these and no
    # file is read; None (the command) reads imports from disk, relative to the specification
    attached: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Task:
    """One case to run: its id, identity, workload text and the name messages give it."""

    case: str
    key: str
    text: str
    display: str


_LOADED: dict[tuple[tuple[str, ...], tuple[str, ...], str], Any] = {}


def recommender(config: Config) -> Any:
    """The recommender of this process for the configuration, loaded on first use and kept.

    The cyclic collector pauses while the rulebase loads and what was loaded is then frozen out
    of its passes, as the command line does (``engine.cli.recommender``).
    """
    # the rule engine backend as GPUSIZER_BACKEND names it now: a process that runs sweeps under both (the tests
    # do) keeps one recommender for each
    loaded = (config.rules, config.knowledge, os.environ.get("GPUSIZER_BACKEND") or "durable")
    rec = _LOADED.get(loaded)
    if rec is None:
        from ..api import Recommender
        from ..load.resources import data_dir

        enabled = gc.isenabled()
        gc.disable()
        try:
            rec = Recommender([data_dir("rules"), *config.rules], [data_dir("knowledge"), *config.knowledge])
        finally:
            gc.freeze()
            if enabled:
                gc.enable()
        _LOADED[loaded] = rec
    return rec


def init(config: Config) -> None:
    """A pool's initializer: load the rulebase once per worker process."""
    recommender(config)


def run_task(config: Config, task: Task) -> dict[str, Any]:
    """Run one case to its row; every failure of the case is a row, never an exception."""
    start = time.perf_counter()
    row: dict[str, Any] = {"case": task.case, "key": task.key}
    try:
        rec = recommender(config)
        if rec.rulebase.sha256 != config.rulebase_sha:
            raise InputError(
                f"this worker (pid {os.getpid()}) loaded another rulebase ({rec.rulebase.sha256[:12]}) "
                f"than the command ({config.rulebase_sha[:12]})",
                help="install the same gpusizer version on every worker, and make --rules and --knowledge "
                "folders the same on every host",
            )
        rb = rec.rulebase
        attached = dict(config.attached) if config.attached is not None else None
        workload = rb.inputs.load(None, rb.catalogs, display=task.display, text=task.text, attached=attached)
        row.update(values_row(rec.rulebase, rec.runner.run(workload).values, config.fields))
    except Exception as exc:  # a bug must not cost the other cases their rows
        row.update(failed(exc))
    row["seconds"] = round(time.perf_counter() - start, 6)
    return row


def values_row(rb: Any, values: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """A finished case's status, values and units."""
    attributes = rb.attributes
    return {
        "status": "ok",
        "values": {f: _plain(values[f]) for f in fields if f in values},
        "units": {
            f: u
            for f in fields
            if f in values and f in attributes and (u := attributes[f].unit_for(values)) is not None
        },
        "error": None,
    }


def failed(exc: BaseException) -> dict[str, Any]:
    """A failed case's status and error: ``invalid`` for bad input, ``error`` for anything else."""
    if isinstance(exc, GpusizerError):
        status = "invalid" if isinstance(exc, InputError) else "error"
        return {"status": status, "values": {}, "units": {}, "error": _message(exc)}
    return {
        "status": "error",
        "values": {},
        "units": {},
        "error": f"internal error: {type(exc).__name__}: {exc} (a bug in gpusizer; report it with the case)",
    }


def _message(exc: GpusizerError) -> str:
    """The error as one line: where, what, and the fix."""
    errors = getattr(exc, "errors", None) or [exc]
    parts = []
    for e in errors[:3]:
        where = ":".join(str(p) for p in (e.file, e.line, e.col) if p is not None)
        text = f"{where}: {e.message}" if where else e.message
        if e.help:
            text += f" (help: {e.help})"
        parts.append(text)
    if len(errors) > 3:
        parts.append(f"and {len(errors) - 3} more")
    return "; ".join(parts)


def _plain(value: Any) -> Any:
    """A value as JSON has it (tuples as lists); the rules' values are already JSON-like."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def run_many(config: Config, tasks: list[Task]) -> list[dict[str, Any]]:
    """Several cases in one call (a Dask task or a batch of a pool): one row each."""
    return [run_task(config, t) for t in tasks]
