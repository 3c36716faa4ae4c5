"""The only module that imports durable-rules.

Lessons from running durable-rules 2.0.28 that shape this adapter:
* one Host per loaded rulebase and one ``sid`` per workload; a Host starts
  timer threads that never stop, so it is never created per workload;
* an exception in an action is swallowed and stored in the session state:
  callers check ``exception`` after each assert;
* a fact no rule matches is not stored: a sink rule matches every fact in an
  alpha node and never fires (its second pattern never occurs);
* ``id`` and ``sid`` are durable's own fact properties: facts never use ``id``.
"""
from __future__ import annotations

import itertools

from durable import engine as _durable

_names = itertools.count(1)


class DurableError(Exception):
    pass


class Host:
    def __init__(self, rules: dict):
        """``rules``: name -> {"all": [...], "run": callable}."""
        self.name = f"gpusizer{next(_names)}"
        definition = dict(rules)
        definition["$sink"] = {"all": [{"m": {"$ex": {"t": 1}}}, {"z": {"t": "$never"}}],
                               "run": lambda c: None}
        self._host = _durable.Host()
        try:
            self._host.register_rulesets({self.name: definition})
        except Exception as exc:  # durable reports bare numeric codes
            raise DurableError(f"durable-rules rejected the compiled rules: {exc}") from None

    def assert_facts(self, facts: list) -> None:
        if facts:
            self._host.assert_facts(self.name, facts)

    def assert_fact(self, fact: dict) -> None:
        self._host.assert_fact(self.name, fact)

    def exception(self, sid: str) -> str | None:
        state = self._host.get_state(self.name, sid)
        return state.get("exception") if state else None

    def delete(self, sid: str) -> None:
        self._host.delete_state(self.name, sid)
