"""The ``gpusizer`` command line."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .errors import GpusizerError, InputError

EXIT_OK, EXIT_INVALID, EXIT_INTERNAL = 0, 2, 70
EXT = {"text": "txt", "markdown": "md", "json": "json", "html": "html"}


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="gpusizer", description="Explained GPU server recommendations "
                                "for deep-learning workloads, from declarative rules.")
    p.add_argument("--version", action="version", version=f"gpusizer {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def rulebase_args(sp):
        sp.add_argument("--rules", action="append", metavar="DIR",
                        help="a rules directory laid over the shipped rules: adds rules, replaces "
                             "rules of the same id, disables rules listed in its _overlay.yaml (repeatable)")
        sp.add_argument("--knowledge", action="append", metavar="DIR",
                        help="a knowledge directory laid over the shipped one: adds catalogs, items "
                             "and values, e.g. a local price list (repeatable)")

    r = sub.add_parser("recommend", help="recommend a server for each workload file")
    r.add_argument("files", nargs="+", metavar="FILE", help="workload YAML file(s)")
    r.add_argument("--format", choices=["text", "markdown", "json", "html"], default="text")
    r.add_argument("--layout", choices=["auto", "dot", "python"], default="auto",
                   help="graph layout in HTML reports: Graphviz dot when installed (auto), or pure Python")
    r.add_argument("-o", "--output", metavar="OUT",
                   help="write to OUT (a directory when several files are given)")
    r.add_argument("--record", metavar="DIR", help="also write a JSON decision record per workload into DIR")
    rulebase_args(r)

    e = sub.add_parser("explain", help="show how one conclusion was derived")
    e.add_argument("file", metavar="FILE")
    e.add_argument("attribute", metavar="ATTRIBUTE", help="e.g. ram.system_gb")
    e.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    e.add_argument("--depth", type=int, metavar="N", help="stop N steps below the conclusion")
    rulebase_args(e)
    v = sub.add_parser("validate", help="check rules, knowledge and workloads: syntax, schema, meaning")
    v.add_argument("paths", nargs="*", metavar="PATH",
                   help="rules or knowledge directories, workload files (default: the shipped rulebase "
                        "and examples/)")
    v.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(v)

    t = sub.add_parser("test", help="run the rules' test cases (and workload cases)")
    t.add_argument("paths", nargs="*", metavar="PATH", help="rules or knowledge directories")
    t.add_argument("--coverage", action="store_true", help="report rules never fired or never silent")
    t.add_argument("--min-coverage", type=float, metavar="PCT", help="fail below this rule coverage")
    t.add_argument("--workloads", action="append", metavar="DIR",
                   help="a folder of workloads with expected conclusions in DIR/expected/ (repeatable)")
    rulebase_args(t)

    ru = sub.add_parser("rules", help="list the rules, or show one")
    rsub = ru.add_subparsers(dest="action", metavar="ACTION")
    rsub.required = True
    rl = rsub.add_parser("list", help="every rule, by area")
    rl.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    rulebase_args(rl)
    rs = rsub.add_parser("show", help="one rule: conditions, conclusions, source, tests, neighbours")
    rs.add_argument("id", metavar="ID")
    rs.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    rulebase_args(rs)

    n = sub.add_parser("new", help="scaffold a rule and its test file")
    nsub = n.add_subparsers(dest="what", metavar="WHAT")
    nsub.required = True
    nr = nsub.add_parser("rule", help="gpusizer new rule AREA/ID")
    nr.add_argument("target", metavar="AREA/ID")
    nr.add_argument("--rules", metavar="DIR", help="rules directory to write into (default: the shipped rules)")

    sc = sub.add_parser("schema", help="print a JSON Schema (for editors)")
    sc.add_argument("kind", choices=["rule", "rule-test", "attributes", "knowledge", "overlay", "workload"])

    gr = sub.add_parser("graph", help="write the derivation graph alone (DOT or SVG)")
    gr.add_argument("file", metavar="FILE")
    gr.add_argument("--format", choices=["dot", "svg"], default="svg")
    gr.add_argument("--layout", choices=["auto", "dot", "python"], default="auto")
    gr.add_argument("--attribute", action="append", metavar="ATTRIBUTE",
                    help="only what leads to these conclusions (repeatable; default: all)")
    gr.add_argument("-o", "--output", metavar="OUT")
    rulebase_args(gr)

    wn = sub.add_parser("why-not", help="why an attribute did not take a value")
    wn.add_argument("file", metavar="FILE")
    wn.add_argument("query", metavar="ATTRIBUTE=VALUE", help="e.g. ram.system_gb=64")
    wn.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(wn)

    wi = sub.add_parser("what-if", help="re-run with fields changed, sweep a field, or find the largest value that fits")
    wi.add_argument("file", metavar="FILE")
    wi.add_argument("--set", action="append", metavar="KEY=VALUE", help="change a workload field (repeatable)")
    wi.add_argument("--sweep", metavar="KEY=a,b,c", help="a table over several values of one field")
    wi.add_argument("--max", metavar="KEY", help="the largest integer value of KEY for which --while holds")
    wi.add_argument("--while", dest="while_", metavar="CONDITION",
                    help="an expression over conclusions, e.g. 'ram.system_gb <= 256'")
    wi.add_argument("--show", action="append", metavar="ATTRIBUTE", help="columns for --sweep and --max")
    wi.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(wi)

    au = sub.add_parser("audit", help="decision records")
    asub = au.add_subparsers(dest="action", metavar="ACTION")
    asub.required = True
    av = asub.add_parser("verify", help="re-run a decision record with today's rulebase; exit 0 same, "
                         "1 changed, 2 unreadable or tampered")
    av.add_argument("record", metavar="RECORD.json")
    av.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(av)

    df = sub.add_parser("diff", help="compare two rulebases over workloads")
    df.add_argument("files", nargs="+", metavar="FILE")
    df.add_argument("--rules-a", required=True, metavar="DIR")
    df.add_argument("--rules-b", required=True, metavar="DIR")
    df.add_argument("--format", choices=["text", "json"], default="text")
    df.add_argument("--knowledge", action="append", metavar="DIR")

    d = sub.add_parser("docs", help="generate the rule reference (docs/rules.md)")
    d.add_argument("-o", "--output", metavar="FILE")
    rulebase_args(d)
    return p


def _recommender(args):
    """The shipped rulebase, with each --rules / --knowledge directory laid over it in order."""
    from .api import Recommender
    from .authoring import dirs
    return Recommender(*dirs(args))


def _cmd_recommend(args) -> int:
    from .report import render

    rec = _recommender(args)
    outputs: list[tuple[str, str]] = []
    failed = 0
    for name in args.files:
        try:
            result = rec.recommend(name)
            outputs.append((name, render(result, args.format, layout=args.layout)))
            if args.record:
                from .record import write
                write(result, Path(args.record))
        except GpusizerError as exc:
            failed += 1
            print(exc.render(), file=sys.stderr)
    if args.output and len(args.files) > 1:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in outputs:
            (out / f"{Path(name).stem}.{EXT[args.format]}").write_text(text, encoding="utf-8")
    else:
        if args.format == "json" and len(args.files) > 1:
            text = "[\n" + ",\n".join(t.rstrip("\n") for _, t in outputs) + "\n]\n"
        else:
            text = "\n".join(t for _, t in outputs)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    return EXIT_INVALID if failed else EXIT_OK


def _cmd_explain(args) -> int:
    from .report import render_explain

    rec = _recommender(args)
    rec.rulebase.attribute(args.attribute)
    if args.depth is not None and args.depth < 0:
        raise InputError("--depth must be 0 or more", help="e.g. --depth 2")
    result = rec.recommend(args.file)
    sys.stdout.write(render_explain(result, args.attribute, args.format, args.depth))
    return EXIT_OK


def _cmd_why_not(args) -> int:
    import json

    from .whynot import parse_query, why_not

    rec = _recommender(args)
    attr, value = parse_query(rec.rulebase, args.query)
    answer = why_not(rec.recommend(args.file), attr, value)
    if args.format == "json":
        sys.stdout.write(json.dumps(answer, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        print(f"why not {attr}={value!r}? [{answer['kind']}]")
        print(f"  {answer['message']}")
        if answer.get("via"):
            print(f"  (followed {answer['via']})")
    return EXIT_OK


def _cmd_graph(args) -> int:
    from .drawing import subgraph, to_dot, to_svg

    rec = _recommender(args)
    for name in args.attribute or []:
        rec.rulebase.attribute(name, "--attribute: ")
    g = subgraph(rec.recommend(args.file), args.attribute)
    text = to_dot(g) if args.format == "dot" else to_svg(g, args.layout)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _cmd_what_if(args) -> int:
    from .whatif import cmd_what_if
    rec = _recommender(args)
    for name in args.show or []:
        rec.rulebase.attribute(name, "--show: ")
    return cmd_what_if(args, rec)


def _audit(name):
    def run(args):
        from . import audit
        return getattr(audit, name)(args)
    return run


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        from . import authoring as A
        commands = {"recommend": _cmd_recommend, "explain": _cmd_explain, "validate": A.cmd_validate,
                    "test": A.cmd_test, "rules": A.cmd_rules, "new": A.cmd_new, "schema": A.cmd_schema,
                    "docs": A.cmd_docs, "audit": _audit("cmd_verify"), "diff": _audit("cmd_diff"),
                    "why-not": _cmd_why_not, "what-if": _cmd_what_if,
                    "graph": _cmd_graph}
        return commands[args.command](args)
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - last resort: a bug, not bad input
        if os.environ.get("GPUSIZER_DEBUG"):
            raise
        print(f"gpusizer: internal error: {type(exc).__name__}: {exc}\n"
              "help: this is a bug in gpusizer; rerun with GPUSIZER_DEBUG=1 for a traceback "
              "and report it with the workload file", file=sys.stderr)
        return EXIT_INTERNAL
