"""``gpusizer new rule AREA/ID``: scaffold a rule and its test file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import ExitCode
from . import write_output


def add_parser(sub: Any, name: str) -> None:
    n = sub.add_parser(name, help="scaffold a rule and its test file")
    nsub = n.add_subparsers(dest="what", metavar="WHAT")
    nsub.required = True
    nr = nsub.add_parser("rule", help="gpusizer new rule AREA/ID")
    nr.add_argument("target", metavar="AREA/ID")
    nr.add_argument("--rules", metavar="DIR", help="rules directory to write into (default: the shipped rules)")


def run(args: argparse.Namespace) -> int:
    from ..authoring.scaffold import new_rule
    from ..load.resources import data_dir

    root = Path(args.rules) if args.rules else data_dir("rules")
    rule_path, test_path = new_rule(root, args.target)
    write_output(
        f"wrote {rule_path}\nwrote {test_path}\nnext: edit both, then run 'gpusizer validate' and 'gpusizer test'\n",
        None,
    )
    return ExitCode.OK
