"""The backend interface: what the session runner needs from a rule engine, and nothing more."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..plan.rulebase import Rulebase


@dataclass(frozen=True, slots=True, order=True)
class Match:
    """One way a rule's conditions hold: the rule, which alternative, and the items its joins bound."""

    rule: str
    variant: int
    items: tuple[tuple[str, str], ...]  # (alias, item id), in the order the rule joins them


class Session(Protocol):
    """One workload's run: final values go in, step by step; matches come out."""

    def assert_values(self, values: Mapping[str, Any]) -> None:
        """Final values of attributes (``semantics.ABSENT`` for one without a value)."""

    def match(self, step: int, skip: frozenset[str] = frozenset()) -> list[Match]:
        """Every match of the rules scheduled at ``step``, whose inputs are all asserted by now; none of the
        rules in ``skip`` (the runner knows their matches), which a backend need not match at all.
        """

    def close(self) -> None:
        """Free what the session holds."""


class Compiled(Protocol):
    """A rulebase loaded into the engine; sessions are opened on it, one per workload."""

    def open(self) -> Session:
        """A session for one workload."""

    def forget(self) -> None:
        """Forget what earlier sessions computed that later ones could reuse (a run after it computes all)."""

    def close(self) -> None:
        """Release the engine's resources."""


class Backend(Protocol):
    """A rule engine. ``schedule`` maps each rule id to the step it runs at (its stratum, or one
    step per rule when rules are tested one at a time).
    """

    name: str

    def compile(self, rulebase: Rulebase, schedule: Mapping[str, int]) -> Compiled:
        """Load a planned rulebase; each rule runs at ``schedule[rule id]``."""
