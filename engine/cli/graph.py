"""``gpusizer graph FILE``: the derivation graph alone, as DOT or SVG."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ExitCode
from . import recommender, rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    gr = sub.add_parser(name, help="write the derivation graph alone (DOT or SVG)")
    gr.add_argument("file", metavar="FILE")
    gr.add_argument("--format", choices=["dot", "svg"], default="svg")
    gr.add_argument("--layout", choices=["auto", "dot", "python"], default="auto")
    gr.add_argument(
        "--attribute",
        action="append",
        metavar="ATTRIBUTE",
        help="only what leads to these conclusions (repeatable; default: all)",
    )
    gr.add_argument("-o", "--output", metavar="OUT")
    rulebase_args(gr)


def run(args: argparse.Namespace) -> int:
    from ..report.drawing import subgraph, to_dot, to_svg

    with recommender(args) as rec:
        for name in args.attribute or []:
            rec.rulebase.attribute(name, "--attribute: ")
        g = subgraph(rec.recommend(args.file), args.attribute)
    write_output(to_dot(g) if args.format == "dot" else to_svg(g, args.layout), args.output)
    return ExitCode.OK
