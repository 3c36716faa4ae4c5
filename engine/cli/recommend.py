"""``gpusizer recommend FILE...``: one report per workload; a bad file never costs the good ones."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ExitCode, GpusizerError
from . import internal_error, make_dir, open_output, recommender, rulebase_args, write_atomic
from .output import is_stream

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
    r.add_argument(
        "--key",
        metavar="FILE",
        help="sign the records with this key (default: $GPUSIZER_RECORD_KEY_FILE; make one with 'audit keygen')",
    )
    r.add_argument(
        "--summary", metavar="CSV", help="also write one table of every workload's headline conclusions (as sweep does)"
    )
    rulebase_args(r)


def _report_names(files: list[str], ext: str) -> list[str]:
    """One output file name per workload; workloads of the same file name (in different folders)
    get -2, -3, ... in the order given, so that no report overwrites another.
    """
    names: list[str] = []
    taken: set[str] = set()
    for f in files:
        stem = Path(f).stem or "workload"
        name, n = f"{stem}.{ext}", 1
        while name in taken:
            n += 1
            name = f"{stem}-{n}.{ext}"
        taken.add(name)
        names.append(name)
    return names


def _write_report(path: Path, text: str) -> ExitCode:
    """One report into the folder; one that cannot be written costs the others nothing."""
    try:
        write_atomic(path, text)
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode(exc.exit_code)
    return ExitCode.OK


def _summary(args: argparse.Namespace, rec: Any) -> ExitCode:
    """The table of every workload's headline conclusions; one that cannot be written costs no report."""
    from ..sweep.files import files_summary

    try:
        write_atomic(Path(args.summary), files_summary(rec, args.files))
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode(exc.exit_code)
    return ExitCode.OK


def run(args: argparse.Namespace) -> int:
    """Each report is written as its workload finishes, so memory stays flat over any number of files.

    The output is opened first, as the shell opens a redirection before the command runs: a place
    that cannot be written costs no work.
    """
    from ..report.render import render

    key = None
    if args.record:
        from ..explain.record import key_from

        key = key_from(args.key)
    several = len(args.files) > 1
    folder = Path(args.output) if args.output and several and not is_stream(args.output) else None
    names = _report_names(args.files, EXT[args.format]) if folder else []
    if folder is not None:
        make_dir(folder)
    sink = None if folder is not None else open_output(args.output)
    array = sink is not None and args.format == "json" and several
    status = ExitCode.OK
    written = 0
    try:
        rec = recommender(args)
        if array and sink is not None:
            sink.write("[\n")
        with rec:
            for i, name in enumerate(args.files):
                try:
                    result = rec.recommend(name)
                    text = render(result, args.format, layout=args.layout, full=args.full)
                except GpusizerError as exc:
                    status = max(status, ExitCode(exc.exit_code))
                    print(exc.render(), file=sys.stderr)
                    continue
                except Exception as exc:  # a bug must not cost the other workloads their reports
                    status = max(status, ExitCode.INTERNAL)
                    print(internal_error(exc, f"{name}: "), file=sys.stderr)
                    continue
                if args.record:
                    status = max(status, _record(result, Path(args.record), key))
                del result
                if folder is not None:
                    status = max(status, _write_report(folder / names[i], text))
                    continue
                assert sink is not None
                if array:
                    sink.write((",\n" if written else "") + text.rstrip("\n"))
                else:
                    sink.write(("\n" if written else "") + text)
                written += 1
            if args.summary:
                status = max(status, _summary(args, rec))
        if sink is not None:
            if array:
                sink.write("\n]\n")
            sink.commit()
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    return int(status)


def _record(result: Any, folder: Path, key: Any) -> ExitCode:
    """Write the decision record; a failure is reported, and the report is still delivered."""
    from ..explain.record import build, dumps, file_name

    try:
        rec = build(result, key)
        make_dir(folder)
        write_atomic(folder / file_name(rec), dumps(rec))
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode(exc.exit_code)
    return ExitCode.OK
