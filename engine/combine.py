"""Combine several rules' contributions to one attribute by its declared policy."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .model import Attribute


@dataclass
class Contribution:
    rule: str
    firing: int  # index into the session's firings
    value: Any
    priority: int = 0


@dataclass
class Combined:
    value: Any
    binding: list  # indexes into the contributions that set the value
    note: str = ""


class ConflictError(Exception):
    pass


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def combine(attr: Attribute, contribs: list[Contribution]) -> Combined:
    policy = attr.combine
    values = [c.value for c in contribs]
    if policy == "single":
        distinct = {canonical(v) for v in values}
        if len(distinct) > 1:
            parts = "; ".join(f"{c.rule} gives {canonical(c.value)}" for c in contribs)
            raise ConflictError(f"rules disagree on '{attr.name}' ({parts}) and its combine policy is 'single'")
        return Combined(values[0], list(range(len(contribs))))
    if policy in ("max", "min"):
        pick = max if policy == "max" else min
        best = pick(values)
        binding = [i for i, v in enumerate(values) if v == best][:1]
        return Combined(best, binding, f"{policy} of {len(values)} contribution(s)")
    if policy == "sum":
        return Combined(sum(values), list(range(len(values))), f"sum of {len(values)} contribution(s)")
    if policy == "union":
        out, seen = [], set()
        for v in values:
            for member in (v if isinstance(v, list) else [v]):
                k = canonical(member)
                if k not in seen:
                    seen.add(k)
                    out.append(member)
        return Combined(out, list(range(len(values))), f"union of {len(values)} contribution(s)")
    if policy == "prefer":
        top = max(c.priority for c in contribs)
        winners = [i for i, c in enumerate(contribs) if c.priority == top]
        winner = min(winners, key=lambda i: contribs[i].rule)
        note = f"highest priority ({top}) wins"
        if len({canonical(values[i]) for i in winners}) > 1:
            note += f"; a tie at that priority was broken by rule id ({contribs[winner].rule})"
        return Combined(values[winner], [winner], note)
    if policy in ("argmin", "argmax"):
        key, first = attr.key, attr.first_by
        sign = 1 if policy == "argmin" else -1

        def rank(i):
            group = float(values[i].get(first, 0)) if first else 0.0
            return (group, sign * values[i][key], canonical(values[i]))
        order = sorted(range(len(values)), key=rank)
        win = order[0]
        note = f"{'lowest' if sign > 0 else 'highest'} {key} of {len(values)} candidate(s)"
        if first:
            note += f", those with the lowest {first} first"
        return Combined(values[win], [win], note)
    raise ConflictError(f"unknown combine policy '{policy}'")  # pragma: no cover - schema forbids it
