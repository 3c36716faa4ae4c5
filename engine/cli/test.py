"""``gpusizer test [PATH...]``: the rules' own cases (and workload cases), with rule coverage."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ExitCode
from . import rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    t = sub.add_parser(name, help="run the rules' test cases (and workload cases)")
    t.add_argument("paths", nargs="*", metavar="PATH", help="rules or knowledge directories")
    t.add_argument("--coverage", action="store_true", help="report rules never fired or never silent")
    t.add_argument("--min-coverage", type=float, metavar="PCT", help="fail below this rule coverage")
    t.add_argument(
        "--workloads",
        action="append",
        metavar="DIR",
        help="a folder of workloads with expected conclusions in DIR/expected/ (repeatable)",
    )
    t.add_argument(
        "-k",
        dest="select",
        action="append",
        metavar="TEXT",
        help="run only the cases whose id (rule-id::case, or workload::name) contains TEXT, in any case "
        "of letters (repeatable: a case that any TEXT selects runs); coverage is then over the rules "
        "that have a selected case",
    )
    rulebase_args(t)


def _selected(case_id: str, select: list[str] | None) -> bool:
    return not select or any(s.casefold() in case_id.casefold() for s in select)


def run(args: argparse.Namespace) -> int:
    from ..api import Recommender
    from ..authoring.cases import load_cases, run_all, run_workload_case, workload_cases
    from ..plan.rulebase import load_rulebase
    from .paths import with_paths

    rules, knowledge, _ = with_paths(args)
    rb = load_rulebase(rules, knowledge)
    cases = [c for c in load_cases(rb) if _selected(c.id, args.select)]
    outcomes, cov = run_all(rb, cases)
    if args.select:  # coverage over the rules the selection ran
        chosen = {c.rule for c in cases}
        written = {a for a, ids in rb.writers.items() if chosen.intersection(ids)}
        cov = replace(cov, all_rules=chosen, written_attrs=written)
    for folder in args.workloads or []:
        wanted = [c for c in workload_cases(Path(folder)) if _selected(c.id, args.select)]
        if wanted:
            with Recommender(rulebase=rb) as rec:
                outcomes += [run_workload_case(rec, c) for c in wanted]
    if args.select and not outcomes:
        write_output(f"no case id contains {' or '.join(repr(s) for s in args.select)}\n", None)
        return ExitCode.FINDINGS
    failed = [o for o in outcomes if not o.passed]
    lines = [f"FAIL {o.case.id}\n{o.message}" for o in failed]
    status = ExitCode.OK if not failed else ExitCode.FINDINGS
    if args.coverage:
        lines.append(f"rule coverage: {cov.percent:.1f}% of {len(cov.all_rules)} rules both fired and stayed silent")
        for title, items in (
            ("never fired", cov.never_fired),
            ("never stayed silent", cov.never_silent),
            ("attributes no case checks", cov.unchecked_attrs),
        ):
            lines.append(f"  {title}: {', '.join(items) if items else 'none'}")
        if args.min_coverage is not None and cov.percent < args.min_coverage:
            lines.append(f"coverage {cov.percent:.1f}% is below --min-coverage {args.min_coverage:g}%")
            status = ExitCode.FINDINGS
    lines.append(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed")
    write_output("\n".join(lines) + "\n", None)
    return status
