"""``gpusizer rules list`` and ``gpusizer rules show ID``."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ExitCode, InputError, hint
from . import dump_json, rulebase_args, shipped_dirs, write_output


def add_parser(sub: Any, name: str) -> None:
    ru = sub.add_parser(name, help="list the rules, or show one")
    rsub = ru.add_subparsers(dest="action", metavar="ACTION")
    rsub.required = True
    rl = rsub.add_parser("list", help="every rule, by area")
    rl.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    rulebase_args(rl)
    rs = rsub.add_parser("show", help="one rule: conditions, conclusions, source, tests, neighbours")
    rs.add_argument("id", metavar="ID")
    rs.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    rulebase_args(rs)


def run(args: argparse.Namespace) -> int:
    from ..authoring.describe import rule_record
    from ..plan.rulebase import load_rulebase
    from ..report.render import environment, safe_links

    rb = load_rulebase(*shipped_dirs(args))
    if args.action == "show":
        planned = rb.rules.get(args.id)
        if planned is None:
            raise InputError(f"unknown rule '{args.id}'", help=f"{hint(args.id, rb.rules)}see 'gpusizer rules list'")
        records = [rule_record(rb, planned)]
    else:
        records = [rule_record(rb, r) for r in sorted(rb.rules.values(), key=lambda r: (r.rule.area, r.id))]
    if args.format == "json":
        write_output(dump_json(records if args.action == "list" else records[0]), None)
        return ExitCode.OK
    if args.format == "markdown":  # a source URL becomes a link only when it is http(s) or relative
        records = safe_links(records)
    ext = {"text": "txt", "markdown": "md"}[args.format]
    tmpl = environment().get_template(f"rules-{args.action}.{ext}.j2")
    write_output(tmpl.render(rules=records, rule=records[0] if records else None), None)
    return ExitCode.OK
