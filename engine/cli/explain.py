"""``gpusizer explain FILE ATTRIBUTE``: how one conclusion was derived, down to the inputs."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ExitCode, InputError
from . import recommender, rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    e = sub.add_parser(name, help="show how one conclusion was derived")
    e.add_argument("file", metavar="FILE")
    e.add_argument("attribute", metavar="ATTRIBUTE", help="e.g. ram.system_gb")
    e.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    e.add_argument("--depth", type=int, metavar="N", help="stop N steps below the conclusion")
    rulebase_args(e)


def run(args: argparse.Namespace) -> int:
    from ..report.render import render_explain

    with recommender(args) as rec:
        rec.rulebase.attribute(args.attribute)
        if args.depth is not None and args.depth < 0:
            raise InputError("--depth must be 0 or more", help="e.g. --depth 2")
        result = rec.recommend(args.file)
        write_output(render_explain(result, args.attribute, args.format, args.depth), None)
    return ExitCode.OK
