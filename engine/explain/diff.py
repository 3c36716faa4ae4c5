"""One comparison of two recommendations: what-if, ``audit verify`` and ``diff`` all use it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..format import quantity
from ..run.combine import canonical
from .result import Result


@dataclass(frozen=True)
class Change:
    """A conclusion whose value differs: before, after, its unit, and the rule that set the new value."""

    attribute: str
    old: Any
    new: Any
    unit: str | None = None
    rule: str | None = None
    old_unit: str | None = None  # only where the old value had another unit (another currency)

    def as_dict(self) -> dict[str, Any]:
        """The change as a JSON object (``old_unit`` only where it differs from ``unit``)."""
        out = asdict(self)
        if out["old_unit"] is None:
            del out["old_unit"]
        return out


def _shown(value: Any, unit: str | None = None) -> str:
    return "(none)" if value is None or value == "" else quantity(value, unit)


def change_lines(change: Change | Mapping[str, Any]) -> list[str]:
    """A change as text, one form for what-if, ``diff`` and ``audit verify``: a value as old -> new
    with its units; a record as the fields that changed; a list as the members removed and added.
    """
    ch = change if isinstance(change, Change) else Change(**change)
    rule = f"  ({ch.rule})" if ch.rule else ""
    old, new = ch.old, ch.new
    if isinstance(old, dict) and isinstance(new, dict):
        keys = list(new) + [k for k in old if k not in new]
        parts = [
            f"{k} {_shown(old.get(k))} -> {_shown(new.get(k))}"
            for k in keys
            if canonical(old.get(k)) != canonical(new.get(k))
        ]
        return [f"{ch.attribute}: {', '.join(parts)}{rule}"]
    if isinstance(old, list) and isinstance(new, list):
        before, after = [canonical(x) for x in old], [canonical(x) for x in new]
        removed = [x for x, k in zip(old, before, strict=True) if k not in after]
        added = [x for x, k in zip(new, after, strict=True) if k not in before]
        if not removed and not added:
            return [f"{ch.attribute}: the same members in another order{rule}"]
        counts = ", ".join(f"{len(xs)} {what}" for xs, what in ((removed, "removed"), (added, "added")) if xs)
        return [
            f"{ch.attribute}: {counts}{rule}",
            *(f"  - {_shown(x)}" for x in removed),
            *(f"  + {_shown(x)}" for x in added),
        ]
    return [f"{ch.attribute}: {_shown(old, ch.old_unit or ch.unit)} -> {_shown(new, ch.unit)}{rule}"]


def compare(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    units: Mapping[str, str | None] | None = None,
    rules: Mapping[str, str] | None = None,
    old_units: Mapping[str, str | None] | None = None,
) -> list[Change]:
    """Every attribute whose value differs between ``old`` and ``new`` (missing counts as None)."""
    units = units or {}
    rules = rules or {}
    old_units = old_units or {}
    return [
        Change(
            a,
            old.get(a),
            new.get(a),
            units.get(a),
            rules.get(a),
            old_units[a] if a in old_units and old_units[a] != units.get(a) else None,
        )
        for a in sorted(set(old) | set(new))
        if canonical(old.get(a)) != canonical(new.get(a))
    ]


def conclusions(result: Result) -> dict[str, Any]:
    """Every concluded attribute's value."""
    return {a: c.value for a, c in result.conclusions.items()}


def binding_rules(result: Result) -> dict[str, str]:
    """The rule that set each conclusion (the first binding contribution)."""
    return {a: c.contributions[c.combined.binding[0]].rule for a, c in result.conclusions.items()}


def compare_results(old: Result, new: Result) -> list[Change]:
    """What changes from one recommendation to another, with units and the rule that set each new value."""
    names = set(old.conclusions) | set(new.conclusions)
    units = {a: new.unit(a) if a in new.conclusions else old.unit(a) for a in names}
    old_units = {a: old.unit(a) for a in names if a in old.conclusions}
    return compare(conclusions(old), conclusions(new), units, binding_rules(new), old_units)


def responsible(changed_rules: Iterable[str], fired: Iterable[str]) -> list[str]:
    """The changed rules (edited, added or removed) that fired in either run."""
    fired_set = set(fired)
    return sorted(r for r in set(changed_rules) if r in fired_set)


def rule_changes(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, list[str]]:
    """Rules added, removed and edited between two {rule id: sha256} maps."""
    return {
        "rules_added": sorted(set(new) - set(old)),
        "rules_removed": sorted(set(old) - set(new)),
        "rules_edited": sorted(r for r in set(old) & set(new) if old[r] != new[r]),
    }
