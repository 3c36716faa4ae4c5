"""``what-if``: re-run a workload with fields changed; sweeps; the largest value that still satisfies a condition."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml

from ..errors import GpusizerError, InputError
from ..lang import expr as X
from ..load.workload import Workload
from .result import Result


def default_columns(rb: Any) -> list[str]:
    """Attributes declared with headline: true, in declaration order."""
    return [a.name for a in rb.attributes.values() if a.headline]


def set_field(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """Set a dotted workload key (batch_size, model.layers) in a workload mapping."""
    node = doc
    parts = dotted.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[parts[-1]] = value


def parse_assign(text: str, flag: str) -> tuple[str, Any]:
    """KEY=VALUE from the command line; the value is read as YAML (8, fp16, true, [a, b])."""
    if "=" not in text:
        raise InputError(f"{flag} '{text}' is not KEY=VALUE", help=f"e.g. {flag} batch_size=8")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def load_variant(rec: Any, data: dict[str, Any], label: str) -> Workload:
    """A changed workload mapping, validated like a file."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return rec.load_text(text, label)  # type: ignore[no-any-return]


def recommend_variant(rec: Any, data: dict[str, Any], label: str) -> Result:
    """The recommendation for a changed workload mapping."""
    return rec.recommend(load_variant(rec, data, label))  # type: ignore[no-any-return]


def condition_names(expr_text: str) -> frozenset[str]:
    """The attributes a --while condition reads (an input error if it does not parse)."""
    try:
        return frozenset(X.parse(expr_text).names)
    except X.ExprError as exc:
        raise InputError(f"--while: {exc.message}", help=exc.help or "e.g. --while 'ram.system_gb <= 256'") from None


def condition(expr_text: str) -> Callable[[Result], bool]:
    """--while CONDITION: an expression over conclusions, true or false for a result."""
    try:
        e = X.parse(expr_text)
    except X.ExprError as exc:
        raise InputError(f"--while: {exc.message}", help=exc.help or "e.g. --while 'ram.system_gb <= 256'") from None

    def holds(result: Result) -> bool:
        def resolve(name: str) -> X.Getter:
            return lambda env: result.get(name)

        try:
            return bool(e.bind(resolve)({}))
        except X.ExprError:
            return False

    return holds


def largest(
    rec: Any, data: dict[str, Any], field: str, holds: Callable[[Result], bool], label: str, limit: int = 10**7
) -> tuple[int | None, Result | None, Result | None]:
    """Largest positive integer value of ``field`` for which ``holds`` is true (search over the rules)."""

    def ok(n: int) -> tuple[bool, Result | None]:
        d = copy.deepcopy(data)
        set_field(d, field, n)
        try:
            r = recommend_variant(rec, d, label)
        except GpusizerError:
            return False, None
        return holds(r), r

    # the first value is checked as a file would be: a workload that is invalid at 1 is an input error
    d1 = copy.deepcopy(data)
    set_field(d1, field, 1)
    first = recommend_variant(rec, d1, label)
    if not holds(first):
        return None, first, None
    lo, hi = 1, 2
    while hi <= limit:
        g, _ = ok(hi)
        if not g:
            break
        lo, hi = hi, hi * 2
    else:
        return limit, ok(limit)[1], None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid)[0]:
            lo = mid
        else:
            hi = mid
    return lo, ok(lo)[1], ok(hi)[1]
