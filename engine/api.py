"""The Python API: ``recommend(path)`` or a reusable ``Recommender``.

A workload is given as a path (``str`` or ``os.PathLike``), a mapping, or a loaded ``Workload``;
YAML text goes through ``recommend_text``. A string is always a path, never guessed to be text.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .backends import Backend
from .errors import InputError
from .explain.result import Result
from .load.workload import Workload
from .plan.rulebase import Rulebase, load_rulebase
from .run.session import SessionRunner

Source = str | os.PathLike[str] | Mapping[str, Any] | Workload


class Recommender:
    """A loaded, planned rulebase on a rule engine; reuse it for many workloads, then ``close()`` it
    (or use it as a context manager).
    """

    def __init__(
        self,
        rules: Sequence[Path | str] | None = None,
        knowledge: Sequence[Path | str] | None = None,
        rulebase: Rulebase | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.rulebase = rulebase or load_rulebase(rules, knowledge)
        self.runner = SessionRunner(self.rulebase, backend)
        # a Recommender dropped without close() still frees the rule engine's memory when it is
        # collected (not at interpreter exit, when the process's memory goes anyway)
        self._finalizer = weakref.finalize(self, self.runner.close)
        self._finalizer.atexit = False

    def __enter__(self) -> Recommender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the rule engine's resources."""
        self._finalizer()

    def load(self, workload: Source) -> Workload:
        """A path, a mapping or a Workload -> validated Workload."""
        rb = self.rulebase
        if isinstance(workload, Workload):
            return workload
        if isinstance(workload, Mapping):
            text = yaml.safe_dump(dict(workload), sort_keys=False, allow_unicode=True)
            return rb.inputs.load(None, rb.catalogs, display="<workload>", text=text)
        if isinstance(workload, (str, os.PathLike)):
            return rb.inputs.load(Path(workload), rb.catalogs, display=os.fspath(workload))
        raise InputError(
            f"a workload is a path, a mapping or a Workload, not {type(workload).__name__}",
            help="for YAML text use recommend_text(text)",
        )

    def load_text(
        self, text: str, name: str = "<workload>", documents: Mapping[str, Mapping[str, str]] | None = None
    ) -> Workload:
        """YAML text -> validated Workload; ``name`` is what error messages call it; ``documents``
        (a decision record's) stand in for the files the workload's keys name.
        """
        rb = self.rulebase
        return rb.inputs.load(None, rb.catalogs, display=name, text=text, documents=documents)

    def recommend(self, workload: Source) -> Result:
        """The recommendation for one workload: a path, a mapping or a Workload."""
        return Result(self.rulebase, self.runner.run(self.load(workload)))

    def recommend_text(
        self, text: str, name: str = "<workload>", documents: Mapping[str, Mapping[str, str]] | None = None
    ) -> Result:
        """The recommendation for a workload given as YAML text."""
        return Result(self.rulebase, self.runner.run(self.load_text(text, name, documents)))


_default: dict[tuple[tuple[str, ...], tuple[str, ...]], Recommender] = {}


def recommend(
    workload: Source, rules: Sequence[Path | str] | None = None, knowledge: Sequence[Path | str] | None = None
) -> Result:
    """Recommend a server for one workload (a path, a mapping or a Workload)."""
    key = (tuple(map(str, rules or ())), tuple(map(str, knowledge or ())))
    rec = _default.get(key)
    if rec is None:
        rec = _default[key] = Recommender(rules, knowledge)
    return rec.recommend(workload)
