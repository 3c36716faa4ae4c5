"""``gpusizer serve``: the page and the HTTP API, on this machine by default."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import Any

from ..errors import ExitCode, InputError
from . import rulebase_args, shipped_dirs

MIN_TOKEN = 32


def add_parser(sub: Any, name: str) -> None:
    s = sub.add_parser(name, help="serve the page and the HTTP API (needs: pip install 'gpusizer[serve]')")
    s.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)"
    )
    s.add_argument("--port", type=int, default=8000, help="the port (default 8000; 0 picks a free one)")
    s.add_argument(
        "--token-file",
        metavar="F",
        help="a file holding the access token every API call must carry ('Authorization: Bearer TOKEN'); "
        "needed to listen on any address but this machine's (make one with 'gpusizer audit keygen F')",
    )
    s.add_argument(
        "--workers", type=int, metavar="N", help="worker processes, each with the rulebase (default: CPUs, at most 4)"
    )
    s.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="the longest one request may run (default 30 s)"
    )
    s.add_argument(
        "--queue",
        type=int,
        default=64,
        metavar="N",
        help="requests that may wait for a worker (default 64; more get 429)",
    )
    s.add_argument(
        "--max-request-mb", type=float, default=2.0, metavar="MB", help="the largest request body (default 2 MB)"
    )
    s.add_argument(
        "--cors-origin",
        action="append",
        metavar="ORIGIN",
        help="let pages from ORIGIN call the API (repeatable; default: none)",
    )
    s.add_argument(
        "--sweep-jobs",
        type=int,
        default=1,
        metavar="N",
        help="sweep jobs (POST /api/v1/sweep) that run at once; more wait (default 1)",
    )
    s.add_argument(
        "--sweep-workers",
        type=int,
        default=1,
        metavar="N",
        help="processes of one sweep job, beside the request workers (default 1)",
    )
    s.add_argument(
        "--sweep-max-cases",
        type=int,
        default=10_000,
        metavar="N",
        help="the most cases one sweep job may have (default 10,000; more get 413)",
    )
    s.add_argument(
        "--key",
        metavar="FILE",
        help="sign the decision records the page offers (default: $GPUSIZER_RECORD_KEY_FILE; unsigned without one)",
    )
    rulebase_args(s)


def read_token(path: str) -> str:
    """The access token: the file's text, at least 32 characters, readable by its owner only."""
    from ..load.yamlsrc import decode, read_bytes

    text = decode(read_bytes(path, path, "workload"), path).strip()
    mode = os.stat(path).st_mode
    if os.name == "posix" and mode & 0o077:
        raise InputError(
            f"the token file is readable by others (mode {stat.S_IMODE(mode):o})",
            file=path,
            help=f"the token is a secret: chmod 600 {path}",
        )
    if len(text) < MIN_TOKEN or any(ch.isspace() for ch in text):
        raise InputError(
            f"the token file holds {len(text)} characters; a token is at least {MIN_TOKEN}, "
            "on one line, without spaces",
            file=path,
            help="make one with 'gpusizer audit keygen FILE'",
        )
    return text


def run(args: argparse.Namespace) -> int:
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError as exc:
        print(
            f"gpusizer serve: {exc.name} is not installed\n"
            "help: install the server's extra: pip install 'gpusizer[serve]'",
            file=sys.stderr,
        )
        return ExitCode.UNAVAILABLE
    from ..serve.app import Options, create_app, is_loopback
    from ..serve.pool import Pool, Settings, StartFailed, default_size
    from ..serve.sweeps import Limits

    token = read_token(args.token_file) if args.token_file else None
    if not is_loopback(args.host) and token is None:
        raise InputError(
            f"--host {args.host} would let other machines use this server, and it has no token",
            help="give --token-file F (make one with 'gpusizer audit keygen F'), or keep the default --host 127.0.0.1",
        )
    for flag, value, low in (
        ("--port", args.port, 0),
        ("--workers", args.workers or 1, 1),
        ("--queue", args.queue, 0),
        ("--sweep-jobs", args.sweep_jobs, 1),
        ("--sweep-workers", args.sweep_workers, 1),
        ("--sweep-max-cases", args.sweep_max_cases, 1),
    ):
        if value < low or (flag == "--port" and value > 65535):
            raise InputError(f"{flag} {value} is out of range", help=f"give {flag} a whole number of at least {low}")
    if not args.timeout > 0 or not args.max_request_mb > 0:
        raise InputError("--timeout and --max-request-mb must be more than 0")
    key_file = args.key or os.environ.get("GPUSIZER_RECORD_KEY_FILE")
    if key_file:
        from ..explain.record import read_key

        read_key(key_file)  # refused here, before the workers start, if it is not a good key
    rules, knowledge = shipped_dirs(args)
    settings = Settings([str(p) for p in rules], [str(p) for p in knowledge], key_file)
    pool = Pool(settings, size=args.workers or default_size(), timeout=args.timeout, queue=args.queue)
    print(f"gpusizer serve: loading the rulebase in {pool.size} worker process(es)", file=sys.stderr)
    try:
        pool.start()
    except StartFailed as exc:
        print(exc.message, file=sys.stderr)
        return exc.exit_code
    options = Options(
        token=token,
        max_body=int(args.max_request_mb * (1 << 20)),
        timeout=args.timeout,
        cors=args.cors_origin or [],
        sweeps=Limits(
            running=args.sweep_jobs, workers=args.sweep_workers, max_cases=args.sweep_max_cases, timeout=args.timeout
        ),
    )
    app = create_app(pool, options)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        server_header=False,
        h11_max_incomplete_event_size=64 * 1024,
        limit_concurrency=max(64, (args.queue + pool.size) * 2),
        timeout_keep_alive=5,
    )
    server = uvicorn.Server(config)
    info = pool.info
    print(
        f"gpusizer serve: {info['rules']} rules (sha256 {info['sha256'][:12]}), "
        f"{'token required' if token else 'no token: this machine only'}",
        file=sys.stderr,
    )
    try:
        server.run()
    finally:
        app.state.jobs.close()  # (uvicorn's shutdown has done it, unless it did not get that far)
        pool.close()
    return ExitCode.OK
