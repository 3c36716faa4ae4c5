"""Worker processes for the server: the rulebase loaded once in each, one request at a time each.

Why processes and not threads: a ``Recommender`` is safe to share between threads only because
its ``SessionRunner`` lets one session run at a time (a lock), so threads would give no
parallelism, and durable-rules is C code that can end the process it runs in. In a worker
process, a crash or a hang costs the one request the worker was answering: the worker is
replaced (the rulebase loaded again) while the other workers go on. A request whose worker had
died before the request reached it is sent to another worker, so it is not lost.

Requests and answers cross the pipe as JSON text (plain data, nothing that could run code).
The processes are started with ``spawn``: nothing of the server's own state (its threads, its
sockets) is copied into them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any


class Busy(Exception):
    """Every worker is answering and the queue is full."""


class TimedOut(Exception):
    """A request ran past the time limit; its worker was stopped."""


class Crashed(Exception):
    """The worker answering a request ended without an answer (its exit code or signal)."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class StartFailed(Exception):
    """A worker could not load the rulebase: the message, and the exit code the CLI should give."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@dataclass(frozen=True)
class Settings:
    """What every worker loads: the rules and knowledge folders, the record signing key."""

    rules: list[str]
    knowledge: list[str]
    key_file: str | None = None


def _worker_main(conn: Any, settings: Settings) -> None:  # pragma: no cover - runs in the child
    """A worker: load, say so, then answer requests until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    from ..errors import GpusizerError
    from .page import Pages
    from .sweeps import check
    from .work import Worker

    try:
        worker = Worker(settings.rules, settings.knowledge, settings.key_file)
        worker.ops.update(Pages(worker).ops())
        worker.ops["sweep"] = lambda msg: check(worker, msg)
    except GpusizerError as exc:
        conn.send_bytes(json.dumps({"ready": False, "error": exc.render(), "exit": int(exc.exit_code)}).encode())
        return
    except Exception as exc:
        conn.send_bytes(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}", "exit": 70}).encode())
        return
    conn.send_bytes(b'{"ready": true}')
    while True:
        try:
            raw = conn.recv_bytes()
        except (EOFError, OSError):
            return
        msg = json.loads(raw)
        reply = worker.handle(msg)
        conn.send_bytes(json.dumps(reply, ensure_ascii=False).encode("utf-8"))


@dataclass(eq=False)
class _Proc:
    process: Any
    conn: Any
    served: int = 0
    started: float = field(default_factory=time.monotonic)
    ready: bool = False
    answering: bool = False  # a request has been sent and its answer not yet read

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)


def _how(process: Any) -> str:
    process.join(2)
    code = process.exitcode
    if code is None:
        return "did not answer"
    if code < 0:
        try:
            return f"was ended by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was ended by signal {-code}"
    return f"exited with code {code}"


class Pool:
    """``size`` worker processes; ``call`` answers one request on an idle one."""

    def __init__(
        self, settings: Settings, size: int = 2, timeout: float = 30.0, queue: int = 64, start_timeout: float = 300.0
    ) -> None:
        self.settings = settings
        self.size = max(1, size)
        self.timeout = timeout
        self.queue_limit = max(0, queue)
        self.start_timeout = start_timeout
        self._ctx = multiprocessing.get_context("spawn")
        self._idle: asyncio.Queue[_Proc] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: list[_Proc] = []
        self._all: set[Any] = set()
        self._waiting = 0
        self._threads = ThreadPoolExecutor(max_workers=self.size + 2, thread_name_prefix="gpusizer-worker")
        self._lock = threading.Lock()
        self._closed = False
        self.replaced = 0
        self.info: dict[str, Any] = {}

    # -- starting and stopping ---------------------------------------------------------------------
    def _spawn(self) -> _Proc:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_worker_main, args=(child, self.settings), daemon=True)
        process.start()
        child.close()
        proc = _Proc(process, parent)
        with self._lock:
            self._all.add(proc)
        return proc

    def _await_ready(self, proc: _Proc) -> None:
        if not proc.conn.poll(self.start_timeout):
            proc.stop()
            raise StartFailed(f"a worker did not load the rulebase within {self.start_timeout:.0f} s", 70)
        try:
            hello = json.loads(proc.conn.recv_bytes())
        except (EOFError, OSError):
            how = _how(proc.process)
            raise StartFailed(f"a worker {how} while it loaded the rulebase", 70) from None
        if not hello.get("ready"):
            proc.stop()
            raise StartFailed(hello.get("error", "a worker could not load the rulebase"), int(hello.get("exit", 70)))
        proc.ready = True

    def start(self) -> None:
        """Start every worker and wait until each has loaded the rulebase (StartFailed if one cannot)."""
        procs = [self._spawn() for _ in range(self.size)]
        try:
            for p in procs:
                self._await_ready(p)
        except StartFailed:
            for p in procs:
                p.stop()
            raise
        self._ready = procs
        self.info = self.call_sync({"op": "info"})

    def call_sync(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Before the server runs: a request on the first worker, its JSON answer."""
        reply = self._exchange(self._ready[0], msg)
        return dict(json.loads(reply["body"]))

    def close(self) -> None:
        """Stop every worker."""
        self._closed = True
        with self._lock:
            procs = list(self._all)
            self._all.clear()
        for p in procs:
            p.stop()
        self._threads.shutdown(wait=False, cancel_futures=True)

    @property
    def alive(self) -> int:
        """How many workers have the rulebase loaded and are running (idle or answering)."""
        with self._lock:
            return sum(1 for p in self._all if p.ready and p.process.is_alive())

    @property
    def pids(self) -> list[int]:
        """The workers' process ids."""
        with self._lock:
            return sorted(p.process.pid for p in self._all if p.process.pid is not None)

    @property
    def answering(self) -> list[int]:
        """The process ids of the workers answering a request now."""
        with self._lock:
            return sorted(p.process.pid for p in self._all if p.answering and p.process.pid is not None)

    @property
    def waiting(self) -> int:
        """Requests waiting for a worker."""
        return self._waiting

    # -- answering -----------------------------------------------------------------------------------
    def _queue(self) -> asyncio.Queue[_Proc]:
        if self._idle is None:
            self._loop = asyncio.get_running_loop()
            self._idle = asyncio.Queue()
            for p in self._ready:
                self._idle.put_nowait(p)
        return self._idle

    async def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Answer one request: Busy when the queue is full, TimedOut or Crashed when its worker failed."""
        idle = self._queue()
        loop = asyncio.get_running_loop()
        for _attempt in range(3):
            if idle.empty() and self._waiting >= self.queue_limit:
                raise Busy()
            self._waiting += 1
            try:
                proc = await idle.get()
            finally:
                self._waiting -= 1
            try:
                reply = await loop.run_in_executor(self._threads, self._exchange, proc, msg)
            except _NotSent:
                self._replace(proc)  # it died while idle: the request never reached it; try another
                continue
            except (TimedOut, Crashed):
                self._replace(proc)
                raise
            except BaseException:  # cancelled while it worked: its answer would be read by the next request
                self._replace(proc)
                raise
            idle.put_nowait(proc)
            return reply
        raise Crashed("could not be reached (three workers in a row had ended)")

    def _exchange(self, proc: _Proc, msg: dict[str, Any]) -> dict[str, Any]:
        if not proc.process.is_alive():
            raise _NotSent()
        proc.answering = True
        try:
            return self._send_and_read(proc, msg)
        finally:
            proc.answering = False

    def _send_and_read(self, proc: _Proc, msg: dict[str, Any]) -> dict[str, Any]:
        try:
            proc.conn.send_bytes(json.dumps(msg, ensure_ascii=False).encode("utf-8"))
        except (OSError, ValueError):
            raise _NotSent() from None
        if not proc.conn.poll(self.timeout):
            proc.stop()
            raise TimedOut()
        try:
            raw = proc.conn.recv_bytes()
        except (EOFError, OSError):
            raise Crashed(_how(proc.process)) from None
        proc.served += 1
        return dict(json.loads(raw))

    def _replace(self, proc: _Proc) -> None:
        """Stop a failed worker and start another in the background; it joins the idle ones when ready."""
        proc.stop()
        with self._lock:
            self._all.discard(proc)
        if self._closed:
            return
        self.replaced += 1
        loop, idle = self._loop, self._idle

        def start() -> None:
            try:
                fresh = self._spawn()
                self._await_ready(fresh)
            except StartFailed as exc:
                if not self._closed:
                    print(f"gpusizer serve: a replacement worker failed to start: {exc.message}", file=sys.stderr)
                return
            if self._closed:
                fresh.stop()
                return
            assert loop is not None and idle is not None
            loop.call_soon_threadsafe(idle.put_nowait, fresh)

        threading.Thread(target=start, name="gpusizer-respawn", daemon=True).start()


class _NotSent(Exception):
    """The request could not be written to the worker: it had ended before."""


def default_size() -> int:
    """One worker per CPU, at most 4 (each holds a rulebase; requests are short)."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
