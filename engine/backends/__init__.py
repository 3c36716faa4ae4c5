"""Rule engines behind one seam: compile a planned rulebase, open a session, assert values, match.

``durable`` (the default) matches in durable-rules' Rete network; ``python`` is the reference
evaluator of :mod:`engine.lang.semantics`. ``GPUSIZER_BACKEND`` picks one; the conformance suite
(tests/conformance) holds every backend to the same semantics.
"""

from __future__ import annotations

import os

from ..errors import InputError
from .base import Backend, Compiled, Match, Session

__all__ = ["Backend", "Compiled", "Match", "Session", "get_backend", "names"]

_NAMES = ("durable", "python")


def names() -> tuple[str, ...]:
    """The names GPUSIZER_BACKEND accepts."""
    return _NAMES


def get_backend(name: str | None = None) -> Backend:
    """The backend called ``name`` (default: $GPUSIZER_BACKEND, else durable)."""
    chosen = name or os.environ.get("GPUSIZER_BACKEND") or "durable"
    if chosen == "durable":
        from .durable import DurableBackend

        return DurableBackend()
    if chosen == "python":
        from .python import PythonBackend

        return PythonBackend()
    raise InputError(
        f"unknown rule engine backend '{chosen}'", help=f"set GPUSIZER_BACKEND to one of: {', '.join(_NAMES)}"
    )
