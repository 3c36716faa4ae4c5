"""The only module that imports durable-rules.

Lessons from running durable-rules 2.0.28 that shape this adapter:
* one Host per loaded rulebase and one ``sid`` per workload; a Host starts
  timer threads that never stop, so it is never created per workload;
* an exception in an action is swallowed and stored in the session state:
  callers check ``exception`` after each assert;
* a fact no rule matches is not stored: a sink rule matches every fact in an
  alpha node and never fires (its second pattern never occurs);
* ``id`` and ``sid`` are durable's own fact properties: facts never use ``id``;
* its JSON reader rejects a number with an exponent but no decimal point
  (Python writes 1e-05 and 1e+16 that way), and a rejected fact can crash the
  process later: such floats are moved by one ulp, which makes Python write
  them with a decimal point (1.0000000000000002e-05). Actions read values from
  the Python side, never from facts, so only matching sees the nudge.
"""
from __future__ import annotations

import itertools
import math

from durable import engine as _durable

_names = itertools.count(1)


class DurableError(Exception):
    pass


def safe(value):
    """Values durable-rules' JSON reader accepts (see the module docstring)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DurableError(f"durable-rules cannot hold the number {value!r}")
        text = repr(value)
        if "e" in text and "." not in text:
            return math.nextafter(value, math.inf)
        return value
    if isinstance(value, dict):
        return {k: safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [safe(v) for v in value]
    return value


class Host:
    def __init__(self, rules: dict):
        """``rules``: name -> {"all": [...], "run": callable}."""
        self.name = f"gpusizer{next(_names)}"
        definition = {name: dict(rule, all=safe(rule["all"])) for name, rule in rules.items()}
        definition["$sink"] = {"all": [{"m": {"$ex": {"t": 1}}}, {"z": {"t": "$never"}}],
                               "run": lambda c: None}
        self._host = _durable.Host()
        try:
            self._host.register_rulesets({self.name: definition})
        except Exception as exc:  # durable reports bare numeric codes
            raise DurableError(f"durable-rules rejected the compiled rules: {exc}") from None

    def assert_facts(self, facts: list) -> None:
        if facts:
            self._host.assert_facts(self.name, [safe(f) for f in facts])

    def assert_fact(self, fact: dict) -> None:
        self._host.assert_fact(self.name, safe(fact))

    def exception(self, sid: str) -> str | None:
        state = self._host.get_state(self.name, sid)
        return state.get("exception") if state else None

    def delete(self, sid: str) -> None:
        self._host.delete_state(self.name, sid)
