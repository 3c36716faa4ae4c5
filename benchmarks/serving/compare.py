"""gpusizer's serving rules against what real engines report: KV capacity and speed, one table.

For every start-up point of kv_points.yaml whose GPU is in gpusizer's catalog, a workload is built
from the point (the model's shape, its precision, the engine settings the log shows, the GPU and
tensor-parallel size pinned with ``gpu: {model, count}``) and run through ``gpusizer recommend``;
the plan gpusizer computes for the point's tensor-parallel size gives the KV tokens of one replica,
which are set against the logged "GPU KV cache size". For every throughput point of
throughput_points.yaml the same is done with the request mix the benchmark ran, and gpusizer's
time per output token, time to first token and output throughput are set against the measured ones.

Targets (benchmarks/serving/README.md): KV capacity within 10%, throughput within 25%.

Run:  python benchmarks/serving/compare.py [--out benchmarks/serving/comparison.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from engine.api import Recommender  # noqa: E402

GIB = 1 << 30
KV_TARGET = 10.0
SPEED_TARGET = 25.0

# GPU names as the logs print them -> gpusizer catalog ids
GPUS = {
    "NVIDIA H100 80GB HBM3": "h100-sxm-80gb",
    "NVIDIA GeForce RTX 4090": "rtx-4090-24gb",
    "NVIDIA GeForce RTX 3090": "rtx-3090-24gb",
    "H100-80GB-SXM": "h100-sxm-80gb",
    "A100-80GB-SXM": "a100-sxm-80gb",
    "A100-80GB-SXM (NVLink)": "a100-sxm-80gb",
    "NVIDIA GeForce RTX 4090 (PCIe, 1008 GB/s)": "rtx-4090-24gb",
    "NVIDIA B200": "b200-180gb",
}

# What config.json gives beyond kv_points.yaml's architecture: hidden size, attention heads, and the
# mixture of experts. "catalog" names gpusizer's models.yaml entry whose parameter count is used;
# without one, the parameters are the logged weight size over the bytes per weight (marked "log").
# "outside" says why gpusizer's model does not describe the point's KV layout. head_dim and the
# latent-attention widths come from kv_points.yaml's architecture.
MODELS: dict[str, dict[str, Any]] = {
    "meta-llama/Llama-3.1-8B-Instruct": {"hidden": 4096, "heads": 32, "catalog": "llama-3-8b"},
    "meta-llama/Llama-3.1-8B": {"hidden": 4096, "heads": 32, "catalog": "llama-3-8b"},
    "meta-llama/Meta-Llama-3-8B": {"hidden": 4096, "heads": 32, "catalog": "llama-3-8b"},
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16": {"hidden": 4096, "heads": 32, "catalog": "llama-3-8b"},
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8": {"hidden": 4096, "heads": 32, "catalog": "llama-3-8b"},
    "Qwen/Qwen2.5-7B-Instruct": {"hidden": 3584, "heads": 28, "catalog": "qwen2.5-7b"},
    "RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic": {"hidden": 3584, "heads": 28, "catalog": "qwen2.5-7b"},
    "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8": {"hidden": 3584, "heads": 28, "catalog": "qwen2.5-7b"},
    "Qwen/Qwen2.5-72B-Instruct": {"hidden": 8192, "heads": 64, "catalog": "qwen2.5-72b"},
    "moonshotai/Kimi-Dev-72B": {"hidden": 8192, "heads": 64},
    "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic": {"hidden": 8192, "heads": 64, "catalog": "llama-3-70b"},
    "redhatai/Llama-3.3-70B-Instruct-quantized.w8a8": {"hidden": 8192, "heads": 64, "catalog": "llama-3-70b"},
    "mistralai/Mixtral-8x7B-Instruct-v0.1": {
        "hidden": 4096,
        "heads": 32,
        "catalog": "mixtral-8x7b",
        "experts": 8,
        "top_k": 2,
    },
    "codellama/CodeLlama-7b-hf": {"hidden": 4096, "heads": 32},
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B": {"hidden": 5120, "heads": 40},
    "ibm-granite/granite-3.1-2b-instruct": {"hidden": 2048, "heads": 32},
    "ibm-granite/granite-3.1-8b-instruct": {"hidden": 4096, "heads": 32},
    "ibm-granite/granite-3.3-8b-instruct": {"hidden": 4096, "heads": 32},
    "microsoft/phi-2": {"hidden": 2560, "heads": 32, "mlp": "gelu-tanh"},
    "microsoft/phi-4": {"hidden": 5120, "heads": 40},
    "Qwen/Qwen3-8B": {"hidden": 4096, "heads": 32},
    "Qwen/Qwen1.5-MoE-A2.7B": {"hidden": 2048, "heads": 16, "experts": 60, "top_k": 4, "shared": 5632},
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": {"hidden": 5120, "heads": 32},
    "RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8": {"hidden": 5120, "heads": 32},
    "Qwen/Qwen3-30B-A3B": {"hidden": 2048, "heads": 32, "experts": 128, "top_k": 8},
    "google/gemma-7b": {"hidden": 3072, "heads": 16, "mlp": "gelu"},
    "google/gemma-2-2b-it": {"hidden": 2304, "heads": 8, "mlp": "gelu", "outside": "sliding/full layer groups"},
    "google/gemma-2-9b-it": {"hidden": 3584, "heads": 16, "mlp": "gelu", "outside": "sliding/full layer groups"},
    "google/gemma-2-27b-it": {"hidden": 4608, "heads": 32, "mlp": "gelu", "outside": "sliding/full layer groups"},
    "google/gemma-3-4b-it": {"hidden": 2560, "heads": 8, "mlp": "gelu", "outside": "7 padded layer groups"},
    "google/gemma-3-12b-it": {"hidden": 3840, "heads": 16, "mlp": "gelu", "outside": "6 layer groups"},
    "google/gemma-3-27b-it": {"hidden": 5376, "heads": 32, "mlp": "gelu", "outside": "7 padded layer groups"},
    "openai/gpt-oss-20b": {
        "hidden": 2880,
        "heads": 64,
        "experts": 32,
        "top_k": 4,
        "outside": "sliding/full layer groups",
    },
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": {
        "hidden": 5120,
        "heads": 40,
        "experts": 16,
        "top_k": 1,
        "outside": "chunked-local/full layer groups (4)",
    },
    "deepseek-ai/DeepSeek-V2-Lite-Chat": {
        "hidden": 2048,
        "heads": 16,
        "kv_heads": 16,
        "intermediate": 1408,
        "experts": 64,
        "top_k": 6,
    },
    "mistralai/Mistral-7B-Instruct-v0.3": {"hidden": 4096, "heads": 32, "catalog": "mistral-7b"},
    "meta-llama/Meta-Llama-3-70B-Instruct": {"hidden": 8192, "heads": 64, "catalog": "llama-3-70b"},
    "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8": {"hidden": 8192, "heads": 64, "catalog": "llama-3-70b"},
    "meta-llama/Llama-2-70b-chat-hf": {"hidden": 8192, "heads": 64, "catalog": "llama-2-70b"},
}

BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1, "int8": 1, "int4": 0.5}


def precision_of(point: dict[str, Any]) -> str:
    """gpusizer's precision for the point's weights."""
    model = point["model"].lower()
    q = str(point.get("quantization") or "").lower()
    if "w4a16" in model or q == "gptq_marlin" or q == "mxfp4":
        return "int4"
    if "w8a8" in model:
        return "int8"
    if "fp8" in model or q == "fp8":
        return "fp8"
    return {"float16": "fp16", "float32": "fp32"}.get(point.get("dtype", "bfloat16"), "bf16")


def catalog_models() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load((ROOT / "knowledge" / "models.yaml").read_text())
    return {m["id"]: m for m in data["items"]}


def workload_for_kv(point: dict[str, Any], cat: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The gpusizer workload of one start-up point, and where its parameter count comes from."""
    a = point["architecture"]
    info = MODELS[point["model"]]
    precision = precision_of(point)
    tp = point.get("tensor_parallel_size") or 1
    if "catalog" in info:
        params, origin = cat[info["catalog"]]["params"], "catalog"
    else:
        params, origin = round(point["log"]["model_weights_gib"] * tp * GIB / BYTES[precision]), "log"
    model: dict[str, Any] = {
        "params": params,
        "layers": a["layers"],
        "hidden_size": info["hidden"],
        "attention_heads": info["heads"],
        "kv_heads": a.get("kv_heads", info.get("kv_heads")),
        "intermediate_size": info.get("intermediate", a["intermediate"]),
        "vocab_size": a["vocab"],
        "mlp": info.get("mlp", "swiglu"),
        "kind": "decoder",
    }
    if a.get("head_dim"):
        model["head_dim"] = a["head_dim"]
    for key in ("kv_lora_rank", "qk_rope_head_dim"):
        if a.get(key):
            model[key] = a[key]
    if info.get("experts"):
        model["experts"] = info["experts"]
        model["experts_per_token"] = info["top_k"]
    if info.get("shared"):
        model["shared_expert_intermediate_size"] = info["shared"]
    serving: dict[str, Any] = {
        "engine": "vllm",
        "concurrent_requests": 1,
        "prompt_tokens": 1,
        "output_tokens": 1,
        "kv_cache_dtype": "fp8" if point.get("kv_cache_dtype") == "fp8" else "auto",
        "gpu_memory_utilization": point["gpu_memory_utilization"],
        "block_size": point.get("block_size") or 16,
    }
    for key in ("max_num_batched_tokens", "max_num_seqs"):
        if point.get(key):
            serving[key] = point[key]
    workload = {
        "name": point["id"][:60],
        "task": "inference",
        "model": model,
        "precision": precision,
        "serving": serving,
        "gpu": {"model": GPUS[point["gpu"]], "count": tp},
    }
    return workload, origin


def plan_for(result: Any, tp: int) -> dict[str, Any] | None:
    """gpusizer's plan for this tensor-parallel size (every candidate is in the derivation)."""
    conclusion = result.conclusions.get("serving.plan")
    if conclusion is None:
        return None
    for c in conclusion.contributions:
        if c.value["tensor_parallel"] == tp:
            return dict(c.value)
    return None


def err(pred: float | None, real: float | None) -> float | None:
    if pred is None or not real:
        return None
    return 100.0 * (pred - real) / real


def kv_rows(rec: Recommender, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cat = catalog_models()
    rows = []
    for p in points:
        if p.get("engine") != "vllm":
            continue
        real = p["log"].get("gpu_kv_cache_tokens")
        gpu = GPUS.get(p.get("gpu") or "")
        row: dict[str, Any] = {
            "point": p["id"],
            "metric": "KV tokens",
            "gpu": gpu or p.get("gpu"),
            "tp": p.get("tensor_parallel_size"),
            "engine": real,
            "target": KV_TARGET,
        }
        info = MODELS.get(p["model"], {})
        if real is None or gpu is None or p.get("gpu_memory_utilization") is None or not info:
            row["note"] = "not compared: the log names no GPU, no utilization or no token count"
            rows.append(row)
            continue
        if "catalog" not in info and p["log"].get("model_weights_gib") is None:
            row["note"] = "not compared: no parameter count (catalog) or logged weight size"
            rows.append(row)
            continue
        workload, origin = workload_for_kv(p, cat)
        plan = plan_for(rec.recommend(workload), p.get("tensor_parallel_size") or 1)
        row["gpusizer"] = plan["kv_cache_tokens"] if plan else None
        row["error"] = err(row["gpusizer"], real)
        row["in_model"] = "outside" not in info
        row["note"] = ("weights: " + ("catalog parameters" if origin == "catalog" else "logged size")) + (
            f"; outside the model: {info['outside']}" if "outside" in info else ""
        )
        rows.append(row)
    return rows


def speed_rows(rec: Recommender, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Time per output token, time to first token and output throughput of the measured runs."""
    cat = catalog_models()
    rows = []
    for p in points:
        info = MODELS.get(p["model"])
        gpu = GPUS.get(p.get("gpu") or "")
        w = p.get("workload", {})
        m = p.get("metrics", {})
        base = {
            "point": p["id"],
            "gpu": gpu or p.get("gpu"),
            "tp": p.get("tensor_parallel_size"),
            "target": SPEED_TARGET,
        }
        n = w.get("num_prompts") or w.get("concurrency")
        if info is None or gpu is None or "catalog" not in info or not isinstance(n, int):
            rows.append(
                dict(base, metric="throughput", note="not compared: no request mix or no catalog model for the run")
            )
            continue
        mc = cat[info["catalog"]]
        precision = "fp8" if "fp8" in str(p.get("weight_dtype")) else "bf16"
        workload = {
            "name": p["id"][:60],
            "task": "inference",
            "model": {"name": info["catalog"]},
            "precision": precision,
            "serving": {
                "engine": "vllm",
                "concurrent_requests": n,
                "prompt_tokens": max(1, round(w["total_input_tokens"] / n)),
                "output_tokens": max(1, round(w["total_output_tokens"] / n)),
            },
            "gpu": {"model": gpu, "count": p.get("gpu_count") or 1},
        }
        plan = plan_for(rec.recommend(workload), p.get("tensor_parallel_size") or 1)
        assert mc and plan is not None, p["id"]
        tpot = 1000 / plan["output_tokens_per_s_per_request"]
        real_tpot = m.get("median_tpot_ms") or m.get("mean_tpot_ms")
        rows.append(
            dict(
                base,
                metric="TPOT ms",
                engine=real_tpot,
                gpusizer=round(tpot, 2),
                error=err(tpot, real_tpot),
                in_model=True,
                note=f"{n} prompts at once, {workload['serving']['prompt_tokens']} + "
                f"{workload['serving']['output_tokens']} tokens; vLLM {p.get('engine_version', '')[:40]}",
            )
        )
        if m.get("mean_ttft_ms"):
            ttft = 1000 * plan["ttft_s"]
            rows.append(
                dict(
                    base,
                    metric="TTFT ms",
                    engine=m["mean_ttft_ms"],
                    gpusizer=round(ttft, 1),
                    error=err(ttft, m["mean_ttft_ms"]),
                    in_model=True,
                    note="the burst is prefilled in one step with the other prompts, then one decode step",
                )
            )
    return rows


def fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| point | metric | GPU | TP | engine | gpusizer | error % | within | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e = r.get("error")
        within = "-" if e is None else ("yes" if abs(e) <= r["target"] else "no")
        engine = r.get("engine")
        gp = r.get("gpusizer")
        spec = ",.0f" if r["metric"] == "KV tokens" else ",.2f"
        out.append(
            f"| {r['point']} | {r['metric']} | {r.get('gpu') or '-'} | {r.get('tp') or '-'} "
            f"| {fmt(engine, spec)} | {fmt(gp, spec)} | {fmt(e, '+.1f')} | {within} | {r.get('note', '')} |"
        )
    return "\n".join(out)


def summary(rows: list[dict[str, Any]], metric: str, target: float, only_model: bool) -> str:
    es = [abs(r["error"]) for r in rows if r["metric"] == metric and r.get("error") is not None]
    if only_model:
        es = [abs(r["error"]) for r in rows if r["metric"] == metric and r.get("error") is not None and r["in_model"]]
    if not es:
        return f"{metric}: no points"
    within = sum(e <= target for e in es)
    scope = "points gpusizer's model describes" if only_model else "all points compared"
    return (
        f"{metric} ({scope}): {len(es)} points, median |error| {statistics.median(es):.2f} %, "
        f"mean {statistics.mean(es):.1f} %, max {max(es):.1f} %, within {target:g} %: {within} of {len(es)}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the Markdown report here as well")
    args = ap.parse_args(argv)
    kv_points = yaml.safe_load((HERE / "kv_points.yaml").read_text())
    speed_points = yaml.safe_load((HERE / "throughput_points.yaml").read_text())
    # the B200 has no indicative price in the catalog; a site price list lets it be pinned
    with Recommender(knowledge=[ROOT / "knowledge", HERE / "site-knowledge"]) as rec:
        rows = kv_rows(rec, kv_points) + speed_rows(rec, speed_points)
    lines = [
        "# gpusizer's serving rules against real engines",
        "",
        "Output of `python benchmarks/serving/compare.py` (see README.md). KV tokens: one replica's",
        'cache as vLLM logs it at start-up ("GPU KV cache size"), target within 10%. TPOT / TTFT:',
        "time per output token and to the first token of the measured runs, target within 25%.",
        "",
        table(rows),
        "",
    ]
    for metric, target in (("KV tokens", KV_TARGET), ("TPOT ms", SPEED_TARGET), ("TTFT ms", SPEED_TARGET)):
        lines.append("- " + summary(rows, metric, target, only_model=False))
        lines.append("- " + summary(rows, metric, target, only_model=True))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
