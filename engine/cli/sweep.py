"""``gpusizer sweep SPEC -o DIR``: many workloads from one specification, on every core or on Dask.

DIR gets ``results.jsonl`` (a row per case as it finishes), then ``summary.csv``, ``pareto.csv``
and ``summary.html``. Run again into the same DIR, it reuses every finished row whose case is
unchanged (``engine.sweep.resume``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import ExitCode, InputError, OutputError
from . import make_dir, recommender, rulebase_args, write_atomic

FAILED_EXIT = {"invalid": ExitCode.INVALID, "error": ExitCode.INTERNAL, "crashed": ExitCode.INTERNAL}
FAILED_EXIT["timeout"] = ExitCode.INTERNAL


def add_parser(sub: Any, name: str) -> None:
    sw = sub.add_parser(
        name, help="run many workloads from one specification: a table, a cost/throughput front and a page"
    )
    sw.add_argument("spec", metavar="SPEC", help="sweep specification (YAML): base, vary, cases, where")
    sw.add_argument("-o", "--output", metavar="DIR", required=True, help="folder for the results (resumed if present)")
    sw.add_argument(
        "--workers", type=int, metavar="N", help="worker processes (default: the CPUs available; 0: in this process)"
    )
    sw.add_argument("--backend", choices=["local", "dask"], default="local", help="process pool here, or Dask")
    sw.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --backend dask: an existing scheduler (tcp://host:8786)"
    )
    sw.add_argument(
        "--timeout", type=float, default=300.0, metavar="SECONDS", help="stop a case that runs longer (default 300)"
    )
    rulebase_args(sw)


def run(args: argparse.Namespace) -> int:
    from ..sweep import spec as S
    from ..sweep.execute import cpu_count
    from ..sweep.progress import Progress
    from ..sweep.resume import jsonl, previous_rows
    from ..sweep.run import prepare, run_cases, tables, totals
    from ..sweep.table import check_fields, table_config
    from ..sweep.worker import Config

    if args.workers is not None and args.workers < 0:
        raise InputError(f"--workers {args.workers}: give 0 or more", help="0 runs the cases in this process")
    if args.scheduler and args.backend != "dask":
        raise InputError("--scheduler needs --backend dask", help="add --backend dask")
    if not args.timeout > 0:
        raise InputError(f"--timeout {args.timeout:g}: give a positive number of seconds", help="e.g. --timeout 60")
    with recommender(args) as rec:
        rb = rec.rulebase
        config = table_config()
        check_fields(config, rb.attributes)
        sweep = prepare(S.load_spec(args.spec, rec), rb, config)
    cases = sweep.cases
    out = Path(args.output)
    make_dir(out)
    results = out / "results.jsonl"
    rows = previous_rows(results, cases)
    resumed = len(rows)
    write_atomic(results, "".join(jsonl(rows[c.id]) for c in cases if c.id in rows))
    todo = [c for c in cases if c.id not in rows]
    workers = cpu_count() if args.workers is None else args.workers
    worker_config = Config(
        rules=tuple(os.path.abspath(p) for p in args.rules or ()),
        knowledge=tuple(os.path.abspath(p) for p in args.knowledge or ()),
        rulebase_sha=rb.sha256,
        fields=sweep.fields,
    )
    progress = Progress(len(todo))
    start = time.monotonic()
    try:
        stream = results.open("a", encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write {results}: {exc.strerror or exc}", file=str(results)) from None
    try:
        with stream:
            for row in run_cases(
                sweep,
                worker_config,
                todo,
                stream,
                workers=workers,
                backend=args.backend,
                scheduler=args.scheduler,
                timeout=args.timeout,
            ):
                rows[row["case"]] = row
                progress.update(1, failed=row["status"] != "ok")
            os.fsync(stream.fileno())
    except KeyboardInterrupt:
        # every finished case's row is in results.jsonl (each is written and flushed as it comes): say so, and how
        # to go on; the tables are written by the run that finishes
        progress.close()
        print(
            f"sweep: interrupted; {len(rows)} of {len(cases)} case(s) have their rows in {results} "
            f"({len(rows) - resumed} from this run); run the same command again to go on from there",
            file=sys.stderr,
        )
        raise
    progress.close()
    ran = len(todo)
    total = totals(ran, start, workers, args.backend)
    failed = sum(1 for r in rows.values() if r["status"] != "ok")
    ordered = [rows[c.id] for c in cases]
    for name, text in tables(config, sweep, ordered, total).items():
        write_atomic(out / name, text)
    print(
        f"sweep: {len(cases)} case(s), {failed} failed, {resumed} reused; ran {ran} in {total['seconds']:.1f} s, "
        f"{total['rate']:.1f} cases/s on {workers} worker(s) ({args.backend}); {out / 'summary.csv'}",
        file=sys.stderr,
    )
    status = ExitCode.OK
    for r in ordered:
        status = max(status, FAILED_EXIT.get(r["status"], ExitCode.OK))
    return int(status)
