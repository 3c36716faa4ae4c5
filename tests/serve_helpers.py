"""A gpusizer server for the tests: uvicorn in a thread of the test process, on a free port of
127.0.0.1, over a pool of worker processes (so that tests can see and end the workers)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from corpus import ROOT


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, pool, options):
        import uvicorn

        from engine.serve.app import create_app

        self.pool = pool
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(pool, options), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(30)


def make_pool(size=2, timeout=30.0, queue=64, key_file=None):
    from engine.load.resources import data_dir
    from engine.serve.pool import Pool, Settings

    pool = Pool(
        Settings([str(data_dir("rules"))], [str(data_dir("knowledge"))], key_file),
        size=size,
        timeout=timeout,
        queue=queue,
    )
    pool.start()
    return pool


EXAMPLES = ROOT / "examples"
