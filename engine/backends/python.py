"""The reference backend: matching by the evaluator of ``plan.semantics``, in plain Python."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plan import semantics as S
from ..plan.resolve import PlannedRule
from ..plan.rulebase import Rulebase
from .base import Match


class PythonSession:
    def __init__(self, compiled: PythonCompiled) -> None:
        self._compiled = compiled
        self._values: dict[str, Any] = {}

    def assert_values(self, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            if value is S.ABSENT:
                self._values.pop(name, None)
            else:
                self._values[name] = value

    def match(self, step: int) -> list[Match]:
        env = S.Env(self._values, self._compiled.catalogs, {})
        out = []
        for rule in self._compiled.at.get(step, ()):
            for v in rule.variants:
                for items in S.matches(v.conditions, env, v.required):
                    out.append(Match(rule.id, v.index, tuple((a, items[a].id) for a, _ in v.items)))
        return out

    def close(self) -> None:
        self._values = {}


class PythonCompiled:
    def __init__(self, rulebase: Rulebase, schedule: Mapping[str, int]) -> None:
        self.catalogs = rulebase.catalogs
        self.at: dict[int, list[PlannedRule]] = {}
        for rid, rule in rulebase.rules.items():
            self.at.setdefault(schedule[rid], []).append(rule)

    def open(self) -> PythonSession:
        return PythonSession(self)

    def close(self) -> None:
        self.at = {}


class PythonBackend:
    name = "python"

    def compile(self, rulebase: Rulebase, schedule: Mapping[str, int]) -> PythonCompiled:
        return PythonCompiled(rulebase, schedule)
