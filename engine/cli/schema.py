"""``gpusizer schema KIND``: a JSON Schema, for editors."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ExitCode
from . import write_output

KINDS = [
    "rule",
    "base",
    "rule-test",
    "attributes",
    "knowledge",
    "constants",
    "import",
    "infer",
    "overlay",
    "workload",
    "record",
    "sweep",
]


def add_parser(sub: Any, name: str) -> None:
    sc = sub.add_parser(name, help="print a JSON Schema (for editors)")
    sc.add_argument("kind", choices=KINDS)


def run(args: argparse.Namespace) -> int:
    from ..load.resources import data_dir
    from ..load.schema import SCHEMA_DIR

    if args.kind == "workload":
        text = (data_dir("knowledge") / "workload.schema.json").read_text(encoding="utf-8")
    else:
        text = (SCHEMA_DIR / f"{args.kind}.schema.json").read_text(encoding="utf-8")
    write_output(text, None)
    return ExitCode.OK
