"""``gpusizer why-not FILE ATTRIBUTE=VALUE``: why a conclusion did not take that value."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ExitCode
from . import dump_json, recommender, rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    wn = sub.add_parser(name, help="why an attribute did not take a value")
    wn.add_argument("file", metavar="FILE")
    wn.add_argument("query", metavar="ATTRIBUTE=VALUE", help="e.g. ram.system_gb=64")
    wn.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(wn)


def run(args: argparse.Namespace) -> int:
    from ..explain.whynot import parse_query, why_not

    with recommender(args) as rec:
        attr, value = parse_query(rec.rulebase, args.query)
        answer = why_not(rec.recommend(args.file), attr, value)
    if args.format == "json":
        write_output(dump_json(answer), None)
        return ExitCode.OK
    from ..report.render import wrap

    lines = [f"why not {attr}={value!r}? [{answer['kind']}]", wrap(f"  {answer['message']}", 4)]
    if answer.get("via"):
        lines.append(wrap(f"  (followed {answer['via']})", 4))
    write_output("\n".join(lines) + "\n", None)
    return ExitCode.OK
