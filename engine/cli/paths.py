"""Which rulebase the authoring commands mean: the shipped one with the given paths laid over it."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from ..load.loader import WORKLOAD_SCHEMA
from . import shipped_dirs


def _looks_like_knowledge(path: Path) -> bool:
    """A folder of catalogs (or with the workload schema) rather than of rules."""
    if (path / WORKLOAD_SCHEMA).is_file():
        return True
    for f in path.glob("*.yaml"):
        try:
            head = f.read_text(encoding="utf-8", errors="replace")[:2000]
        except OSError:
            continue
        if any(line.startswith(("catalog:", "constants:")) for line in head.splitlines()):
            return True
    return False


def split_paths(paths: list[str]) -> tuple[list[Path], list[Path], list[Path]]:
    """validate/test PATH...: rules directories, knowledge directories, and workload files."""
    rules: list[Path] = []
    knowledge: list[Path] = []
    workloads: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError("no such file or directory", file=str(p), help="check the path")
        if p.is_dir():
            (knowledge if _looks_like_knowledge(p) else rules).append(p)
        else:
            workloads.append(p)
    return rules, knowledge, workloads


def stack(shipped: list[Path], given: list[Path]) -> list[Path]:
    """A rules directory with its own _attributes.yaml and no _overlay.yaml is a whole rulebase;
    any other is an overlay on the shipped rules.
    """
    if given and (given[0] / "_attributes.yaml").is_file() and not (given[0] / "_overlay.yaml").is_file():
        return given
    return shipped + given


def with_paths(args: argparse.Namespace) -> tuple[list[Path], list[Path], list[Path]]:
    """The rulebase that validate/test PATH... means, and the workload files among the paths."""
    extra_rules, extra_knowledge, workloads = split_paths(args.paths)
    rules, knowledge = shipped_dirs(args)
    return stack(rules, extra_rules), knowledge + extra_knowledge, workloads
