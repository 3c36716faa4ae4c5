"""``gpusizer audit verify RECORD``: re-run a decision record; exit 0 same, 1 changed, 2 tampered."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import ExitCode
from ..format import quantity
from . import dump_json, recommender, rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    au = sub.add_parser(name, help="decision records")
    asub = au.add_subparsers(dest="action", metavar="ACTION")
    asub.required = True
    av = asub.add_parser(
        "verify",
        help="re-run a decision record with today's rulebase; exit 0 same, 1 changed, 2 unreadable or tampered",
    )
    av.add_argument("record", metavar="RECORD.json")
    av.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(av)


def _fmt(v: Any) -> str:
    return "(none)" if v is None else quantity(v)


def run(args: argparse.Namespace) -> int:
    from ..explain.record import read, verify

    rec = read(Path(args.record))
    with recommender(args) as r:
        report = verify(rec, r)
    if args.format == "json":
        write_output(dump_json(report), None)
    elif report["same"]:
        write_output(
            f"same decision: {rec['workload']['name']} (recorded {rec['created']}, "
            f"rulebase then {report['rulebase_then'][:12]}, now {report['rulebase_now'][:12]})\n",
            None,
        )
    else:
        lines = [f"changed decision: {rec['workload']['name']} (recorded {rec['created']})"]
        for ch in report["changes"]:
            lines.append(f"  {ch['attribute']}: {_fmt(ch['old'])} -> {_fmt(ch['new'])}")
        for label, key in (
            ("rules added", "rules_added"),
            ("rules removed", "rules_removed"),
            ("rules edited", "rules_edited"),
        ):
            if report[key]:
                lines.append(f"  {label}: {', '.join(report[key])}")
        lines.append(
            f"  caused by: {', '.join(report['responsible']) or 'no rule that fired changed (a knowledge change)'}"
        )
        write_output("\n".join(lines) + "\n", None)
    return ExitCode.OK if report["same"] else ExitCode.FINDINGS
