"""``gpusizer what-if FILE``: change fields, sweep one, or find the largest value that still holds."""

from __future__ import annotations

import argparse
import copy
from typing import Any

import yaml

from ..errors import ExitCode, GpusizerError, InputError
from ..format import quantity
from ..report.render import WIDTH as TEXT_WIDTH
from . import dump_json, recommender, rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    wi = sub.add_parser(name, help="re-run with fields changed, sweep a field, or find the largest value that fits")
    wi.add_argument("file", metavar="FILE")
    wi.add_argument("--set", action="append", metavar="KEY=VALUE", help="change a workload field (repeatable)")
    wi.add_argument("--sweep", metavar="KEY=a,b,c", help="a table over several values of one field")
    wi.add_argument("--max", metavar="KEY", help="the largest integer value of KEY for which --while holds")
    wi.add_argument(
        "--while",
        dest="while_",
        metavar="CONDITION",
        help="an expression over conclusions, e.g. 'ram.system_gb <= 256'",
    )
    wi.add_argument("--show", action="append", metavar="ATTRIBUTE", help="columns for --sweep and --max")
    wi.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(wi)


def run(args: argparse.Namespace) -> int:
    with recommender(args) as rec:
        for name in args.show or []:
            rec.rulebase.attribute(name, "--show: ")
        if args.max:
            _whole_number_key(rec.rulebase, args.max)
        if args.while_:
            from ..explain import whatif as W

            for name in sorted(W.condition_names(args.while_)):
                rec.rulebase.attribute(name, "--while: ")
        return _run(args, rec)


def _whole_number_key(rb: Any, key: str) -> None:
    """--max searches over whole numbers: KEY must be a workload key that takes one."""
    path = tuple(key.split("."))
    node = rb.inputs.leaves.get(path)
    if node is None or (node.get("type") != "integer" and "integer" not in (node.get("type") or [])):
        from ..errors import hint

        keys = [".".join(p) for p, n in rb.inputs.leaves.items() if n.get("type") == "integer"]
        what = "not a key of the workload" if node is None else "a key that takes no whole number"
        raise InputError(
            f"--max {key}: {what}",
            help=f"{hint(key, keys)}--max searches over a whole-number key: {', '.join(sorted(keys)[:12])}, ...",
        )


def _run(args: argparse.Namespace, rec: Any) -> int:
    from ..explain import whatif as W

    base = rec.load(args.file)  # read once, under a workload's bounds, and validated
    data = copy.deepcopy(dict(base.data))
    for s in args.set or []:
        key, value = W.parse_assign(s, "--set")
        W.set_field(data, key, value)
    label = f"{args.file} (what-if)"
    show = args.show or W.default_columns(rec.rulebase)
    if args.max:
        return _largest(args, rec, data, label, show)
    if args.sweep:
        return _sweep(args, rec, data, label, show)
    return _changes(args, rec, base, data, label)


def _largest(args: argparse.Namespace, rec: Any, data: dict[str, Any], label: str, show: list[str]) -> int:
    from ..explain import whatif as W

    if not args.while_:
        raise InputError("--max needs --while CONDITION", help="e.g. --max batch_size --while 'ram.system_gb <= 256'")
    best, at, beyond = W.largest(rec, data, args.max, W.condition(args.while_), label)
    if best is None or at is None:
        write_output(f"no value of {args.max} satisfies: {args.while_} (not even 1)\n", None)
        return ExitCode.FINDINGS
    out = [f"largest {args.max} with {args.while_}: {best}"]
    for attr in show:
        line = f"  at {best}: {attr} = {quantity(at.get(attr), at.unit(attr))}"
        if beyond is not None:
            line += f";  at {best + 1}: {quantity(beyond.get(attr), beyond.unit(attr))}"
        out.append(line)
    for attr in show:
        if attr in at.conclusions:
            step = at.explain(attr)
            out.append(f"  {attr} is set by {step['rule']}: {step['binding'][0]['summary']}")
    from ..report.render import wrap

    write_output("\n".join(wrap(line, 4) for line in out) + "\n", None)
    return ExitCode.OK


def _sweep(args: argparse.Namespace, rec: Any, data: dict[str, Any], label: str, show: list[str]) -> int:
    from ..explain import whatif as W

    key, raw = W.parse_assign(args.sweep, "--sweep")
    options = [yaml.safe_load(v) for v in str(raw).split(",")] if not isinstance(raw, list) else raw
    rows = []
    for v in options:
        d = copy.deepcopy(data)
        W.set_field(d, key, v)
        try:
            r = W.recommend_variant(rec, d, label)
            rows.append([str(v)] + [quantity(r.get(a), r.unit(a)) for a in show])
        except GpusizerError as exc:
            rows.append([str(v), f"invalid: {exc.message}"] + [""] * (len(show) - 1))
    header = [key, *show]
    if args.format == "json":
        write_output(dump_json([dict(zip(header, r, strict=True)) for r in rows]), None)
        return ExitCode.OK
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    heads = [[h] for h in header]
    if sum(widths) + 2 * (len(widths) - 1) > TEXT_WIDTH:
        # too wide for a terminal: a name wider than its values folds after its last dot (area. / name_of_it)
        values = [max((len(str(r[n])) for r in rows), default=0) for n in range(len(header))]
        heads = [
            [h[: h.rfind(".") + 1], h[h.rfind(".") + 1 :]] if "." in h and len(h) > values[n] else [h]
            for n, h in enumerate(header)
        ]
        widths = [max([len(p) for p in head] + [values[n]]) for n, head in enumerate(heads)]
    depth = max(len(h) for h in heads)
    head_rows = [[h[k] if k < len(h) else "" for h in heads] for k in range(depth)]
    out = [
        "  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
        for row in [*head_rows, ["-" * w for w in widths], *rows]
    ]
    write_output("\n".join(out) + "\n", None)
    return ExitCode.OK


def _changes(args: argparse.Namespace, rec: Any, base: Any, data: dict[str, Any], label: str) -> int:
    from ..explain import whatif as W
    from ..explain.diff import change_lines, compare_results

    changes = compare_results(rec.recommend(base), W.recommend_variant(rec, data, label))
    if args.format == "json":
        write_output(dump_json([c.as_dict() for c in changes]), None)
        return ExitCode.OK
    from ..report.render import wrap

    out = [] if changes else ["no conclusion changes"]
    for ch in changes:
        out += [wrap(line, 4 if line.startswith("  ") else 2) for line in change_lines(ch)]
    write_output("\n".join(out) + "\n", None)
    return ExitCode.OK
