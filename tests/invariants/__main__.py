"""``python -m tests.invariants``: run the invariant sweep from the repository root and print what it found.

    python -m tests.invariants                                  # the covering tier, every core
    python -m tests.invariants --tier full --backend python     # the full product (CI's slow tier)
    python -m tests.invariants --only "model=deepseek-v3,qwen3-30b-a3b task=serve-vllm" --examples 2
    python -m tests.invariants --only "card=h100-pcie-80gb" --invariant none-fits-confirmed

--only keeps the cases whose dimensions take the values named (model, task, precision, scenario,
market, gpu: a card family or auto, card: a pinned card id); GPUSIZER_SWEEP does the same for pytest.
Exit status 1 when an invariant fails.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import runner, space


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.invariants", description=__doc__.split("\n\n")[0])
    ap.add_argument("--tier", choices=sorted(space.TIERS), default="pairs")
    ap.add_argument("--only", default=None, help="DIMENSION=VALUE[,VALUE] ... (default: $GPUSIZER_SWEEP)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: the usable cores)")
    ap.add_argument("--backend", default=None, help="durable or python (default: $GPUSIZER_BACKEND, else durable)")
    ap.add_argument("--compare", action="store_true", help="also run every case on the python backend and compare")
    ap.add_argument("--invariant", action="append", help="show the failures of these invariants only")
    ap.add_argument("--examples", type=int, default=1, help="workloads shown per group of failures")
    ap.add_argument("--ids", metavar="FILE", help="run only the cases whose ids FILE lists, one a line")
    ap.add_argument("--list", action="store_true", help="print the selected case ids and stop")
    ap.add_argument("--dump", metavar="FILE", help="write every failure as a JSON line (case, invariant, key, message)")
    args = ap.parse_args(argv)
    only = space.parse_only(args.only) if args.only is not None else space.only_from_env()
    if args.ids:
        with open(args.ids, encoding="utf-8") as f:
            only["id"] = {line.strip() for line in f if line.strip()}
    if args.list:
        for c in space.select(space.TIERS[args.tier](), only):
            print(c.id)
        return 0

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\r{done:,}/{total:,}", end="", file=sys.stderr, flush=True)

    report = runner.run(args.tier, only, args.jobs, args.backend, args.compare, progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(report.counts())
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as out:
            for name in report.invariants():
                for case, f in report.failures(name):
                    row = {"case": case.id, **case.dims(), "card": case.card, "invariant": name, "key": f.key}
                    out.write(json.dumps({**row, "message": f.message}) + "\n")
    status = 0
    for name in report.invariants():
        text = report.explain(name, args.examples)
        if text:
            status = 1
            if not args.invariant or name in args.invariant:
                print("\n" + text)
    return status


if __name__ == "__main__":
    sys.exit(main())
