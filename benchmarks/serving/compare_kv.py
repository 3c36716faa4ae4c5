"""Reference KV-capacity formulas checked against kv_points.yaml.

Two checks per point:

  layout  tokens from the *logged* available KV memory, with the per-token bytes
          and block/group layout vLLM uses. Tests the byte and layout formulas alone.
  budget  tokens from total memory x gpu_memory_utilization minus weights (as logged),
          the activation model below and the non-torch constant below. Tests the
          whole memory budget, which is what gpusizer has to predict.

Run:  python benchmarks/serving/compare_kv.py [--markdown]
Needs only PyYAML. It does not import gpusizer: it is the yardstick the engine's
serving rules are compared with (see README.md and ENGINES.md for the sources).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import yaml

GIB = 1 << 30
HERE = Path(__file__).resolve().parent

# Bytes per KV element. vLLM: STR_DTYPE_TO_TORCH_DTYPE maps "fp8" to uint8 (1 byte);
# "auto" follows the model dtype.
DTYPE_BYTES = {"auto": None, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "bfloat16": 2, "float16": 2, "float32": 4}

# Activation peak of vLLM V1's profiling run (ENGINES.md, "Activation peak").
# The dummy forward pass runs max_num_batched_tokens tokens split over
# min(max_num_seqs, max_num_batched_tokens) requests, then the sampler runs on one
# fp32 logits row per request. The peak is whichever is larger:
#   forward: K_FWD bytes per (token x intermediate_size / TP)
#   sampler: K_SMP x (requests x vocab x 4 bytes)
# K_FWD is fitted on the two V0 RTX 3090 points (chunked prefill off, forward-bound);
# K_SMP is the median over the vLLM 0.19.0 H100 points. Both are printed by --fit.
K_FWD = 7.7
K_SMP = 3.9
# Non-torch memory that appears during profiling (NCCL and custom all-reduce
# buffers, attention workspaces). vLLM 0.19.0 H100 logs: 0.24-0.27 GiB at TP=1,
# 2.06-2.21 GiB at TP>1.
NON_TORCH_GIB = {1: 0.25, "tp": 2.1}


def kv_bytes_per_token_per_layer(p: dict) -> int:
    """Bytes one token takes in one layer on one TP rank."""
    a = p["architecture"]
    dtype = p.get("kv_cache_dtype") or "auto"
    nbytes = DTYPE_BYTES.get(dtype) or DTYPE_BYTES[p.get("dtype", "bfloat16")]
    if a.get("mla"):
        # MLA caches one latent vector per token, not split by TP:
        # kv_lora_rank + qk_rope_head_dim elements (vLLM MLAAttentionSpec, no factor 2).
        return (a["kv_lora_rank"] + a["qk_rope_head_dim"]) * nbytes
    tp = p.get("tensor_parallel_size", 1)
    kv_heads = max(1, a["kv_heads"] // tp)  # replicated when kv_heads < TP
    return 2 * kv_heads * a["head_dim"] * nbytes


def tokens_from_available(p: dict, available_bytes: float) -> int:
    """GPU KV cache size (tokens) as vLLM V1 logs it for this much KV memory."""
    a = p["architecture"]
    block = p.get("block_size") or 16
    page = kv_bytes_per_token_per_layer(p) * block
    group_size = a.get("group_size", a["layers"])
    num_groups = a.get("num_groups", 1)
    num_blocks = int(available_bytes // page // group_size)
    return num_blocks // num_groups * block


def activation_peak_gib(p: dict) -> float:
    a = p["architecture"]
    tp = p.get("tensor_parallel_size", 1)
    mnbt = p.get("max_num_batched_tokens") or 2048
    mns = p.get("max_num_seqs") or 256
    forward = K_FWD * mnbt * a.get("intermediate", 0) / tp
    sampler = K_SMP * min(mns, mnbt) * a.get("vocab", 0) * 4
    return max(forward, sampler) / GIB


def non_torch_gib(p: dict) -> float:
    return NON_TORCH_GIB[1] if p.get("tensor_parallel_size", 1) == 1 else NON_TORCH_GIB["tp"]


def budget_available_gib(p: dict) -> float | None:
    log = p["log"]
    total = p.get("gpu_total_memory_gib")
    weights = log.get("model_weights_gib")
    if weights is None and p["architecture"].get("params"):
        # No load line: parameters x weight bytes / TP (what vLLM loads for a dense bf16 model).
        weights = (
            p["architecture"]["params"]
            * DTYPE_BYTES[p.get("dtype", "bfloat16")]
            / p.get("tensor_parallel_size", 1)
            / GIB
        )
    if total is None or weights is None or p.get("gpu_memory_utilization") is None:
        return None
    requested = math.ceil(total * p["gpu_memory_utilization"] * GIB) / GIB
    return requested - weights - activation_peak_gib(p) - non_torch_gib(p)


def err(pred: float | None, real: float | None) -> float | None:
    if pred is None or not real:
        return None
    return 100.0 * (pred - real) / real


def rows(points: list[dict]) -> list[dict]:
    out = []
    for p in points:
        if p.get("engine") != "vllm":
            continue
        log = p["log"]
        real = log.get("gpu_kv_cache_tokens")
        avail = log.get("available_kv_cache_gib")
        layout = tokens_from_available(p, avail * GIB) if avail is not None else None
        bud = budget_available_gib(p)
        budget = tokens_from_available(p, bud * GIB) if bud is not None else None
        act_real = log.get("torch_peak_increase_gib")
        out.append(
            {
                "id": p["id"],
                "gpu": p.get("gpu"),
                "tp": p.get("tensor_parallel_size"),
                "kv": p.get("kv_cache_dtype"),
                "real": real,
                "layout": layout,
                "layout_err": err(layout, real),
                "budget": budget,
                "budget_err": err(budget, real),
                "avail_real": avail,
                "avail_pred": bud,
                "act_real": act_real,
                "act_pred": activation_peak_gib(p),
            }
        )
    return out


def fit(points: list[dict]) -> None:
    smp, fwd = [], []
    for p in points:
        log, a = p["log"], p.get("architecture", {})
        peak = log.get("torch_peak_increase_gib")
        if peak is None or "vocab" not in a:
            continue
        mnbt = p.get("max_num_batched_tokens") or 2048
        mns = p.get("max_num_seqs") or 256
        if p.get("vllm_engine") == "V1":
            smp.append(peak * GIB / (min(mns, mnbt) * a["vocab"] * 4))
        elif "intermediate" in a and mnbt >= 8192:
            fwd.append(peak * GIB * p.get("tensor_parallel_size", 1) / (mnbt * a["intermediate"]))
    if smp:
        print(
            f"K_SMP over {len(smp)} V1 points: median {statistics.median(smp):.2f}, "
            f"min {min(smp):.2f}, max {max(smp):.2f}"
        )
    if fwd:
        print(f"K_FWD over {len(fwd)} V0 points: {', '.join(f'{x:.2f}' for x in fwd)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", default=str(HERE / "kv_points.yaml"))
    ap.add_argument("--fit", action="store_true", help="print the fitted activation coefficients")
    args = ap.parse_args(argv)
    points = yaml.safe_load(Path(args.points).read_text())
    if args.fit:
        fit(points)
        return 0
    rs = rows(points)
    fmt = lambda v, spec: "-" if v is None else format(v, spec)
    print(
        "| point | TP | kv | logged tokens | layout tokens | err % | budget tokens | err % "
        "| avail logged GiB | avail budget GiB | act logged | act model |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        print(
            f"| {r['id']} | {r['tp']} | {r['kv']} | {fmt(r['real'], ',')} | {fmt(r['layout'], ',')} "
            f"| {fmt(r['layout_err'], '+.1f')} | {fmt(r['budget'], ',')} | {fmt(r['budget_err'], '+.1f')} "
            f"| {fmt(r['avail_real'], '.2f')} | {fmt(r['avail_pred'], '.2f')} "
            f"| {fmt(r['act_real'], '.2f')} | {fmt(r['act_pred'], '.2f')} |"
        )
    for key in ("layout_err", "budget_err"):
        es = [abs(r[key]) for r in rs if r[key] is not None]
        if es:
            within = sum(e <= 10 for e in es)
            print(
                f"\n{key}: {len(es)} points, median |err| {statistics.median(es):.2f} %, "
                f"max {max(es):.1f} %, within 10 %: {within}/{len(es)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
