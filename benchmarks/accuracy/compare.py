"""Compare the measured peaks with gpusizer's predictions, and with the peers'.

    python3 benchmarks/accuracy/compare.py [--families] [--results PATH] [--peers PATH] [--python PYTHON] [--json OUT]

This script needs no torch: it builds one gpusizer workload per measured case and runs gpusizer,
in-process when ``engine`` imports (the project's environment), else in a subprocess of ``--python``
(default ``<repo>/.venv/bin/python``).

* results.json cases (the first benchmark) are given to gpusizer as explicit numbers (params, layers,
  hidden_size, heads, kv_heads, intermediate_size, mlp, vocab_size, kind, experts), the way a user
  who copies them from a model card would.
* results-families.json cases are given as what a user holds: the model's config.json
  (``model: {config: PATH}``), written from families.py's published shapes, so that gpusizer reads
  the model type, the exact parameter count and every architecture key itself. LoRA cases add
  ``fine_tuning: {method: lora, rank, dropout}``.

predicted bytes = (memory.vram_required_gb - memory.overhead_gb) * 1e9   (gpusizer's GB is 10^9)
error % = (predicted - measured) / measured * 100

The measurement counts live tensor bytes only: no CUDA context, no cuBLAS / attention workspaces,
no caching-allocator slack. gpusizer's overhead_gb is meant to hold exactly those, so it is
subtracted before comparing. Beside gpusizer it prints what the peers say for the same cases
(peers.json / peers-families.json, written by peers.py in their own environments).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KEYS = [
    "memory.vram_required_gb",
    "memory.overhead_gb",
    "memory.weights_gb",
    "memory.gradients_gb",
    "memory.optimizer_gb",
    "memory.activations_gb",
    "memory.kv_cache_gb",
    "memory.working_set_gb",
    "memory.peak_phase",
    "model.params",
]

# Runs inside the project's venv: read workloads (JSON list) on stdin, write answers on stdout.
_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from compare import answers
json.dump(answers(json.load(sys.stdin)), sys.stdout)
"""


def answers(workloads: list[dict]) -> list[dict]:
    """gpusizer's memory conclusions for each workload (in this process)."""
    from engine import Recommender

    out = []
    with Recommender() as rec:
        for w in workloads:
            try:
                r = rec.recommend(w)
                out.append({"name": w["name"], "memory": {k: r.get(k) for k in KEYS}})
            except Exception as e:  # a case gpusizer refuses is reported, not fatal
                out.append({"name": w["name"], "error": f"{type(e).__name__}: {e}"[:300]})
    return out


def _precision(inp: dict) -> tuple[str, bool]:
    """fp32 | bf16 pure | mixed = bf16 compute with fp32 weights under autocast (fp32 master weights
    in training), which gpusizer spells precision bf16 + mixed_precision true."""
    prec = inp["precision"]
    if prec == "fp32":
        return "fp32", False
    return "bf16", prec == "mixed"


def _common(case: dict) -> dict:
    inp = case["inputs"]
    precision, mixed = _precision(inp)
    w = {
        "name": case["name"],
        "task": inp["task"],
        "precision": precision,
        "mixed_precision": mixed,
        "batch_size": inp["batch"],
        "sequence_length": inp["seq"] + inp.get("decode_steps", 0),
    }
    if inp["task"] == "training":
        w["optimizer"] = "adamw"
        w["gradient_checkpointing"] = bool(inp["gradient_checkpointing"])
    if inp.get("attention") == "eager":
        w["attention"] = "eager"
    return w


def workload(case: dict) -> dict:
    """The gpusizer workload of one results.json case: the architecture as explicit numbers."""
    m = case["model"]
    w = _common(case)
    w["model"] = {
        "params": m["params"],
        "layers": m["layers"],
        "hidden_size": m["hidden_size"],
        "attention_heads": m["attention_heads"],
        "kv_heads": m["kv_heads"],
        "intermediate_size": m["intermediate_size"],
        # GPT-2's activation is gelu_new, the tanh approximation written out in Python
        "mlp": "gelu-tanh" if m["family"] == "gpt2" else m["mlp"],
        "vocab_size": m["vocab_size"],
        "kind": m["kind"],
        "tied_embeddings": m["tied_embeddings"],
    }
    for key in ("experts", "experts_per_token", "sliding_window"):
        if m.get(key):
            w["model"][key] = m[key]
    return w


def family_workload(case: dict, configs: str) -> dict:
    """The gpusizer workload of one results-families.json case: its config.json, written from
    families.py into ``configs``, and the case's run settings."""
    from families import MODELS

    inp = case["inputs"]
    model_type, kwargs, _ = MODELS[inp["model"]]
    path = os.path.join(configs, f"{inp['model']}.json")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            json.dump(dict(model_type=model_type, **kwargs), fh, indent=1)
    w = _common(case)
    w["model"] = {"config": path}
    lora = inp.get("lora")
    if lora:
        w["task"] = "fine-tuning"
        w["fine_tuning"] = {"method": "lora", "rank": lora["r"], "dropout": lora.get("lora_dropout", 0.0)}
    return w


def workloads(cases: list[dict], families: bool, configs: str) -> list[dict]:
    return [family_workload(c, configs) if families else workload(c) for c in cases]


def predict(ws: list[dict], python: str) -> list[dict]:
    try:
        import engine  # noqa: F401
    except ImportError:
        p = subprocess.run([python, "-c", _CHILD, HERE], input=json.dumps(ws), capture_output=True, text=True, cwd=REPO)
        if p.returncode != 0:
            sys.stderr.write(p.stderr[-3000:])
            raise SystemExit(f"gpusizer subprocess failed ({p.returncode})") from None
        return json.loads(p.stdout)
    return answers(ws)


def errors(cases: list[dict], preds: dict[str, dict]) -> list[dict]:
    """One row per case: measured and predicted bytes, the error, or why there is no prediction."""
    rows = []
    for c in cases:
        p = preds.get(c["name"], {})
        row = dict(name=c["name"], measured_bytes=c["peak_bytes"], peak_phase=c["peak_phase"])
        mem = p.get("memory") or {}
        vr, oh = mem.get("memory.vram_required_gb"), mem.get("memory.overhead_gb")
        if p.get("error") or vr is None:
            row["error"] = p.get("error") or "no memory.vram_required_gb"
        else:
            pred = (vr - (oh or 0.0)) * 1e9
            row.update(
                predicted_bytes=pred,
                error_pct=100.0 * (pred - c["peak_bytes"]) / c["peak_bytes"],
                predicted_phase=mem.get("memory.peak_phase"),
                gpusizer=mem,
            )
        rows.append(row)
    return rows


def stats(errs: list[float]) -> dict:
    a = sorted(abs(e) for e in errs)
    if not a:
        return dict(cases=0)
    return dict(
        cases=len(a),
        mean=sum(a) / len(a),
        median=a[len(a) // 2],
        worst=a[-1],
        within_5=sum(1 for e in a if e <= 5),
        within_10=sum(1 for e in a if e <= 10),
        under_5=sum(1 for e in errs if e < -5),
    )


def _stats_text(errs: list[float]) -> str:
    s = stats(errs)
    if not s["cases"]:
        return "no cases"
    return (
        f"{s['cases']} cases: mean |error| {s['mean']:.1f}%, median {s['median']:.1f}%, worst {s['worst']:.1f}%, "
        f"within 5%: {s['within_5']}/{s['cases']}, within 10%: {s['within_10']}/{s['cases']}, "
        f"under by more than 5%: {s['under_5']}"
    )


def family_of(case: dict) -> str:
    return case["model"]["family"] + (" + LoRA" if case["inputs"].get("lora") else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default=None)
    ap.add_argument("--peers", default=None)
    ap.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--json", default=None, help="also write the comparison here")
    ap.add_argument(
        "--families", action="store_true", help="compare results-families.json with peers-families.json instead"
    )
    args = ap.parse_args()
    results = args.results or os.path.join(HERE, "results-families.json" if args.families else "results.json")
    peers_path = args.peers or os.path.join(HERE, "peers-families.json" if args.families else "peers.json")
    sys.path.insert(0, HERE)

    doc = json.load(open(results))
    cases = [c for c in doc["cases"] if "error" not in c]
    with tempfile.TemporaryDirectory() as configs:
        preds = {p["name"]: p for p in predict(workloads(cases, args.families, configs), args.python)}
    rows = errors(cases, preds)
    peers = json.load(open(peers_path)) if os.path.exists(peers_path) else {}
    names = sorted(peers)

    head = f"{'case':42s} {'phase':>9s} {'measured':>9s} {'gpusizer':>9s} {'err %':>7s}"
    for n in names:
        head += f" {n[:12]:>12s} {'err %':>7s}"
    print("GiB (2^30 bytes) of live tensors at the peak; err % = (predicted - measured) / measured")
    print(head)
    print("-" * len(head))
    errs = {"gpusizer": []}
    errs.update({n: [] for n in names})
    # each peer beside gpusizer on the cases that peer answers (a peer that covers one family is
    # compared on that family, not made to shrink everyone's common set)
    pairs: dict[str, list[float]] = {n: [] for n in names}
    by_family: dict[str, list[float]] = {}
    for c, row in zip(cases, rows, strict=True):
        line = f"{c['name']:42s} {c['peak_phase']:>9s} {c['peak_bytes'] / 2**30:9.2f}"
        if "error_pct" in row:
            errs["gpusizer"].append(row["error_pct"])
            by_family.setdefault(family_of(c), []).append(row["error_pct"])
            line += f" {row['predicted_bytes'] / 2**30:9.2f} {row['error_pct']:+7.1f}"
        else:
            line += f" {'-':>9s} {'-':>7s}"
        for n in names:
            v = peers[n]["figures"].get(c["name"])
            if v is None:
                line += f" {'n/a':>12s} {'':>7s}"
                continue
            e = 100.0 * (v - c["peak_bytes"]) / c["peak_bytes"]
            row[n] = dict(predicted_bytes=v, error_pct=e)
            errs[n].append(e)
            if "error_pct" in row:
                pairs[n].append(row["error_pct"])
            line += f" {v / 2**30:12.2f} {e:+7.1f}"
        print(line)
        if "error" in row:
            print(f"    gpusizer: {row['error']}")
    print()
    print("All cases each tool answers:")
    for n, e in errs.items():
        version = f" {peers[n]['version']}" if n in peers else ""
        print(f"  {n + version:22s} {_stats_text(e)}")
    if names:
        print("gpusizer on the same cases as each peer (the fair comparison):")
        for n, e in pairs.items():
            print(f"  {'beside ' + n:22s} {_stats_text(e)}")
    print("gpusizer per family:")
    for fam, e in sorted(by_family.items()):
        print(f"  {fam:22s} {_stats_text(e)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
