"""Compare the measured vision peaks (results-vision.json) with gpusizer's predictions (no torch needed).

    python3 benchmarks/accuracy/compare_vision.py [--json OUT] > benchmarks/accuracy/comparison-vision.txt

Every case becomes the workload a user would write: the model by its catalog name, the task, the precision
(fp32; amp-fp16 / amp-bf16 = fp16 / bf16 with mixed_precision true; fp16 / bf16 = mixed_precision false), the
optimizer, batch_size, image_size and image_width. predicted = (memory.vram_required_gb - memory.overhead_gb) x
1e9 bytes: the CUDA context and the allocator margin, which a CPU cannot measure, are left out as in compare.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)


def _accuracy_compare():
    """benchmarks/accuracy/compare.py under a name of its own (benchmarks/serving has a compare.py too)."""
    import importlib.util

    name = "accuracy_compare"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "compare.py"))
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


KEYS, stats = _accuracy_compare().KEYS, _accuracy_compare().stats


def workload(case: dict) -> dict:
    inp = case["inputs"]
    mode = inp["mode"]
    precision = "fp32" if mode == "fp32" else ("fp16" if mode.endswith("fp16") else "bf16")
    w = {
        "name": case["name"],
        "task": inp["task"],
        "model": {"name": inp["model"]},
        "precision": precision,
        "mixed_precision": mode.startswith("amp-"),
        "batch_size": inp["batch"],
        "image_size": inp["height"],
        "image_width": inp["width"],
    }
    if inp["task"] == "training":
        w["optimizer"] = inp["optimizer"]
    return w


def family(case: dict) -> str:
    m = case["inputs"]["model"]
    return "resnet" if m.startswith("resnet") else m.rsplit("-", 1)[0] if m.startswith("vit") else m


def answers(workloads: list[dict]) -> dict[str, dict]:
    from engine import Recommender

    out = {}
    with Recommender() as rec:
        for w in workloads:
            try:
                r = rec.recommend(w)
                out[w["name"]] = {k: r.get(k) for k in KEYS}
            except Exception as e:  # reported, not fatal
                out[w["name"]] = {"error": f"{type(e).__name__}: {e}"[:300]}
    return out


def rows(cases: list[dict], preds: dict[str, dict]) -> list[dict]:
    out = []
    for c in cases:
        p = preds.get(c["name"], {})
        row = dict(
            name=c["name"],
            family=family(c),
            held_out=c["inputs"]["held_out"],
            measured_bytes=c["peak_bytes"],
            peak_phase=c["peak_phase"],
        )
        vr, oh = p.get("memory.vram_required_gb"), p.get("memory.overhead_gb")
        if p.get("error") or vr is None:
            row["error"] = p.get("error") or "no memory.vram_required_gb"
        else:
            pred = (vr - (oh or 0.0)) * 1e9
            row.update(
                predicted_bytes=pred,
                error_pct=100.0 * (pred - c["peak_bytes"]) / c["peak_bytes"],
                predicted_phase=p.get("memory.peak_phase"),
            )
        out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default=os.path.join(HERE, "results-vision.json"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    cases = [c for c in json.load(open(args.results))["cases"] if "error" not in c]
    rs = rows(cases, answers([workload(c) for c in cases]))
    print("GiB (2^30 bytes) of live tensors at the peak; err % = (predicted - measured) / measured")
    print(f"{'case':58s} {'set':>9s} {'phase':>9s} {'measured':>9s} {'gpusizer':>9s} {'err %':>7s}")
    for r in rs:
        line = f"{r['name']:58s} {'held-out' if r['held_out'] else 'calib':>9s} {r['peak_phase']:>9s} "
        line += f"{r['measured_bytes'] / 2**30:9.3f} "
        if "error_pct" in r:
            line += f"{r['predicted_bytes'] / 2**30:9.3f} {r['error_pct']:+7.1f}"
        else:
            line += f"{'-':>9s} {'-':>7s}  {r['error']}"
        print(line)
    ok = [r for r in rs if "error_pct" in r]

    def text(sel):
        s = stats([r["error_pct"] for r in sel])
        if not s["cases"]:
            return "no cases"
        return (
            f"{s['cases']} cases: mean |error| {s['mean']:.1f}%, worst {s['worst']:.1f}%, "
            f"within 5%: {s['within_5']}/{s['cases']}, under by more than 5%: {s['under_5']}"
        )

    print()
    print(f"all            {text(ok)}")
    print(f"calibration    {text([r for r in ok if not r['held_out']])}")
    print(f"held out       {text([r for r in ok if r['held_out']])}")
    print("per family:")
    for fam in sorted({r["family"] for r in ok}):
        print(f"  {fam:26s} {text([r for r in ok if r['family'] == fam])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rs, f, indent=1)


if __name__ == "__main__":
    main()
