"""``gpusizer docs``: the generated rule reference (docs/rules.md)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ExitCode
from . import rulebase_args, shipped_dirs, write_output


def add_parser(sub: Any, name: str) -> None:
    d = sub.add_parser(name, help="generate the rule reference (docs/rules.md)")
    d.add_argument("-o", "--output", metavar="FILE")
    rulebase_args(d)


def run(args: argparse.Namespace) -> int:
    from ..authoring.docs import render_docs
    from ..plan.rulebase import load_rulebase

    write_output(render_docs(load_rulebase(*shipped_dirs(args))), args.output)
    return ExitCode.OK
