"""Bare durable-rules as the speed benchmark's baseline: record the facts a rulebase's sessions
assert, then replay them through the same rulesets with actions that only count.

Only the benchmark needs this, so it lives here and reaches the backend through its public
surface: ``DurableCompiled.host`` (whose assert and delete calls are wrapped while recording)
and ``DurableCompiled.rulesets(action)``.
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
    plain_facts, plain_fact, plain_delete = host.assert_facts, host.assert_fact, host.delete_state

    def assert_facts(name, facts):
        log.append(("facts", (name, [dict(f) for f in facts])))
        return plain_facts(name, facts)

    def assert_fact(name, fact):
        log.append(("fact", (name, dict(fact))))
        return plain_fact(name, fact)

    def delete_state(name, sid):
        log.append(("delete", (name, sid)))
        return plain_delete(name, sid)

    host.assert_facts, host.assert_fact, host.delete_state = assert_facts, assert_fact, delete_state
    try:
        yield log
    finally:
        host.assert_facts, host.assert_fact, host.delete_state = plain_facts, plain_fact, plain_delete


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
