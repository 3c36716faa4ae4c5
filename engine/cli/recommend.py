"""``gpusizer recommend FILE...``: one report per workload; a bad file never costs the good ones."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ExitCode, GpusizerError
from . import recommender, rulebase_args, write_atomic, write_output

EXT = {"text": "txt", "markdown": "md", "json": "json", "html": "html"}


def add_parser(sub: Any, name: str) -> None:
    r = sub.add_parser(name, help="recommend a server for each workload file")
    r.add_argument("files", nargs="+", metavar="FILE", help="workload YAML file(s)")
    r.add_argument("--format", choices=["text", "markdown", "json", "html"], default="text")
    r.add_argument(
        "--layout",
        choices=["auto", "dot", "python"],
        default="auto",
        help="graph layout in HTML reports: Graphviz dot when installed (auto), or pure Python",
    )
    r.add_argument(
        "--full",
        action="store_true",
        help="text and Markdown: add every conclusion's derivation and the inputs to the one-screen report",
    )
    r.add_argument("-o", "--output", metavar="OUT", help="write to OUT (a directory when several files are given)")
    r.add_argument("--record", metavar="DIR", help="also write a JSON decision record per workload into DIR")
    rulebase_args(r)


def run(args: argparse.Namespace) -> int:
    from ..report.render import render

    rec = recommender(args)
    outputs: list[tuple[str, str]] = []
    status = ExitCode.OK
    with rec:
        for name in args.files:
            try:
                result = rec.recommend(name)
                outputs.append((name, render(result, args.format, layout=args.layout, full=args.full)))
            except GpusizerError as exc:
                status = max(status, ExitCode(exc.exit_code))
                print(exc.render(), file=sys.stderr)
                continue
            if args.record:
                from ..explain.record import write

                try:
                    write(result, Path(args.record))
                except GpusizerError as exc:  # the report is still delivered
                    status = max(status, ExitCode(exc.exit_code))
                    print(exc.render(), file=sys.stderr)
    try:
        if args.output and len(args.files) > 1:
            out = Path(args.output)
            out.mkdir(parents=True, exist_ok=True)
            for name, text in outputs:
                write_atomic(out / f"{Path(name).stem}.{EXT[args.format]}", text)
        else:
            if args.format == "json" and len(args.files) > 1:
                text = "[\n" + ",\n".join(t.rstrip("\n") for _, t in outputs) + "\n]\n"
            else:
                text = "\n".join(t for _, t in outputs)
            write_output(text, args.output)
    except OSError as exc:
        from ..errors import OutputError

        raise OutputError(
            f"cannot write the reports: {exc.strerror or exc}", file=str(args.output), help="name a writable directory"
        ) from None
    return int(status)
