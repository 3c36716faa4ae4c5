"""``gpusizer diff --rules-a A --rules-b B FILE...``: which recommendations change, and why."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ExitCode, GpusizerError
from . import dump_json, shipped_dirs, write_output


def add_parser(sub: Any, name: str) -> None:
    df = sub.add_parser(name, help="compare two rulebases over workloads")
    df.add_argument("files", nargs="+", metavar="FILE")
    df.add_argument("--rules-a", required=True, metavar="DIR")
    df.add_argument("--rules-b", required=True, metavar="DIR")
    df.add_argument("--format", choices=["text", "json"], default="text")
    df.add_argument("--knowledge", action="append", metavar="DIR")


def run(args: argparse.Namespace) -> int:
    from ..api import Recommender
    from ..explain.diff import change_lines, compare_results, responsible, rule_changes
    from ..explain.record import rule_hashes
    from .paths import stack

    shipped_rules, knowledge = shipped_dirs(args)
    with (
        Recommender(stack(shipped_rules, [Path(args.rules_a)]), knowledge) as a,
        Recommender(stack(shipped_rules, [Path(args.rules_b)]), knowledge) as b,
    ):
        ha = {r: x["sha256"] for r, x in rule_hashes(a.rulebase).items()}
        hb = {r: x["sha256"] for r, x in rule_hashes(b.rulebase).items()}
        rules = rule_changes(ha, hb)
        changed_rules = sorted(rules["rules_added"] + rules["rules_removed"] + rules["rules_edited"])
        out: dict[str, Any] = {"rules_changed": changed_rules, "workloads": []}
        failed = False
        for name in args.files:
            try:
                ra, rb_ = a.recommend(name), b.recommend(name)
            except GpusizerError as exc:
                print(exc.render(), file=sys.stderr)
                failed = True
                continue
            changes = compare_results(ra, rb_)
            fired = [f.rule for f in ra.firings] + [f.rule for f in rb_.firings]
            out["workloads"].append(
                {
                    "file": name,
                    "changes": [c.as_dict() for c in changes],
                    "responsible": responsible(changed_rules, fired),
                }
            )
    if args.format == "json":
        write_output(dump_json(out), None)
    else:
        lines = [f"rules that differ: {', '.join(changed_rules) or 'none'}"]
        for w in out["workloads"]:
            if not w["changes"]:
                lines.append(f"{w['file']}: same recommendation")
                continue
            lines.append(f"{w['file']}: {len(w['changes'])} conclusion(s) change")
            lines += [f"  {line}" for ch in w["changes"] for line in change_lines(ch)]
            lines.append(f"  rules responsible: {', '.join(w['responsible']) or 'none that fired'}")
        write_output("\n".join(lines) + "\n", None)
    if failed:
        return ExitCode.INVALID
    return ExitCode.FINDINGS if any(w["changes"] for w in out["workloads"]) else ExitCode.OK
