"""A process that loads gpusizer and the shipped rulebase once, then forks one child per attack case.

Each case still runs in a process of its own, as ``python -m engine`` would: its own environment,
working directory, resource limits and file mode mask; standard input from /dev/null, standard output
to a pipe (or the file the case names, truncated or appended to), standard error to a pipe; the exit
code from ``sys.exit`` and the interpreter's own shutdown (a failed flush of standard output at exit
is the interpreter's exit 120, as in a fresh process). A crash kills only that child, a hang is
killed at the time limit. What the child does not repeat is importing gpusizer and loading and
planning the shipped rulebase (most of a fresh process's two seconds); a case with overlays
(--rules, --knowledge) or other GPUSIZER_ limits still loads its own, as the command does.

Protocol, one JSON line each way per case on this process's standard input and output:
``{"argv", "env", "stdout", "append", "timeout"}`` in, ``{"code", "out", "err"}`` out
(``code``: the exit code, minus the signal for a crash, or null for a hang; outputs in base64).
tests/attacks.py starts one per test process; ``GPUSIZER_ATTACKS_FRESH=1`` runs every case in a
fresh interpreter instead.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import select
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _child(req: dict, out_w: int, err_w: int, parents: tuple[int, ...], reader: Any, limit: Any) -> None:
    """Turn this forked process into the case's ``python -m engine``; it exits through sys.exit."""
    reader.close()  # the protocol is the parent's
    for fd in parents:
        os.close(fd)
    limit()  # the address space and file mode mask every case runs with (tests/attacks.py)
    os.environ.clear()
    os.environ.update(req["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if req["stdout"]:
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if req["append"] else os.O_TRUNC)
        sink = os.open(req["stdout"], flags, 0o666)
        os.dup2(sink, 1)
        os.close(sink)
    else:
        os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.close(out_w)
    os.close(err_w)
    os.chdir(ROOT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.argv = [str(ROOT / "engine" / "__main__.py"), *req["argv"]]


def _relay(pid: int, out_r: int, err_r: int, timeout: float) -> dict:
    """The child's outputs until both close, and how it ended (killed at the deadline: a hang)."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    open_fds = [out_r, err_r]
    deadline = time.monotonic() + timeout
    hung = False
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            hung = True
            os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select(open_fds, [], [], left)
        for fd in ready:
            data = os.read(fd, 1 << 16)
            if data:
                chunks[fd].append(data)
            else:
                open_fds.remove(fd)
    os.close(out_r)
    os.close(err_r)
    _, status = os.waitpid(pid, 0)
    code = None if hung else (-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
    return {
        "code": code,
        "out": base64.b64encode(b"".join(chunks[out_r])).decode(),
        "err": base64.b64encode(b"".join(chunks[err_r])).decode(),
    }


def main() -> int:
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # nothing this process prints can reach the protocol
    os.close(null)
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    os.chdir(ROOT)

    from attacks import _limit

    import corpus
    from engine.cli import main as cli_main

    corpus._share_the_rulebase()
    corpus.shared_recommender(argparse.Namespace(rules=None, knowledge=None))
    gc.freeze()  # the loaded rulebase stays out of the collector's passes in every child
    reader = os.fdopen(proto_in, "rb")
    while True:
        line = reader.readline()
        if not line:
            return 0
        req = json.loads(line)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req, out_w, err_w, (out_r, err_r, proto_out), reader, _limit)
            sys.exit(cli_main(req["argv"]))
        os.close(out_w)
        os.close(err_w)
        reply = json.dumps(_relay(pid, out_r, err_r, req["timeout"])) + "\n"
        os.write(proto_out, reply.encode())


if __name__ == "__main__":
    sys.exit(main())
