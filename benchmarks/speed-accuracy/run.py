"""Speed accuracy: gpusizer's training, serving and vision speed against published measurements.

    python benchmarks/speed-accuracy/run.py [--markdown] [--set tune|held-back]

Each point of points.yaml names a workload (workloads/<id>.yaml, written as a user would, the
GPUs pinned) and a measured figure with its source. For each point this prints gpusizer's figure,
the measured one and their ratio (gpusizer / measured for a speed; measured / gpusizer for GPU-hours
and latencies, so that above 1 always means gpusizer expects the run to go faster than it did), then per set the
median ratio and how many points lie within 1.25x and 1.5x. --markdown prints the README's table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))


def predict(rec, point: dict) -> float | None:
    """gpusizer's figure for the point's metric, or None where it gives none."""
    result = rec.recommend(HERE / "workloads" / f"{point['id']}.yaml")
    values = result.values
    metric = point["metric"]
    if metric == "train_tokens_per_s_per_gpu":
        tps, count = values.get("perf.train_tokens_per_s"), values.get("gpu.count")
        return tps / count if tps and count else None
    if metric == "gpu_hours":
        return values.get("perf.gpu_hours")
    if metric == "output_tokens_per_s":
        return values.get("perf.output_tokens_per_s")
    if metric == "ttft_ms":
        ttft = values.get("perf.ttft_s")
        return ttft * 1000 if ttft else None
    if metric == "train_images_per_s":
        return values.get("perf.train_images_per_s")
    if metric == "infer_images_per_s":
        return values.get("perf.infer_images_per_s")
    if metric == "itl_ms":
        plan = values.get("serving.plan") or {}
        return plan["step_s"] * 1000 if plan.get("step_s") else None
    raise ValueError(f"{point['id']}: unknown metric {metric}")


def ratio(point: dict, predicted: float | None) -> float | None:
    if not predicted:
        return None
    if point["metric"] in ("gpu_hours", "itl_ms", "ttft_ms"):
        return point["measured"] / predicted
    return predicted / point["measured"]


SERVING = ("output_tokens_per_s", "itl_ms", "ttft_ms")
VISION = ("train_images_per_s", "infer_images_per_s")
PARTS = [(s, k) for k in ("training", "serving", "vision") for s in ("tune", "held-back")]


def kind(point: dict) -> str:
    if point["metric"] in VISION:
        return "vision"
    return "serving" if point["metric"] in SERVING else "training"


def summary(rows: list[dict]) -> dict:
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    within = lambda f: sum(1 for x in ratios if 1 / f <= x <= f)
    return {
        "points": len(rows),
        "predicted": len(ratios),
        "median": statistics.median(ratios) if ratios else None,
        "within_1_25": within(1.25),
        "within_1_5": within(1.5),
        "worst": max(ratios, key=lambda x: max(x, 1 / x)) if ratios else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print the README's tables")
    ap.add_argument("--set", choices=["tune", "held-back"], help="only this part of the collection")
    args = ap.parse_args()
    from engine import Recommender

    points = yaml.safe_load((HERE / "points.yaml").read_text())["points"]
    if args.set:
        points = [p for p in points if p["set"] == args.set]
    rows = []
    with Recommender() as rec:
        for p in points:
            pred = predict(rec, p)
            rows.append({**p, "predicted": pred, "ratio": ratio(p, pred)})

    for part in PARTS:
        part_rows = [r for r in rows if (r["set"], kind(r)) == part]
        part = f"{part[0]}, {part[1]}"
        if not part_rows:
            continue
        s = summary(part_rows)
        if args.markdown:
            print(f"\n**{part}** ({s['points']} points)\n")
            print("| point | metric | measured | gpusizer | ratio |")
            print("|---|---|---:|---:|---:|")
            for r in part_rows:
                pred = f"{r['predicted']:,.0f}" if r["predicted"] else "none"
                rat = f"{r['ratio']:.2f}" if r["ratio"] else "-"
                print(f"| {r['id']} | {r['metric']} | {r['measured']:,} | {pred} | {rat} |")
            print(
                f"\nmedian {s['median']:.2f}; within 1.25x: {s['within_1_25']} of {s['points']}; "
                f"within 1.5x: {s['within_1_5']} of {s['points']}; worst {s['worst']:.2f}"
            )
        else:
            print(f"== {part}")
            for r in part_rows:
                pred = f"{r['predicted']:>12,.0f}" if r["predicted"] else "        none"
                rat = f"{r['ratio']:6.2f}" if r["ratio"] else "     -"
                print(f"  {r['id']:<46} {r['metric']:<27} {r['measured']:>10,} {pred} {rat}")
            print(
                f"  median {s['median']:.3f}   within 1.25x {s['within_1_25']}/{s['points']}   "
                f"within 1.5x {s['within_1_5']}/{s['points']}   worst {s['worst']:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
