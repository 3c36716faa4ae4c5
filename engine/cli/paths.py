"""Which rulebase the authoring commands mean: the shipped one with the given paths laid over it."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from ..errors import InputError
from ..load.limits import MAX_ENTRIES
from ..load.loader import WORKLOAD_SCHEMA
from . import shipped_dirs

_HEAD = 4096  # bytes of a file read to tell a knowledge file from a rule file


def _head(path: Path) -> str:
    """The first bytes of a regular file (a pipe or a device is never waited on or read), as text."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, _HEAD).decode("utf-8", errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def _looks_like_knowledge(path: Path) -> bool:
    """A folder of catalogs, constants, import mappings or inference files (or with the workload
    schema) rather than of rules. Only the start of each file is read.
    """
    if (path / WORKLOAD_SCHEMA).is_file():
        return True
    for f in sorted(path.glob("*.yaml"))[:MAX_ENTRIES]:
        head = _head(f)
        if any(line.startswith(("catalog:", "constants:", "import:", "infer:")) for line in head.splitlines()):
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
