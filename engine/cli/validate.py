"""``gpusizer validate [PATH...]``: YAML, then schema, then meaning; exit 1 on errors, 2 if unreadable."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ExitCode, GpusizerError
from . import rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    v = sub.add_parser(name, help="check rules, knowledge and workloads: syntax, schema, meaning")
    v.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="rules or knowledge directories, workload files (default: the shipped rulebase and examples/)",
    )
    v.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(v)


def run(args: argparse.Namespace) -> int:
    from ..authoring.lint import lint, to_json
    from .paths import with_paths

    try:
        rules, knowledge, workloads = with_paths(args)
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode.INVALID
    if not args.paths:
        examples = Path("examples")
        workloads = sorted(examples.glob("*.yaml")) if examples.is_dir() else []
    findings, _ = lint(rules, knowledge, workloads)
    if args.format == "json":
        write_output(to_json(findings), None)
    else:
        lines = [f.render_finding() for f in findings]
        errors = sum(f.level == "error" for f in findings)
        lines.append(f"{errors} error(s), {len(findings) - errors} warning(s)")
        write_output("\n".join(lines) + "\n", None)
    if any(f.code == "unreadable" for f in findings):
        return ExitCode.INVALID
    return ExitCode.FINDINGS if any(f.level == "error" for f in findings) else ExitCode.OK
