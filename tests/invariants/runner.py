"""Run the cases of a tier in process, over every core, and count what the invariants found.

Each worker loads the rulebase once (``engine.Recommender``) and runs its cases as the API does:
``Recommender.recommend`` gives the conclusions without building the derivation graph (a lazy
property of the result) or a report. With ``compare`` a second recommender on the reference
backend (python) runs every case too, and the two must conclude the same values.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from . import space
from .checks import INVARIANTS, Context, Failure, Outcome, inspected, quantizing, run_checks, summary

COMPARE = "backends-agree"
COMPARE_TEXT = "the reference backend (python) concludes the same values as the default one"
BATCH = 40  # cases a worker runs per task


class Worker:
    """One process's recommender(s) and what inspect-model says of each model (computed once)."""

    def __init__(self, backend: str | None, compare: bool, rulebase: Any = None) -> None:
        from engine import Recommender
        from engine.backends import get_backend

        self.rec = Recommender(rulebase=rulebase, backend=get_backend(backend) if backend else None)
        self.ref = Recommender(rulebase=self.rec.rulebase, backend=get_backend("python")) if compare else None
        self.ctx = Context(self.rec.rulebase, {})

    def inspect(self, model: str) -> None:
        if model not in self.ctx.inspected:
            self.ctx.inspected[model] = inspected(self.rec, model)

    def run(self, case: space.Case) -> Outcome:
        from engine import GpusizerError, InputError, RuleError

        self.inspect(case.model)
        workload = case.workload()
        try:
            result = self.rec.recommend(workload)
        except RuleError as exc:
            return self._crash(case, f"rule {exc.first.rule or '?'}", exc.render())
        except InputError as exc:
            if not exc.help:
                return self._crash(case, "input error without help", exc.render())
            return Outcome(case, "input-error", exc.render(), checked={"runs"})
        except GpusizerError as exc:
            return self._crash(case, type(exc).__name__, exc.render())
        except Exception as exc:
            return self._crash(case, type(exc).__name__, f"{type(exc).__name__}: {exc}")
        checked, failures = run_checks(case, result, self.ctx)
        if self.ref is not None:
            checked.add(COMPARE)
            failures.extend(self._compare(workload, result))
        return Outcome(case, "ok", checked=checked, failures=failures, summary=summary(result.values))

    def _crash(self, case: space.Case, key: str, message: str) -> Outcome:
        return Outcome(case, "crash", message, checked={"runs"}, failures=[Failure("runs", key, message)])

    def _compare(self, workload: dict[str, Any], result: Any) -> list[Failure]:
        assert self.ref is not None
        try:
            other = self.ref.recommend(workload).values
        except Exception as exc:
            return [Failure(COMPARE, "reference fails", f"the python backend: {type(exc).__name__}: {exc}")]
        mine = result.values
        diff = sorted(k for k in set(mine) | set(other) if _canon(mine.get(k)) != _canon(other.get(k)))
        if not diff:
            return []
        shown = "; ".join(f"{k}: {_canon(mine.get(k))[:80]} vs {_canon(other.get(k))[:80]}" for k in diff[:3])
        return [Failure(COMPARE, f"differ: {diff[0]}", f"{len(diff)} values differ: {shown}")]

    def close(self) -> None:
        self.rec.close()
        if self.ref is not None:
            self.ref.close()


def _canon(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=str)


_worker: Worker | None = None


def _init(backend: str | None, compare: bool) -> None:
    global _worker
    _worker = Worker(backend, compare)


def _run_batch(cases: Sequence[space.Case]) -> list[Outcome]:
    assert _worker is not None
    return [_worker.run(c) for c in cases]


def default_jobs() -> int:
    env = os.environ.get("GPUSIZER_SWEEP_JOBS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class Report:
    """What a sweep ran and found."""

    tier: str
    backend: str
    generated: int
    trimmed: Counter[str]
    selected: int
    outcomes: list[Outcome]
    seconds: float
    jobs: int
    compared: bool
    cpu_seconds: float = 0.0
    quantizing_pairs: int = 0
    cross: list[tuple[space.Case, Failure]] = field(default_factory=list)

    def invariants(self) -> list[str]:
        return list(INVARIANTS) + ([COMPARE] if self.compared else [])

    def failures(self, invariant: str) -> list[tuple[space.Case, Failure]]:
        out = [(o.case, f) for o in self.outcomes for f in o.failures if f.invariant == invariant]
        out += [(c, f) for c, f in self.cross if f.invariant == invariant]
        return out

    def failed(self, invariant: str) -> int:
        """Cases (for quantizing-cost: pairs of cases) that break an invariant."""
        if invariant == "quantizing-cost":
            return len(self.failures(invariant))
        return len({c.id for c, _ in self.failures(invariant)})

    def checked(self, invariant: str) -> int:
        if invariant == "quantizing-cost":
            return self.quantizing_pairs
        return sum(invariant in o.checked for o in self.outcomes)

    def counts(self) -> str:
        status = Counter(o.status for o in self.outcomes)
        rate = len(self.outcomes) / self.seconds if self.seconds else 0.0
        lines = [
            f"invariant sweep, tier '{self.tier}', backend {self.backend}"
            + (" (compared with python)" if self.compared else ""),
            f"  cases generated {self.generated:,}; trimmed {sum(self.trimmed.values()):,}"
            + "".join(f"; {n:,} {why}" for why, n in sorted(self.trimmed.items())),
            f"  run {len(self.outcomes):,}"
            + (
                f" of {self.selected:,} selected"
                if self.selected != self.generated - sum(self.trimmed.values())
                else ""
            )
            + f" in {self.seconds:.1f} s on {self.jobs} process(es): {rate:.1f} cases/s; "
            f"{self.cpu_seconds:.0f} CPU s, {len(self.outcomes) / max(self.cpu_seconds, 1e-9):.1f} cases per CPU s",
            f"  outcomes: {status['ok']:,} ran, {status['input-error']:,} documented input errors, "
            f"{status['crash']:,} crashes; {sum(1 for o in self.outcomes if o.summary.get('machine')):,} got a machine",
            "  invariant                checked   passed   failed",
        ]
        for name in self.invariants():
            n, failed = self.checked(name), self.failed(name)
            lines.append(f"  {name:22s} {n:9,} {n - failed:8,} {failed:8,}")
        return "\n".join(lines)

    def explain(self, invariant: str, examples: int = 1, groups: int = 40) -> str:
        """The failures of one invariant grouped by cause, biggest first, with a workload of each."""
        by_key: dict[str, list[tuple[space.Case, Failure]]] = defaultdict(list)
        for c, f in self.failures(invariant):
            by_key[f.key].append((c, f))
        if not by_key:
            return ""
        desc = INVARIANTS.get(invariant, COMPARE_TEXT)
        total = sum(len(x) for x in by_key.values())
        out = [f"{invariant}: {total:,} failures in {len(by_key)} groups ({desc})"]
        ordered = sorted(by_key.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for key, items in ordered[:groups]:
            items.sort(key=lambda cf: (_size(cf[0]), cf[0].id))
            dims = {d: sorted({getattr(c, d) for c, _ in items}) for d in space.DIMENSIONS}
            spread = ", ".join(f"{d} {len(vs)}" for d, vs in dims.items())
            out.append(f"\n[{len(items):,}] {key}   (cases over {spread})")
            for c, f in items[:examples]:
                out.append(f"  {c.id}: {f.message}")
                out.append("  " + c.yaml().rstrip("\n").replace("\n", "\n  "))
        if len(ordered) > groups:
            out.append(f"\n... and {len(ordered) - groups} more groups")
        return "\n".join(out)


def _cpu() -> float:
    """CPU seconds of this process and of its finished workers (contention on a shared machine stretches
    the wall time, not this).
    """
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _size(c: space.Case) -> int:
    """Smaller models first: the shortest reproduction of a group."""
    return int(space.catalog("models")[c.model].get("params") or 0)


def run(
    tier: str,
    only: dict[str, set[str]] | None = None,
    jobs: int | None = None,
    backend: str | None = None,
    compare: bool = False,
    progress: Any = None,
) -> Report:
    """Generate a tier's cases, run the selected ones, check every invariant."""
    generated, trimmed, kept = 0, Counter[str](), []
    for case in space.TIERS[tier]():
        generated += 1
        why = space.trimmed(case)
        if why:
            trimmed[why] += 1
        else:
            kept.append(case)
    cases = space.select(kept, only or {})
    jobs = min(jobs or default_jobs(), max(1, len(cases) // BATCH))
    backend_name = backend or os.environ.get("GPUSIZER_BACKEND") or "durable"
    start, cpu = time.monotonic(), _cpu()
    outcomes = _execute(cases, jobs, backend, compare, progress)
    seconds, cpu = time.monotonic() - start, _cpu() - cpu
    outcomes.sort(key=lambda o: o.case.id)
    report = Report(tier, backend_name, generated, trimmed, len(cases), outcomes, seconds, jobs, compare, cpu)
    report.quantizing_pairs, report.cross = quantizing(outcomes)
    return report


def _execute(cases: list[space.Case], jobs: int, backend: str | None, compare: bool, progress: Any) -> list[Outcome]:
    if jobs <= 1:
        worker = Worker(backend, compare)
        try:
            out = []
            for i, c in enumerate(cases):
                out.append(worker.run(c))
                if progress and i % 200 == 199:
                    progress(i + 1, len(cases))
            return out
        finally:
            worker.close()
    batches = [cases[i : i + BATCH] for i in range(0, len(cases), BATCH)]
    out: list[Outcome] = []
    ctx = multiprocessing.get_context("spawn")
    pending = list(batches)
    while pending:
        with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init, initargs=(backend, compare)) as pool:
            futures = [(b, pool.submit(_run_batch, b)) for b in pending]
            pending = []
            for b, fut in futures:
                try:
                    out.extend(fut.result())
                except BrokenProcessPool:
                    pending.append(b)
                if progress:
                    progress(len(out), len(cases))
        if pending:  # a worker died (a fault in C code): find the case, one per process
            out.extend(_isolate(pending, backend, compare))
            pending = []
    return out


def _isolate(batches: Iterable[Sequence[space.Case]], backend: str | None, compare: bool) -> list[Outcome]:
    ctx = multiprocessing.get_context("spawn")
    out = []
    for case in (c for b in batches for c in b):
        with ProcessPoolExecutor(1, mp_context=ctx, initializer=_init, initargs=(backend, compare)) as pool:
            try:
                out.extend(pool.submit(_run_batch, [case]).result())
            except BrokenProcessPool:
                msg = "the worker process died running this case"
                out.append(
                    Outcome(case, "crash", msg, checked={"runs"}, failures=[Failure("runs", "process died", msg)])
                )
    return out


REPORTS: list[Report] = []  # the sweeps a test session ran, for its closing summary (conftest.py)
