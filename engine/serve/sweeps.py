"""Sweeps as jobs of the server: ``POST /api/v1/sweep`` starts one, and it is polled, fetched,
cancelled and deleted under ``/api/v1/sweep/{job}``.

A sweep is ``gpusizer sweep`` run by the server; nothing here decides what a case is or how it
runs. Its two halves:

* ``check`` runs in a request worker (``pool``) like every other request: it reads the
  specification (YAML text or JSON, with attached documents; ``base:`` is a mapping or an
  attached workload, never a path), checks it with ``engine.sweep.spec`` (an error is answered at
  its line), refuses more cases than the server's limit (413), and answers the cases as plain
  data (``engine.sweep.run.Sweep``).
* ``Jobs`` runs in the server's process: each job is a thread that runs its cases with
  ``engine.sweep.run`` on a process pool of its own (``engine.sweep.execute``: a case that crashes
  or hangs its process is an error row, the others go on), so the request workers keep answering.
  At most ``Limits.running`` jobs run at once (the others wait, queued), each on
  ``Limits.workers`` processes; at most ``Limits.keep`` jobs are held, a finished one for at most
  ``Limits.ttl`` seconds. A job's rows and tables are written to its folder in a temporary
  directory only the server's user can read, removed when the job is deleted or expires and when
  the server stops.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .work import Failure, answer, failure_of, read_request

if TYPE_CHECKING:
    from ..sweep.execute import BatchFn
    from ..sweep.run import Sweep
    from .work import Worker

SPEC_NAME = "sweep.yaml"
"""What errors call a specification given in a request; a case is sweep.yaml#c0001."""

FILES = {
    "summary.csv": "text/csv; charset=utf-8",
    "pareto.csv": "text/csv; charset=utf-8",
    "results.jsonl": "application/jsonl; charset=utf-8",
    "summary.html": "text/html; charset=utf-8",
}
FINISHED = ("done", "cancelled", "failed")
JOB_ID = re.compile(r"^[0-9a-f]{16}$")
# summary.html draws its plots with the bundled Vega scripts, inline, which compile expressions
# with Function(): the page runs in a sandbox (an origin of its own: no cookie, no API) and may
# load nothing
SUMMARY_CSP = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; frame-ancestors 'none'"
)


# -- in a request worker ---------------------------------------------------------------------------


def check(worker: Worker, msg: dict[str, Any]) -> dict[str, Any]:
    """Read and check a specification; answer its cases (the ``sweep`` operation of a worker)."""
    from ..sweep.run import prepare
    from ..sweep.spec import TooManyCases, read_spec
    from ..sweep.table import check_fields, table_config

    req = read_request("sweep", msg.get("content_type", ""), msg.get("body", ""), msg.get("query", {}), {}, main="spec")
    rec = worker.rec
    limit = int(msg["max_cases"])
    try:
        spec = read_spec(req.text, SPEC_NAME, rec, req.files, max_cases=limit)
    except TooManyCases as exc:
        f = failure_of(exc)
        for d in f.diagnostics:
            d["help"] = f"{d['help']}; the server's --sweep-max-cases sets the limit ({limit:,})"
        raise Failure(413, "too-large", f.message, f.diagnostics) from None
    config = table_config()
    check_fields(config, rec.rulebase.attributes)
    sweep = prepare(spec, rec.rulebase, config)
    if not sweep.cases:
        message, fix = "where: it keeps none of the combinations, so the sweep has no case", "loosen 'where'"
        if spec.where_span is not None:
            raise spec.where_span.error(message, fix)
        raise Failure(422, "invalid-input", message, help=fix)  # (the schema asks for vary or cases)
    from .. import __version__

    h = hashlib.sha256(b"gpusizer sweep\0")
    h.update(__version__.encode() + b"\0" + rec.rulebase.sha256.encode() + b"\0" + req.key.encode())
    return answer(200, {"decision_id": h.hexdigest()[:32], "sweep": sweep.plain(), "files": req.files})


# -- in the server's process -------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """How much of the machine sweeps may take."""

    running: int = 1  # jobs that run at once; more wait, queued
    workers: int = 1  # processes of one job
    max_cases: int = 10_000  # cases of one job
    keep: int = 16  # jobs held: queued, running and finished
    ttl: float = 3600.0  # seconds a finished job is kept
    timeout: float = 30.0  # seconds one case may run


@dataclass(eq=False)
class Job:
    """One sweep: its cases, where it is, what it has found so far."""

    id: str
    decision_id: str
    sweep: Sweep
    files: dict[str, str]
    folder: Path
    created: float = field(default_factory=time.monotonic)
    total: int = 0  # its cases
    status: str = "queued"  # queued, running, done, cancelled, failed
    done: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    deleted: bool = False
    thread: threading.Thread | None = None


class Jobs:
    """The server's sweep jobs (thread-safe: the routes and the jobs' threads share it)."""

    def __init__(
        self,
        rules: list[str],
        knowledge: list[str],
        rulebase_sha: str,
        limits: Limits | None = None,
        fn: BatchFn | None = None,
    ) -> None:
        from ..load.resources import data_dir

        self.limits = limits or Limits()
        self.rulebase_sha = rulebase_sha
        # a sweep's worker loads the shipped rules and knowledge, then these folders over them
        self._rules = _over(rules, data_dir("rules"))
        self._knowledge = _over(knowledge, data_dir("knowledge"))
        self._fn = fn
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(max(1, self.limits.running))
        self._root: Path | None = None
        self._closed = False

    # -- the folder ----------------------------------------------------------------------------------
    def _folder(self, job_id: str) -> Path:
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="gpusizer-sweeps-"))  # mode 0700
        folder = self._root / job_id
        folder.mkdir(mode=0o700)
        return folder

    def close(self) -> None:
        """Stop every job and remove their folders (the server is stopping)."""
        with self._lock:
            self._closed = True
            jobs = list(self._jobs.values())
            self._jobs.clear()
        for job in jobs:
            job.stop.set()
        for job in jobs:
            if job.thread is not None:
                job.thread.join(30)
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    # -- starting --------------------------------------------------------------------------------------
    def room(self) -> None:
        """Failure 429 when no job can be held now (before a request worker checks a specification)."""
        with self._lock:
            self._expire()
            if self._closed:
                raise Failure(503, "unavailable", "the server is stopping")
            if len(self._jobs) >= self.limits.keep and not any(j.status in FINISHED for j in self._jobs.values()):
                raise Failure(
                    429,
                    "busy",
                    f"{len(self._jobs)} sweep jobs are queued or running; the server holds at most {self.limits.keep}",
                    help="wait for one to finish, or cancel one (DELETE /api/v1/sweep/JOB)",
                )

    def start(self, checked: dict[str, Any]) -> Job:
        """A job for a checked specification (the ``sweep`` operation's answer), queued to run."""
        from ..sweep.run import Sweep

        sweep = Sweep.from_plain(checked["sweep"])
        with self._lock:
            self._expire()
            if self._closed:
                raise Failure(503, "unavailable", "the server is stopping")
            if len(self._jobs) >= self.limits.keep:
                oldest = min(
                    (j for j in self._jobs.values() if j.status in FINISHED), key=lambda j: j.created, default=None
                )
                if oldest is None:
                    raise Failure(
                        429,
                        "busy",
                        f"{len(self._jobs)} sweep jobs are queued or running; "
                        f"the server holds at most {self.limits.keep}",
                        help="wait for one to finish, or cancel one (DELETE /api/v1/sweep/JOB)",
                    )
                self._remove(oldest)
            job_id = secrets.token_hex(8)
            job = Job(
                job_id,
                str(checked["decision_id"]),
                sweep,
                dict(checked.get("files") or {}),
                self._folder(job_id),
                total=len(sweep.cases),
            )
            self._jobs[job_id] = job
            job.thread = threading.Thread(target=self._run, args=(job,), name=f"gpusizer-sweep-{job_id}", daemon=True)
        job.thread.start()
        return job

    # -- running ---------------------------------------------------------------------------------------
    def _run(self, job: Job) -> None:
        while not self._slots.acquire(timeout=0.2):
            if job.stop.is_set():  # cancelled while it waited: every case is a row that says so
                try:
                    self._finish(job, {})
                except Exception as exc:
                    self._failed(job, exc)
                self._cleanup(job)
                return
        try:
            if job.stop.is_set():
                self._finish(job, {})
                return
            self._cases(job)
        except Exception as exc:
            self._failed(job, exc)
        finally:
            self._slots.release()
            self._cleanup(job)

    def _failed(self, job: Job, exc: Exception) -> None:
        """A bug: the job says so, and the server goes on."""
        if not job.deleted:
            traceback.print_exc(file=sys.stderr)
        with self._lock:
            job.status = "failed"
            job.error = f"internal error: {type(exc).__name__}: {exc} (a bug in gpusizer; report it with the sweep)"
            job.finished = time.monotonic()

    def _cases(self, job: Job) -> None:
        from ..sweep.run import run_cases
        from ..sweep.worker import Config, run_many

        sweep = job.sweep
        config = Config(
            rules=self._rules,
            knowledge=self._knowledge,
            rulebase_sha=self.rulebase_sha,
            fields=sweep.fields,
            attached=tuple(sorted(job.files.items())),
        )
        with self._lock:
            job.status = "running"
            job.started = time.monotonic()
        rows: dict[str, dict[str, Any]] = {}

        def seen(row: dict[str, Any]) -> None:
            with self._lock:
                job.done += 1
                job.statuses[row["status"]] = job.statuses.get(row["status"], 0) + 1

        with (job.folder / "results.jsonl").open("w", encoding="utf-8") as stream:
            for row in run_cases(
                sweep,
                config,
                sweep.cases,
                stream,
                workers=max(1, self.limits.workers),
                timeout=self.limits.timeout,
                on_row=seen,
                stop=job.stop.is_set,
                fn=self._fn or run_many,
            ):
                rows[row["case"]] = row
        if not job.deleted:
            self._finish(job, rows)

    def _finish(self, job: Job, rows: dict[str, dict[str, Any]]) -> None:
        """The tables of a job that ran (or was stopped: its cases not run are rows that say so)."""
        from ..sweep.resume import jsonl
        from ..sweep.run import not_run_row, tables, totals
        from ..sweep.table import table_config

        sweep = job.sweep
        missing = [c for c in sweep.cases if c.id not in rows]
        if missing:
            why = "the sweep job was cancelled before this case ran"
            with (job.folder / "results.jsonl").open("a", encoding="utf-8") as stream:
                for c in missing:
                    rows[c.id] = not_run_row(c, why)
                    stream.write(jsonl(rows[c.id]))
        ran = len(sweep.cases) - len(missing)
        started = job.started if job.started is not None else time.monotonic()
        total = totals(ran, started, max(1, self.limits.workers), "local")
        ordered = [rows[c.id] for c in sweep.cases]
        for name, text in tables(table_config(), sweep, ordered, total).items():
            (job.folder / name).write_text(text, encoding="utf-8")
        with self._lock:
            job.status = "cancelled" if missing else "done"  # (a stop after the last case is too late)
            job.finished = time.monotonic()
            job.sweep = dataclasses.replace(sweep, base={}, cases=())  # what a finished job needs no more

    # -- reading ---------------------------------------------------------------------------------------
    def get(self, job_id: str) -> Job:
        """The job, or a 404 in the error shape."""
        with self._lock:
            self._expire()
            job = self._jobs.get(job_id) if JOB_ID.match(job_id) else None
        if job is None:
            raise Failure(
                404,
                "not-found",
                f"no sweep job {job_id!r}",
                help="jobs are kept a while after they finish; GET /api/v1/sweep lists those held",
            )
        return job

    def listing(self) -> list[dict[str, Any]]:
        """Every job held, oldest first."""
        with self._lock:
            self._expire()
            jobs = sorted(self._jobs.values(), key=lambda j: j.created)
        return [self.status(j) for j in jobs]

    def status(self, job: Job) -> dict[str, Any]:
        """What a poll answers: status, cases done and failed of the total, rate, time left."""
        now = time.monotonic()
        with self._lock:
            total = job.total
            done = job.done
            statuses = dict(sorted(job.statuses.items()))
            started, finished, status = job.started, job.finished, job.status
            error = job.error
        seconds = ((finished or now) - started) if started is not None else 0.0
        rate = done / seconds if seconds > 0 else 0.0
        left = (total - done) / rate if rate > 0 and status == "running" else None
        base = f"/api/v1/sweep/{job.id}"
        return {
            "id": job.id,
            "decision_id": job.decision_id,
            "name": job.sweep.name,
            "status": status,
            "cases": {"total": total, "done": done, "failed": done - statuses.get("ok", 0)},
            "statuses": statuses,
            "seconds": round(seconds, 3),
            "rate": round(rate, 3),
            "seconds_left": None if left is None else round(left, 1),
            "workers": max(1, self.limits.workers),
            "error": error,
            "links": {"self": base, "cancel": f"{base}/cancel", **{name: f"{base}/{name}" for name in FILES}},
        }

    def file(self, job: Job, name: str) -> bytes:
        """One of a job's files: results.jsonl as far as it has got; the tables once it has finished."""
        with self._lock:
            status, error = job.status, job.error
        path = job.folder / name
        if name == "results.jsonl":
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                return b""
            return data[: data.rfind(b"\n") + 1]  # whole rows only: the job may be writing the next one
        if status == "failed":
            raise Failure(
                500, "internal", f"the sweep job failed: {error}", help="this is a bug in gpusizer; report it"
            )
        if status not in FINISHED:
            raise Failure(
                409,
                "not-finished",
                f"the sweep job is {status}: its {name} is written when it finishes",
                help=f"poll GET /api/v1/sweep/{job.id} until its status is done; results.jsonl has the rows so far",
            )
        try:
            return path.read_bytes()
        except FileNotFoundError:  # deleted while it was read
            raise Failure(404, "not-found", f"the sweep job {job.id} was deleted") from None

    # -- stopping --------------------------------------------------------------------------------------
    def cancel(self, job: Job) -> None:
        """Stop a job; the rows it has are kept, the cases not run become rows that say so."""
        job.stop.set()

    def delete(self, job: Job) -> None:
        """Stop a job and forget it; its folder is removed."""
        with self._lock:
            self._remove(job)

    def _remove(self, job: Job) -> None:  # with the lock held
        job.stop.set()
        job.deleted = True
        self._jobs.pop(job.id, None)
        if job.status in FINISHED or job.thread is None or not job.thread.is_alive():
            shutil.rmtree(job.folder, ignore_errors=True)
        # else: the job's thread removes it when it ends (_cleanup)

    def _cleanup(self, job: Job) -> None:
        with self._lock:
            gone = job.deleted or self._closed
        if gone:
            shutil.rmtree(job.folder, ignore_errors=True)

    def _expire(self) -> None:  # with the lock held
        now = time.monotonic()
        for job in [j for j in self._jobs.values() if j.finished is not None and now - j.finished > self.limits.ttl]:
            self._remove(job)


def _over(dirs: list[str], shipped: Path) -> tuple[str, ...]:
    """The folders laid over the shipped one (a sweep's worker loads the shipped one itself)."""
    out = list(dirs)
    if out and _same(out[0], shipped):
        out = out[1:]
    return tuple(os.path.abspath(d) for d in out)


def _same(a: str | Path, b: str | Path) -> bool:
    with contextlib.suppress(OSError):
        return os.path.samefile(a, b)
    return False
