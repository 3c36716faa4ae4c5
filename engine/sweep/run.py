"""A checked sweep run into a folder: its cases as plain data, their rows as they finish, the tables.

``gpusizer sweep`` and the server's sweep jobs both run a sweep this way; they differ only in
where the folder is, whether earlier rows are reused, and how progress is shown.

A ``Sweep`` is what the run needs of a checked specification (``spec.Spec``), as plain data
that crosses a pipe as JSON: a server's worker checks the specification, and the job that runs
its cases lives in another process. A case's workload text is made from the base and the case's
values only when the case is sent to a worker, so that a large sweep never holds them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import yaml

from . import spec as S
from .execute import BatchFn, Stop, execute
from .resume import jsonl
from .table import TableConfig, pareto_csv, summary_csv, summary_html
from .worker import Config, Task, run_many

TABLES = ("summary.csv", "pareto.csv", "summary.html")


@dataclass(frozen=True)
class Sweep:
    """A checked specification's cases and what its tables need."""

    name: str
    description: str
    display: str  # what messages call the specification; a case is DISPLAY#ID
    base: Mapping[str, Any]
    label_keys: tuple[str, ...]
    columns: tuple[str, ...]  # the summary's columns: the declared ones, then the specification's own
    # the label keys that are workload inputs setting the attribute of their own name (precision, model.name): a
    # column or group of that name shows the same value (no rule concludes an input), so the tables show it once
    same: tuple[str, ...]
    fields: tuple[str, ...]  # every attribute a row records
    rulebase_sha: str
    cases: tuple[S.Case, ...]

    def text(self, case: S.Case) -> str:
        """The case's workload as YAML text: the base with the case's values laid over it."""
        return str(yaml.safe_dump(S.overlay(self.base, case.vary), sort_keys=False, allow_unicode=True))

    def tasks(self, cases: Sequence[S.Case]) -> Iterator[Task]:
        """The cases as a worker runs them, each made as it is sent."""
        for c in cases:
            yield Task(c.id, c.key, self.text(c), f"{self.display}#{c.id}")

    def plain(self) -> dict[str, Any]:
        """The sweep as JSON-ready data (``from_plain`` reads it back)."""
        return {
            "name": self.name,
            "description": self.description,
            "display": self.display,
            "base": dict(self.base),
            "label_keys": list(self.label_keys),
            "columns": list(self.columns),
            "same": list(self.same),
            "fields": list(self.fields),
            "rulebase_sha": self.rulebase_sha,
            "cases": [[c.id, c.key, [list(kv) for kv in c.vary]] for c in self.cases],
        }

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> Sweep:
        """A sweep from ``plain()``'s data (made by gpusizer, not by a client)."""
        return cls(
            name=str(data["name"]),
            description=str(data["description"]),
            display=str(data["display"]),
            base=dict(data["base"]),
            label_keys=tuple(data["label_keys"]),
            columns=tuple(data["columns"]),
            same=tuple(data["same"]),
            fields=tuple(data["fields"]),
            rulebase_sha=str(data["rulebase_sha"]),
            cases=tuple(S.Case(i, tuple((k, v) for k, v in vary), key) for i, key, vary in data["cases"]),
        )


def prepare(spec: S.Spec, rulebase: Any, config: TableConfig) -> Sweep:
    """The cases of a checked specification and the columns its tables show."""
    fields = config.fields(spec.columns)
    attribute_of = rulebase.inputs.attr_of
    return Sweep(
        name=spec.name,
        description=spec.description,
        display=spec.display,
        base=dict(spec.base),
        label_keys=spec.label_keys,
        columns=(*config.columns, *(c for c in spec.columns if c not in config.columns)),
        same=tuple(k for k in spec.label_keys if attribute_of.get(tuple(k.split("."))) == k),
        fields=fields,
        rulebase_sha=rulebase.sha256,
        cases=tuple(S.cases(spec, rulebase.sha256, fields)),
    )


def run_cases(
    sweep: Sweep,
    worker: Config,
    todo: Sequence[S.Case],
    stream: TextIO,
    *,
    workers: int,
    backend: str = "local",
    scheduler: str | None = None,
    timeout: float = 300.0,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    stop: Stop | None = None,
    fn: BatchFn = run_many,
) -> Iterator[dict[str, Any]]:
    """Run ``todo``: each row, with its case's varied values, is written to ``stream`` (a line of
    ``results.jsonl``, flushed), given to ``on_row`` and yielded, as cases finish.
    """
    by_id = {c.id: c for c in todo}
    for row in execute(
        worker,
        sweep.tasks(todo),
        total=len(todo),
        workers=workers,
        backend=backend,
        scheduler=scheduler,
        timeout=timeout,
        fn=fn,
        stop=stop,
    ):
        row["vary"] = dict(by_id[row["case"]].vary)
        stream.write(jsonl(row))
        stream.flush()
        if on_row is not None:
            on_row(row)
        yield row


def not_run_row(case: S.Case, why: str) -> dict[str, Any]:
    """The row of a case that was not run (its sweep was stopped first)."""
    return {
        "case": case.id,
        "key": case.key,
        "status": "cancelled",
        "vary": dict(case.vary),
        "values": {},
        "units": {},
        "error": why,
        "seconds": None,
    }


def tables(
    config: TableConfig, sweep: Sweep, rows: Sequence[Mapping[str, Any]], totals: Mapping[str, Any]
) -> dict[str, str]:
    """``summary.csv``, ``pareto.csv`` and ``summary.html`` (file name -> text) for the rows."""
    labels, columns, same = sweep.label_keys, sweep.columns, sweep.same
    return {
        "summary.csv": summary_csv(rows, labels, columns, same),
        "pareto.csv": pareto_csv(config, rows, labels, columns, same),
        "summary.html": summary_html(
            config, rows, labels, columns, same, title=sweep.name, description=sweep.description, totals=totals
        ),
    }


def totals(ran: int, started: float, workers: int, backend: str) -> dict[str, Any]:
    """What the summary page's footer says of a run."""
    seconds = time.monotonic() - started
    return {"seconds": seconds, "rate": ran / seconds if seconds > 0 else 0.0, "workers": workers, "backend": backend}
