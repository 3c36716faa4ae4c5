"""The Python API: ``recommend(path)`` or a reusable ``Recommender``."""
from __future__ import annotations

from pathlib import Path

import yaml

from .result import Result
from .rulebase import Rulebase, load_rulebase
from .session import Engine
from .workload import Workload


class Recommender:
    """A loaded, compiled rulebase and its durable-rules Host; reuse it for many workloads."""

    def __init__(self, rules=None, knowledge=None, rulebase: Rulebase | None = None):
        self.rulebase = rulebase or load_rulebase(rules, knowledge)
        self.engine = Engine(self.rulebase)

    def load(self, workload) -> Workload:
        """A path, YAML text (``str`` with a newline) or a mapping -> validated Workload."""
        rb = self.rulebase
        if isinstance(workload, Workload):
            return workload
        if isinstance(workload, dict):
            text = yaml.safe_dump(workload, sort_keys=False, allow_unicode=True)
            return rb.inputs.load(None, rb.catalogs, display="<workload>", text=text)
        if isinstance(workload, str) and "\n" in workload:
            return rb.inputs.load(None, rb.catalogs, display="<workload>", text=workload)
        return rb.inputs.load(Path(workload), rb.catalogs, display=str(workload))

    def recommend(self, workload) -> Result:
        return Result(self.rulebase, self.engine.run(self.load(workload)))


_default: dict = {}


def recommend(workload, rules=None, knowledge=None) -> Result:
    """Recommend a server for one workload (a path, YAML text or a mapping)."""
    key = (tuple(map(str, rules or ())), tuple(map(str, knowledge or ())))
    rec = _default.get(key)
    if rec is None:
        rec = _default[key] = Recommender(rules, knowledge)
    return rec.recommend(workload)
