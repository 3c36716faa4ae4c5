"""Compare the measured peaks in results.json with gpusizer's predictions.

    python3 benchmarks/accuracy/compare.py [--results PATH] [--peers PATH] [--python PYTHON] [--json OUT]

This script itself needs no torch and no gpusizer: it builds one gpusizer workload dict per
measured case and runs gpusizer in the PROJECT's virtual environment (a subprocess of
``--python``, default ``<repo>/.venv/bin/python``), which answers with the memory conclusions.

predicted bytes = (memory.vram_required_gb - memory.overhead_gb) * 1e9   (gpusizer's GB is 10^9)
error % = (predicted - measured) / measured * 100

Beside gpusizer it prints what accelerate's estimate-memory and llm-analysis say for the same cases
(peers.json, written by peers.py in their own environments).

The measurement counts live tensor bytes only: no CUDA context, no cuBLAS / attention workspaces,
no caching-allocator slack. gpusizer's overhead_gb is meant to hold exactly those, so it is
subtracted before comparing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Runs inside the project's venv: read workloads (JSON list) on stdin, write answers on stdout.
_CHILD = r"""
import json, sys, traceback
from engine import Recommender
rec = Recommender()
out = []
for w in json.load(sys.stdin):
    try:
        r = rec.recommend(w)
        keys = ["memory.vram_required_gb", "memory.overhead_gb", "memory.weights_gb",
                "memory.gradients_gb", "memory.optimizer_gb", "memory.activations_gb",
                "memory.kv_cache_gb", "memory.working_set_gb"]
        ans = {}
        for k in keys:
            try:
                ans[k] = r[k]
            except Exception:
                ans[k] = None
        out.append({"name": w["name"], "memory": ans})
    except BaseException as e:
        out.append({"name": w["name"], "error": f"{type(e).__name__}: {e}"[:300]})
json.dump(out, sys.stdout)
"""


# families.py's model types -> gpusizer's MLP kinds (gemma's gated tanh-GELU is closest to swiglu)
FAMILY_MLP = {"gpt_neox": "gelu", "falcon": "gelu", "opt": "relu", "gpt2": "gelu-tanh", "bert": "gelu"}


def _family_model(m: dict) -> dict:
    """A results-families.json architecture record with the keys results.json's records have."""
    m = dict(m)
    m.setdefault("mlp", FAMILY_MLP.get(m["family"], "swiglu"))
    experts = m.get("num_experts") or m.get("num_local_experts") or m.get("n_routed_experts")
    if experts:
        m.setdefault("experts", experts)
        m.setdefault("experts_per_token", m.get("num_experts_per_tok"))
        if m.get("moe_intermediate_size"):
            m["intermediate_size"] = m["moe_intermediate_size"]
    return m


def workload(case: dict) -> dict:
    """The gpusizer workload dict for one results.json (or results-families.json) case."""
    inp, m = case["inputs"], case["model"]
    if "mlp" not in m:
        m = _family_model(m)
    prec = inp["precision"]
    w = {
        "name": case["name"],
        "task": inp["task"],
        "model": {
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
        },
        # Training: fp32 | bf16 pure | mixed = bf16 compute with fp32 master weights (autocast),
        # which gpusizer spells precision bf16 + mixed_precision true.
        # Inference "mixed" = fp32 weights run under autocast: the weights are stored in fp32, so
        # precision fp32 (gpusizer's mixed_precision only concerns training).
        "precision": "fp32" if prec == "fp32" or (prec == "mixed" and inp["task"] == "inference") else "bf16",
        "mixed_precision": prec == "mixed",
        "batch_size": inp["batch"],
        "sequence_length": inp["seq"] + inp.get("decode_steps", 0),
        "gradient_checkpointing": bool(inp["gradient_checkpointing"]),
        "attention": "eager"
        if (inp.get("attention") == "eager" or m.get("attn_implementation") == "eager")
        else "fused",
    }
    if inp.get("lora"):
        w["task"] = "fine-tuning"
        w["fine_tuning"] = {"method": "lora", "rank": inp["lora"]["r"]}
    for key in ("experts", "experts_per_token", "sliding_window"):
        if m.get(key):
            w["model"][key] = m[key]
    if inp["task"] == "training":
        w["optimizer"] = "adamw"
    if inp["task"] != "training":
        w.pop("gradient_checkpointing")  # a training key: gpusizer refuses it for inference
    return w


def predict(workloads: list[dict], python: str) -> list[dict]:
    p = subprocess.run([python, "-c", _CHILD], input=json.dumps(workloads), capture_output=True, text=True, cwd=REPO)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit(f"gpusizer subprocess failed ({p.returncode})")
    return json.loads(p.stdout)


def _stats(errs: list[float]) -> str:
    if not errs:
        return "no cases"
    a = sorted(abs(e) for e in errs)
    return (
        f"{len(a)} cases: mean |error| {sum(a) / len(a):.1f}%, median {a[len(a) // 2]:.1f}%, "
        f"worst {a[-1]:.1f}%, within 10%: {sum(1 for e in a if e <= 10)}/{len(a)}"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--peers", default=os.path.join(HERE, "peers.json"))
    ap.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--json", default=None, help="also write the comparison here")
    ap.add_argument(
        "--families", action="store_true", help="compare results-families.json with peers-families.json instead"
    )
    args = ap.parse_args()
    if args.families:
        args.results = os.path.join(HERE, "results-families.json")
        args.peers = os.path.join(HERE, "peers-families.json")

    doc = json.load(open(args.results))
    cases = [c for c in doc["cases"] if "error" not in c]
    preds = {p["name"]: p for p in predict([workload(c) for c in cases], args.python)}
    peers = json.load(open(args.peers)) if os.path.exists(args.peers) else {}
    names = sorted(peers)

    rows = []
    head = f"{'case':40s} {'phase':>9s} {'measured':>9s} {'gpusizer':>9s} {'err %':>7s}"
    for n in names:
        head += f" {n[:12]:>12s} {'err %':>7s}"
    print("GiB (2^30 bytes) of live tensors at the peak; err % = (predicted - measured) / measured")
    print(head)
    print("-" * len(head))
    errors = {"gpusizer": []}
    errors.update({n: [] for n in names})
    common = {"gpusizer": []}
    common.update({n: [] for n in names})
    for c in cases:
        p = preds.get(c["name"], {})
        meas = c["peak_bytes"]
        row = dict(name=c["name"], measured_bytes=meas, peak_phase=c["peak_phase"])
        mem = p.get("memory") or {}
        vr, oh = mem.get("memory.vram_required_gb"), mem.get("memory.overhead_gb")
        line = f"{c['name']:40s} {c['peak_phase']:>9s} {meas / 2**30:9.2f}"
        if p.get("error") or vr is None:
            row["error"] = p.get("error") or "no memory.vram_required_gb"
            line += f" {'-':>9s} {'-':>7s}"
        else:
            pred = (vr - (oh or 0.0)) * 1e9
            err = 100.0 * (pred - meas) / meas
            row.update(predicted_bytes=pred, error_pct=err, gpusizer=mem)
            errors["gpusizer"].append(err)
            line += f" {pred / 2**30:9.2f} {err:+7.1f}"
        everyone = "error_pct" in row and all(c["name"] in peers[n]["figures"] for n in names)
        if everyone:
            common["gpusizer"].append(row["error_pct"])
        for n in names:
            v = peers[n]["figures"].get(c["name"])
            if v is None:
                line += f" {'n/a':>12s} {'':>7s}"
                continue
            e = 100.0 * (v - meas) / meas
            row[n] = dict(predicted_bytes=v, error_pct=e)
            errors[n].append(e)
            if everyone:
                common[n].append(e)
            line += f" {v / 2**30:12.2f} {e:+7.1f}"
        print(line)
        rows.append(row)
    print()
    print("All cases each tool answers:")
    for n, errs in errors.items():
        version = f" {peers[n]['version']}" if n in peers else ""
        print(f"  {n + version:22s} {_stats(errs)}")
    if names:
        print("Cases every tool answers (the fair comparison):")
        for n, errs in common.items():
            print(f"  {n:22s} {_stats(errs)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
