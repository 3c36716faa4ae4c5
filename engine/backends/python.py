"""The reference backend: matching by the evaluator of ``lang.semantics``, in plain Python."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..lang import semantics as S
from ..lang.ir import ItemCond, Simple
from ..plan.resolve import PlannedRule
from ..plan.rulebase import Rulebase
from .base import Match


class PythonSession:
    """One workload's values, matched against the rules of a step on request."""

    def __init__(self, compiled: PythonCompiled) -> None:
        self._compiled = compiled
        self._values: dict[str, Any] = {}
        self._keys = S.ValueKeys(self._values)

    def assert_values(self, values: Mapping[str, Any]) -> None:
        """Take the final values of these attributes (ABSENT: no value)."""
        self._keys.drop(values)
        for name, value in values.items():
            if value is S.ABSENT:
                self._values.pop(name, None)
            else:
                self._values[name] = value

    def match(self, step: int, skip: frozenset[str] = frozenset()) -> list[Match]:
        """Every match of the rules scheduled at ``step``, but those in ``skip``."""
        # the values stay put while a step matches: a let's expansion in a ref is kept for the items it reads
        env = S.Env(self._values, self._compiled.catalogs, {}, {})
        out = []
        # what a condition that reads no item says is the same in every variant that has it (the variants of
        # an 'any' share their other conditions, a rule's those of its base): asked once a step
        known: dict[int, bool] = {}
        memo = self._compiled.memo  # which items the joins passed, by their operands' values (semantics.matches)
        bound = self._compiled.bound
        for rule in self._compiled.at.get(step, ()):
            if rule.id in skip:
                continue
            for v in rule.variants:
                first, rest = self._compiled.conditions[rule.id, v.index]
                if not S.all_hold(first, env, known):
                    continue
                if not rest:
                    if all(name in self._values for name in v.required):
                        out.append(Match(rule.id, v.index, ()))
                    continue
                # the bindings of the joins are a function of the values their conditions read and of which
                # required attributes have one: kept from an earlier run that had them
                key = (id(v), self._keys.key(self._compiled.reads[rule.id, v.index]), self._keys.present(v.required))
                found = S.kept_bindings(bound, key, rest, env, v.required, v.items, memo)
                out.extend(Match(rule.id, v.index, ids) for ids in found)
        return out

    def close(self) -> None:
        """Forget the session's values."""
        self._values = {}
        self._keys = S.ValueKeys(self._values)


class PythonCompiled:
    """A rulebase grouped by step, for the evaluator."""

    def __init__(self, rulebase: Rulebase, schedule: Mapping[str, int]) -> None:
        self.catalogs = rulebase.catalogs
        # what joins whose tests do not read their own item passed, by their operands' values: the same in
        # every run (semantics.matches), so kept for the compiled rulebase's life
        self.memo: dict[Any, Any] = {}
        # a variant's join bindings (item ids) by the values of the attributes its joins' conditions read, for
        # every later session (PythonSession.match)
        self.bound: dict[Any, list[tuple[tuple[str, str], ...]]] = {}
        self.reads: dict[tuple[str, int], tuple[str, ...]] = {}
        self.at: dict[int, list[PlannedRule]] = {}
        # each variant's conditions in the order that prunes first (S.scheduled: the same matches), as those
        # before its first join (they read no item) and the rest
        self.conditions: dict[tuple[str, int], tuple[tuple[Simple, ...], tuple[Simple, ...]]] = {}
        for rid, rule in rulebase.rules.items():
            self.at.setdefault(schedule[rid], []).append(rule)
            for v in rule.variants:
                ordered = S.scheduled(v.conditions)
                cut = next((i for i, c in enumerate(ordered) if isinstance(c, ItemCond)), len(ordered))
                self.conditions[rid, v.index] = (ordered[:cut], ordered[cut:])
                self.reads[rid, v.index] = S.attributes_read(ordered[cut:], rulebase.attributes)

    def open(self) -> PythonSession:
        """A session for one workload."""
        return PythonSession(self)

    def forget(self) -> None:
        """Forget what earlier sessions' joins passed and bound (the memos)."""
        self.memo.clear()
        self.bound.clear()

    def close(self) -> None:
        """Drop the rules."""
        self.at = {}
        self.memo.clear()
        self.bound.clear()


class PythonBackend:
    """The reference backend: the one evaluator, in plain Python, with no limits of its own."""

    name = "python"

    def compile(self, rulebase: Rulebase, schedule: Mapping[str, int]) -> PythonCompiled:
        """Group the rules by the step they run at."""
        return PythonCompiled(rulebase, schedule)
