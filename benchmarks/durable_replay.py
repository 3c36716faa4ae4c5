"""Bare durable-rules as the speed benchmark's baseline: record the facts a rulebase's sessions
assert, then replay them through the same rulesets with actions that only count.

Only the benchmark needs this, so it lives here and reaches the backend through its public
surface: ``DurableCompiled.send`` and its host's ``delete_state`` (wrapped while recording) and
``DurableCompiled.rulesets(action)``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from durable import engine as durable


@contextlib.contextmanager
def recording(compiled) -> Iterator[list[tuple[str, Any]]]:
    """Within the block, log every fact the rulebase's sessions assert (the copying is engine time)."""
    log: list[tuple[str, Any]] = []
    host = compiled.host
    plain_send, plain_delete = compiled.send, host.delete_state

    def send(name, facts, found):
        if isinstance(facts, list):
            log.append(("facts", (name, [dict(f) for f in facts])))
        else:
            log.append(("fact", (name, dict(facts))))
        return plain_send(name, facts, found)

    def delete_state(name, sid):
        log.append(("delete", (name, sid)))
        return plain_delete(name, sid)

    compiled.send, host.delete_state = send, delete_state
    try:
        yield log
    finally:
        del compiled.send  # the method again
        host.delete_state = plain_delete


class _QuietHost(durable.Host):
    """A Host without its dispatch threads, as the backend makes one (see its _quiet_host)."""

    def _run(self) -> None:
        return None


def bare_replay_seconds(compiled, log: list[tuple[str, Any]]) -> tuple[float, int]:
    """Replay a recorded log through bare durable-rules: the same rulesets and facts, actions that
    only count. Seconds taken, and the actions run.
    """
    fired = [0]

    def count(c) -> None:
        fired[0] += 1

    host = _QuietHost()
    rulesets = compiled.rulesets(action=count)
    for name, definition in rulesets.items():
        host.register_rulesets({name: definition})
    try:
        start = time.perf_counter()
        for kind, (name, payload) in log:
            if kind == "facts":
                host.assert_facts(name, payload)
            elif kind == "fact":
                host.assert_fact(name, payload)
            else:
                host.delete_state(name, payload)
        return time.perf_counter() - start, fired[0]
    finally:
        for name in rulesets:  # dropping the Host would not free them
            durable.durable_rules_engine.delete_ruleset(host.get_ruleset(name)._handle)
