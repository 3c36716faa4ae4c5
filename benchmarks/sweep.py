"""Sweep benchmark: where a case's time goes, cases per second per core, and scaling over cores.

    python benchmarks/sweep.py [--cases 300] [--repeat 3] [--out benchmarks/sweep-results.txt]

1. Where one case's time goes, in one process (CPU seconds): validating the workload, the
   engine's run (matching, firing, combining), and what only a report needs (the derivation
   graph and the JSON document). The same cases, so the figures are ratios of one run.
1b. Inside the engine's run, on both backends: the backend's matching (durable-rules' C engine
   apart), the rules' lets and conclusions (and the rule that takes most of them), recording the
   firings and combining the contributions, and the rest.
2. Cases per second per core on the conclusions-only path a sweep takes, against the full path
   (graph and JSON) in the same run, on both rule-engine backends; for the shipped grid
   (examples/sweeps/open-models.yaml, 90 serving cases) and for a mixed set of training,
   fine-tuning and inference workloads.
3. Scaling: the same cases through ``engine.sweep.execute`` on 1, 2, ... up to every CPU this
   process may use; efficiency = rate / (workers x the rate on one worker). The pool's start
   (spawning and loading the rulebase in each worker) is timed apart.
4. What a 100,000-case sweep takes at the measured rates: here, and extrapolated to 16 and 64
   cores at the measured efficiency (an estimate, not a measurement).
Targets (from the project's issue): (2) at least 50 cases/s per core; (3) at least 80% of linear.

Each timed pass starts with the runner's memo cleared (``SessionRunner.forget``): a pass is what a sweep's
first cases cost, not a rerun of cases the runner has seen.

Compare figures of one run, not of two: the same tree's rates move by up to a third between processes
that differ only in their environment (on a 2-core machine, setting an unrelated environment variable
took durable-rules' mixed-set case from 44 to 74 ms), which is why each section times its
alternatives in the same process.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
GRID = ROOT / "examples" / "sweeps" / "open-models.yaml"


def grid_texts(rec) -> list[str]:
    import yaml

    from engine.sweep import spec as S

    spec = S.load_spec(GRID, rec)
    return [yaml.safe_dump(spec.workload(c)) for c in S.cases(spec, rec.rulebase.sha256, ())]


def mixed_texts(n: int) -> list[str]:
    import yaml
    from speed import workloads

    return [yaml.safe_dump(w) for w in workloads(n)]


def where_time_goes(rec, texts: list[str]) -> dict:
    from engine.explain.result import Result
    from engine.report.document import document

    t = time.process_time()
    loaded = [rec.load_text(x, "case") for x in texts]
    load_s = time.process_time() - t
    rec.runner.forget()
    t = time.process_time()
    outcomes = [rec.runner.run(w) for w in loaded]
    run_s = time.process_time() - t
    results = [Result(rec.rulebase, o) for o in outcomes]
    t = time.process_time()
    for r in results:
        _ = r.graph
    graph_s = time.process_time() - t
    t = time.process_time()
    for r in results:
        document(r)
    doc_s = time.process_time() - t
    n = len(texts)
    return {k: v / n * 1000 for k, v in (("load", load_s), ("run", run_s), ("graph", graph_s), ("document", doc_s))}


def inside_the_run(rec, texts: list[str]) -> dict:
    """Where the engine's run of a case goes (wall ms per case, one pass after a warm-up, the memo cleared
    before each): the backend's matching (for durable-rules, with its C engine's calls apart), the rules'
    lets and conclusions (with the rule that takes most), recording the firings and combining the
    contributions, and the rest (the steps' bookkeeping and the memos' keys). Each part is timed by
    wrapping the method that does it, for this pass only.
    """
    from collections import Counter

    from engine.run import session as SS

    clock = time.perf_counter
    spent: Counter = Counter()
    by_rule: Counter = Counter()
    firings: Counter = Counter()
    saved: list[tuple[object, str, object]] = []

    def timed(owner, name: str, label: str, per_rule: bool = False) -> None:
        inner = getattr(owner, name)
        saved.append((owner, name, owner.__dict__.get(name)))

        def run(*args, **kwargs):
            t = clock()
            try:
                return inner(*args, **kwargs)
            finally:
                dt = clock() - t
                spent[label] += dt
                if per_rule:
                    by_rule[args[1].id] += dt
                    firings[args[1].id] += 1

        setattr(owner, name, run)

    loaded = [rec.load_text(x, "case") for x in texts]  # validating is section 1's, not the run's

    def one_pass() -> float:
        rec.runner.forget()
        t = clock()
        for w in loaded:
            rec.runner.run(w)
        return clock() - t

    one_pass()  # warm-up: what a process's first case loads once
    runner = rec.runner
    opened = runner._open

    def open_timed():
        session = opened()
        for name in ("match", "assert_values", "close"):
            timed(session, name, "backend")
        return session

    timed(SS._Run, "compute", "lets", per_rule=True)
    timed(SS._Run, "record", "combine")
    timed(SS._Run, "conclude", "combine")
    runner._open = open_timed
    if hasattr(type(runner.compiled), "send"):  # durable-rules: its C engine's calls (asserting facts, running actions)
        timed(type(runner.compiled), "send", "engine")
    total = 0.0
    try:
        total = one_pass()
    finally:
        del runner._open
        for owner, name, before in reversed(saved):
            if before is None:
                delattr(owner, name)
            else:
                setattr(owner, name, before)
    n = len(texts)
    top, top_s = by_rule.most_common(1)[0]
    out = {k: spent[k] / n * 1000 for k in ("backend", "engine", "lets", "combine")}
    out["total"] = total / n * 1000
    out["rest"] = out["total"] - out["backend"] - out["lets"] - out["combine"]
    out["top"], out["top_ms"], out["top_firings"] = top, top_s / n * 1000, firings[top] / n
    return out


def per_core(rec, texts: list[str], repeat: int) -> dict:
    """CPU seconds per case, conclusions only and full, taking turns (median of ``repeat``)."""
    from engine.report.document import document
    from engine.sweep.table import table_config
    from engine.sweep.worker import values_row

    fields = table_config().fields()
    fast, full = [], []
    for _ in range(repeat):
        # each pass is a sweep's first: nothing kept from the pass before (the runner's memo is cleared)
        rec.runner.forget()
        t = time.process_time()
        for x in texts:
            values_row(rec.rulebase, rec.runner.run(rec.load_text(x, "case")).values, fields)
        fast.append(time.process_time() - t)
        rec.runner.forget()
        t = time.process_time()
        for x in texts:
            r = rec.recommend_text(x, "case")
            _ = r.graph
            document(r)
        full.append(time.process_time() - t)
    n = len(texts)
    f, g = statistics.median(fast), statistics.median(full)
    return {"fast_per_s": n / f, "full_per_s": n / g, "speedup": g / f}


def timed_batch(config, tasks):
    """run_many, with the CPU seconds the worker spent on the batch on its first row."""
    from engine.sweep.worker import run_many

    t = time.process_time()
    rows = run_many(config, tasks)
    rows[0]["cpu"] = time.process_time() - t
    return rows


def scaling(texts: list[str], counts: list[int]) -> list[dict]:
    from engine import Recommender
    from engine.sweep.execute import execute
    from engine.sweep.table import table_config
    from engine.sweep.worker import Config, Task

    with Recommender() as rec:
        sha = rec.rulebase.sha256
    config = Config((), (), sha, table_config().fields())
    tasks = [Task(f"c{i:06d}", str(i), x, "case") for i, x in enumerate(texts)]
    out = []
    for workers in counts:
        # the pool's start (spawning the workers, each loading the rulebase) is timed apart
        t0 = time.perf_counter()
        c0 = time.process_time()
        stream = execute(config, iter(tasks), total=len(tasks), workers=workers, fn=timed_batch)
        first = next(stream)
        t1 = time.perf_counter()
        rows = [first, *stream]
        t2 = time.perf_counter()
        main_cpu = time.process_time() - c0
        assert len(rows) == len(tasks) and all(r["status"] == "ok" for r in rows), "every case answers"
        worker_cpu = sum(r.get("cpu", 0.0) for r in rows)
        out.append(
            {
                "workers": workers,
                "start_s": t1 - t0,
                "rate": (len(rows) - 1) / (t2 - t1),
                "worker_cpu": worker_cpu / len(rows),
                "main_cpu": main_cpu / len(rows),
            }
        )
    base = out[0]["rate"]
    for o in out:
        o["efficiency"] = o["rate"] / (o["workers"] * base)
    return out


def hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=300, help="mixed workloads (and cases per scaling run)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "sweep-results.txt"))
    args = ap.parse_args()

    from engine.backends import get_backend
    from engine.cli import recommender
    from engine.sweep.execute import cpu_count

    cores = cpu_count()
    lines = [f"gpusizer sweep benchmark (CPython {platform.python_version()}, {cores} CPUs this process may use)", ""]

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    rec = recommender(argparse.Namespace())
    grid, mixed = grid_texts(rec), mixed_texts(args.cases)
    say("1. where a case's time goes (CPU ms per case, one process, durable-rules backend)")
    for name, texts in (("shipped grid", grid), ("mixed set", mixed)):
        d = where_time_goes(rec, texts)
        total = sum(d.values())
        say(
            f"   {name:12s} validate {d['load']:5.1f}  engine run {d['run']:5.1f}  graph {d['graph']:5.1f}  "
            f"JSON document {d['document']:5.1f}   (run = {d['run'] / total:.0%} of {total:.1f})"
        )
    say("")
    say("1b. inside the engine's run (wall ms per case, one pass; shares of the run)")
    for backend in ("durable", "python"):
        from engine import Recommender

        with Recommender(rulebase=rec.rulebase, backend=get_backend(backend)) as r:
            for name, texts in (("shipped grid", grid), ("mixed set", mixed)):
                d = inside_the_run(r, texts)
                total = d["total"]
                engine = f" (its C engine {d['engine']:4.1f})" if backend == "durable" else ""
                say(
                    f"   {backend:8s} {name:12s} run {total:5.1f}: matching {d['backend']:5.1f}{engine} "
                    f"{d['backend'] / total:4.0%}, lets and conclusions {d['lets']:5.1f} {d['lets'] / total:4.0%} "
                    f"({d['top']} {d['top_ms']:4.1f}, {d['top_firings']:.0f} firings), recording and combining "
                    f"{d['combine']:4.1f} {d['combine'] / total:4.0%}, "
                    f"the rest {d['rest']:4.1f} {d['rest'] / total:4.0%}"
                )
    say("")
    say(f"2. cases per second per core (CPU time; median of {args.repeat}), conclusions only against the full path")
    rates = {}
    for backend in ("durable", "python"):
        from engine import Recommender

        with Recommender(rulebase=rec.rulebase, backend=get_backend(backend)) as r:
            for name, texts in (("shipped grid", grid), ("mixed set", mixed)):
                p = per_core(r, texts, args.repeat)
                rates[(backend, name)] = p["fast_per_s"]
                say(
                    f"   {backend:8s} {name:12s} conclusions only {p['fast_per_s']:5.1f}/s"
                    f"   full {p['full_per_s']:5.1f}/s   ratio {p['speedup']:.2f}x   (target >= 50/s)"
                )
    say("")
    counts = sorted({1, *range(2, cores + 1)})
    say(f"3. scaling on this machine: {len(mixed)} mixed cases through the process pool (wall time)")
    scale = scaling(mixed, counts)
    for s in scale:
        say(
            f"   {s['workers']:2d} worker(s): start {s['start_s']:4.1f} s, then {s['rate']:5.1f} cases/s, "
            f"efficiency {s['efficiency']:.0%} (wall)   CPU a case: worker {s['worker_cpu'] * 1000:.1f} ms, "
            f"command {s['main_cpu'] * 1000:.2f} ms"
        )
    say(f"   load while measuring (1-minute average): {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    say("")
    # a worker's CPU per case (on one worker, where nothing competes) and the command's; the
    # command is one process, so its CPU per case caps the rate whatever the number of cores
    worker = scale[0]["worker_cpu"]
    main = max(s["main_cpu"] for s in scale)
    here = scale[-1]["rate"]
    say("4. a 100,000-case sweep (mixed set, durable-rules backend)")
    say(f"   here ({cores} CPUs, measured {here:.1f} cases/s): {hms(100_000 / here)}")
    say(
        f"   a pool worker spends {worker * 1000:.1f} ms CPU a case ({1 / worker:.1f} cases/s per core), "
        f"the command {main * 1000:.2f} ms (a cap of {1 / main:.0f} cases/s)"
    )
    for n in (16, 64):
        rate = min(n / worker, 1 / main)
        say(
            f"   {n} cores (extrapolated, idle cores assumed): {rate:.0f} cases/s, {hms(100_000 / rate)}, "
            f"{rate * worker / n:.0%} of linear"
        )
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    _ = os


if __name__ == "__main__":
    main()
