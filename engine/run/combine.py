"""Combine several rules' contributions to one attribute by its declared policy."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..lang.ir import Attribute


@dataclass(frozen=True)
class Contribution:
    """One rule firing's value for an attribute."""

    rule: str
    firing: int  # index into the run's firings
    value: Any
    priority: int = 0


@dataclass(frozen=True)
class Combined:
    """The combined value and which contributions set it."""

    value: Any
    binding: tuple[int, ...]  # indexes into the contributions that set the value
    note: str = ""


class ConflictError(Exception):
    """Contributions that cannot be combined (rules disagree on a 'single' attribute)."""

    pass


def exact_sum(values: Sequence[Any]) -> Any:
    """The correctly rounded sum, the same on every Python (3.14's sum() rounds differently)."""
    if all(isinstance(v, int) for v in values):
        return sum(values)
    return math.fsum(values)


# json.dumps with these options builds a new encoder at every call; this is the same encoder, built once
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def canonical(value: object) -> str:
    """One text for equal values (the sort and de-duplication key of values)."""
    return _CANONICAL.encode(value)


def rank_key(attr: Attribute, value: dict[str, Any], *, text: bool = True) -> tuple[Any, ...]:
    """argmin/argmax: ``first_by`` ascending (false first), then each key field (descending for
    argmax; a boolean false first either way), then the value's canonical text (``text=False``
    leaves that last part out).
    """
    sign = 1 if attr.combine == "argmin" else -1
    parts: list[Any] = []
    if attr.first_by:
        parts.append(float(value.get(attr.first_by, 0)))
    for k in attr.key:
        v = value[k]
        parts.append(float(v) if v is True or v is False else sign * float(v))
    return (*parts, canonical(value)) if text else tuple(parts)


def first_group(attr: Attribute) -> tuple[str, ...]:
    """The fields that make the first group a ``within`` factor applies in: ``first_by``, or else the
    boolean fields the key begins with (a record must come first on those before its cost is compared).
    """
    if attr.first_by:
        return (attr.first_by,)
    fields = attr.fields or {}
    return tuple(itertools.takewhile(lambda k: fields.get(k) == "boolean", attr.key))


def key_text(attr: Attribute) -> str:
    """The key as a note reads it: ``cost, then size``; a boolean field ``unpriced false first``."""
    fields = attr.fields or {}
    return ", then ".join(f"{k} false first" if fields.get(k) == "boolean" else k for k in attr.key)


def _ranked(attr: Attribute, values: Sequence[Any], pool: list[int]) -> list[int]:
    """``sorted(pool, key=rank_key)``, making a value's canonical text (the last tie-break) only
    when two candidates tie on every field before it.
    """
    if len(pool) < 2:
        return pool
    parts = {i: rank_key(attr, values[i], text=False) for i in pool}
    order = sorted(pool, key=parts.__getitem__)
    if any(parts[a] == parts[b] for a, b in itertools.pairwise(order)):
        order = sorted(pool, key=lambda i: rank_key(attr, values[i]))
    return order


def _within(attr: Attribute, values: Sequence[Any]) -> tuple[list[int], str]:
    """The candidates a ``within`` factor keeps, and the note's words for it: among the records that
    come first (on first_by, or the key's leading yes/no fields), those within the factor of the lowest.
    """
    pool = list(range(len(values)))
    if not attr.within:
        return pool, ""
    field, factor = attr.within
    group = first_group(attr)
    if group:
        first = min(tuple(float(values[i].get(g, 0)) for g in group) for i in pool)
        pool = [i for i in pool if tuple(float(values[i].get(g, 0)) for g in group) == first]
    low = min(float(values[i][field]) for i in pool)
    pool = [i for i in pool if float(values[i][field]) <= factor * low]
    if attr.first_by or not group:
        by = f"{attr.first_by} and " if attr.first_by else ""
        return pool, f" (the {len(pool)} with the lowest {by}{field} at most {factor:g} x the lowest)"
    return pool, (
        f" (the {len(pool)} that come first on {', '.join(group)} (false first), "
        f"with {field} at most {factor:g} x the lowest of them)"
    )


def _best(attr: Attribute, values: Sequence[Any]) -> Combined:
    """argmin/argmax: the record first by the attribute's key, among those ``within`` keeps."""
    pool, within = _within(attr, values)
    order = _ranked(attr, values, pool)
    note = (
        f"{'lowest' if attr.combine == 'argmin' else 'highest'} {key_text(attr)} of {len(values)} candidate(s){within}"
    )
    if attr.first_by:
        note += f", those with the lowest {attr.first_by} first"
    return Combined(values[order[0]], (order[0],), note)


def combine(attr: Attribute, contribs: Sequence[Contribution]) -> Combined:
    """One value from several rules' contributions, by the attribute's combine policy."""
    policy = attr.combine
    values = [c.value for c in contribs]
    if policy == "single":
        if len(values) > 1 and len({canonical(v) for v in values}) > 1:
            parts = "; ".join(f"{c.rule} gives {canonical(c.value)}" for c in contribs)
            raise ConflictError(f"rules disagree on '{attr.name}' ({parts}) and its combine policy is 'single'")
        return Combined(values[0], tuple(range(len(contribs))))
    if policy in ("max", "min"):
        best = max(values) if policy == "max" else min(values)
        binding = tuple(i for i, v in enumerate(values) if v == best)[:1]
        return Combined(best, binding, f"{policy} of {len(values)} contribution(s)")
    if policy == "sum":
        return Combined(exact_sum(values), tuple(range(len(values))), f"sum of {len(values)} contribution(s)")
    if policy == "union":
        out, seen = [], set()
        for v in values:
            for member in v if isinstance(v, list) else [v]:
                k = canonical(member)
                if k not in seen:
                    seen.add(k)
                    out.append(member)
        return Combined(out, tuple(range(len(values))), f"union of {len(values)} contribution(s)")
    if policy == "prefer":
        top = max(c.priority for c in contribs)
        winners = [i for i, c in enumerate(contribs) if c.priority == top]
        winner = min(winners, key=lambda i: contribs[i].rule)
        note = f"highest priority ({top}) wins"
        if len(winners) > 1 and len({canonical(values[i]) for i in winners}) > 1:
            note += f"; a tie at that priority was broken by rule id ({contribs[winner].rule})"
        return Combined(values[winner], (winner,), note)
    if policy in ("argmin", "argmax"):
        return _best(attr, values)
    raise ConflictError(f"unknown combine policy '{policy}'")  # pragma: no cover - schema forbids it


__all__ = ["Combined", "ConflictError", "Contribution", "canonical", "combine", "first_group", "key_text", "rank_key"]
