"""Serving with an engine and training to a deadline: the goal sizes the GPUs, checked end to end."""

from __future__ import annotations

import copy
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine import Recommender

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import run_cli  # noqa: E402


@pytest.fixture(scope="module")
def rec() -> Any:
    with Recommender() as r:
        yield r


def example(name: str) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_32_user_qwen_example_is_sized_as_vllm_allocates_it(rec: Any) -> None:
    """32 users x 8k tokens of Qwen2.5-7B: about 31 GB (weights, cache, one step), not a 70 GB whole-batch prefill."""
    r = rec.recommend(example("serving-qwen2.5-7b-32-users"))
    assert r["memory.peak_phase"] == "serving"
    assert 30 <= r["memory.vram_required_gb"] <= 34
    assert r["memory.activations_gb"] < 1
    assert r["memory.kv_cache_gb"] == pytest.approx(32 * 8192 * 57344 / 1e9)
    assert r["gpu.count"] <= 2
    # the same load described as one static batch keeps the old sizing
    old = {"name": "batch", "task": "inference", "model": {"name": "qwen2.5-7b"}, "precision": "bf16"}
    old.update(batch_size=32, sequence_length=8192)
    b = rec.recommend(old)
    assert b["memory.peak_phase"] == "prefill"
    assert b["memory.activations_gb"] > 30


def test_kv_capacity_matches_the_logged_vllm_start_ups() -> None:
    """gpusizer's KV tokens against vLLM's own start-up figure, on the points its model describes."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "serving"))
    import compare

    points = yaml.safe_load((ROOT / "benchmarks" / "serving" / "kv_points.yaml").read_text())
    with Recommender(knowledge=[ROOT / "knowledge", ROOT / "benchmarks" / "serving" / "site-knowledge"]) as r:
        compared = [x for x in compare.kv_rows(r, points) if x.get("error") is not None]
    errors = [abs(x["error"]) for x in compared if x["in_model"]]
    assert len(errors) >= 50  # head_dim, latent attention and shared experts are in the model
    assert statistics.median(errors) < 1
    assert sum(e <= 10 for e in errors) >= len(errors) - 1
    # the points outside the model (vLLM's sliding-window layer groups) miss by at most one more
    every = [abs(x["error"]) for x in compared]
    assert len(every) >= 58 and sum(e <= 10 for e in every) >= len(every) - 2


def test_a_speed_target_adds_replicas_and_is_met(rec: Any) -> None:
    w = example("serving-llama3-70b-200-users")
    r = rec.recommend(w)
    assert r["serving.meets_targets"] is True
    assert r["perf.output_tokens_per_s_per_request"] >= 20
    assert r["perf.ttft_s"] <= 2
    assert r["gpu.count"] == r["serving.replicas"] * r["serving.tensor_parallel"]
    faster = copy.deepcopy(w)
    faster["serving"]["targets"]["output_tokens_per_s_per_request"] = 30
    f = rec.recommend(faster)
    assert f["perf.output_tokens_per_s_per_request"] >= 30
    assert f["gpu.selection"]["cost"] >= r["gpu.selection"]["cost"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tgi", "trtllm", "transformers"])
def test_every_engine_gets_a_plan(rec: Any, engine: str) -> None:
    w = example("serving-qwen2.5-7b-32-users")
    w["serving"]["engine"] = engine
    r = rec.recommend(w)
    assert r["serving.plan"]["engine"] == engine
    assert r["serving.fits"] is True
    assert r["serving.max_concurrency"] >= 1


def test_transformers_prefills_the_whole_batch(rec: Any) -> None:
    w = example("serving-qwen2.5-7b-32-users")
    w["serving"]["engine"] = "transformers"
    r = rec.recommend(w)
    # 32 prompts of 7,168 tokens at once, in the measured profile of Qwen2's family (llama's, 16 bits): 6 bytes per
    # MLP unit and 8 per hidden unit (knowledge/activations.yaml llama-half)
    assert r["memory.activations_gb"] == pytest.approx(32 * 7168 * (6 * 18944 + 8 * 3584) / 1e9)


def test_owned_gpus_say_what_is_missing(rec: Any) -> None:
    r = rec.recommend(example("serving-owned-2-l40s"))
    assert r["gpu.model"] == "l40s-48gb" and r["gpu.count"] == 2
    assert r["serving.meets_targets"] is False
    # 200 requests at 20 tokens/s: 4 L40S once the decode step reads the cache at the paged kernel's rate
    assert r["serving.gpus_needed"] == 4
    assert any("2 more" in w for w in r["warnings"])


def test_what_if_max_finds_the_users_owned_gpus_serve_at_a_speed(rec: Any) -> None:
    """what-if --max on a serving key: the largest concurrency at 20 tokens/s each, exact for the rules."""
    code, out, err = run_cli(
        [
            "what-if",
            "examples/serving-owned-2-l40s.yaml",
            "--max",
            "serving.concurrent_requests",
            "--while",
            "perf.output_tokens_per_s_per_request >= 20",
        ]
    )
    assert code == 0, err
    m = re.search(r"largest serving.concurrent_requests with .*: (\d+)", out)
    assert m, out
    n = int(m.group(1))
    assert 1 < n < 200
    w = example("serving-owned-2-l40s")
    w["serving"]["concurrent_requests"] = n
    assert rec.recommend(w)["perf.output_tokens_per_s_per_request"] >= 20
    w["serving"]["concurrent_requests"] = n + 1
    assert rec.recommend(w)["perf.output_tokens_per_s_per_request"] < 20


def test_a_pinned_model_is_the_card_used(rec: Any) -> None:
    w = example("serving-qwen2.5-7b-32-users")
    w["gpu"] = {"model": "a100-sxm-80gb"}
    r = rec.recommend(w)
    assert r["gpu.model"] == "a100-sxm-80gb"


def test_more_users_than_the_cache_holds_wait(rec: Any) -> None:
    w = example("serving-owned-2-l40s")
    del w["serving"]["targets"]
    w["serving"]["concurrent_requests"] = 1000
    r = rec.recommend(w)
    assert r["serving.plan"]["unserved"] > 0
    assert "wait for a slot" in r["serving.binding"]
    fewer = copy.deepcopy(w)
    fewer["serving"]["concurrent_requests"] = 100
    assert rec.recommend(fewer)["perf.ttft_s"] < r["perf.ttft_s"]


def test_a_model_no_card_holds_is_reported(rec: Any) -> None:
    w = example("serving-qwen2.5-7b-32-users")
    w["model"] = {"name": "llama-2-70b"}
    w["gpu"] = {"model": "rtx-4090-24gb", "count": 1}
    r = rec.recommend(w)
    assert r["serving.fits"] is False
    assert "gpu.model" not in r.conclusions
    # the card is owned (model and count): the warning speaks of it, not of the whole catalog
    owned = [x for x in r["warnings"] if x.startswith("The 1 x NVIDIA GeForce RTX 4090")]
    assert owned and "cannot serve this model" in owned[0]
    assert not any(x.startswith("No allowed") for x in r["warnings"])
    to_buy = dict(w, gpu={"model": "rtx-4090-24gb"})
    assert any(x.startswith("No allowed card serves this model") for x in rec.recommend(to_buy)["warnings"])


def test_an_fp8_cache_doubles_the_tokens(rec: Any) -> None:
    w = example("serving-owned-2-l40s")
    a = rec.recommend(w)["serving.kv_cache_tokens"]
    w["serving"]["kv_cache_dtype"] = "fp8"
    b = rec.recommend(w)["serving.kv_cache_tokens"]
    assert b == pytest.approx(2 * a, rel=1e-3)


def test_a_deadline_raises_the_gpu_count_from_compute(rec: Any) -> None:
    base = rec.recommend(example("cluster-llama2-70b-pretrain"))
    r = rec.recommend(example("cluster-llama2-70b-deadline"))
    # memory alone gives whole 8-GPU boards that would take years; compute for 90 days takes at least 3 times as many:
    # the model FLOPs over the 90% of 90 days the steps get (training_goodput) at the rate a GPU sustains, rounded up
    # to whole 8-GPU nodes
    assert base["perf.train_days"] > 1.5 * 365
    assert r["gpu.count"] >= 3 * base["gpu.count"]
    rate = r["perf.rate_tflops"] * 1e12
    goodput = yaml.safe_load((ROOT / "knowledge" / "constants.yaml").read_text(encoding="utf-8"))["constants"][
        "training_goodput"
    ]["value"]
    assert goodput == 0.9
    needed = r["perf.train_flops"] / (90 * 86400 * goodput * rate)
    assert r["gpu.count"] == 8 * math.ceil(math.ceil(needed) / 8)
    # here the steps' share of the 90 days costs a node: 72 GPUs would finish the steps alone in time
    assert 8 * math.ceil(math.ceil(needed * goodput) / 8) == r["gpu.count"] - 8
    assert r["perf.train_days"] <= 90
    assert r["gpu.per_node"] in (1, 2, 4, 8)
    tighter = example("cluster-llama2-70b-deadline")
    tighter["deadline_days"] = 30
    t = rec.recommend(tighter)
    assert t["gpu.count"] > r["gpu.count"] and t["perf.train_days"] <= 30


def test_a_pinned_card_that_cannot_leave_one_node_says_so_against_a_deadline(rec: Any) -> None:
    """90 days of Llama 2 70B pre-training on L40S: eight of them, a server's most, take years, and PCIe cards are not
    spread over nodes - the report says that, not that no card holds the memory."""
    w = example("cluster-llama2-70b-deadline")
    w["gpu"] = {"model": "l40s-48gb"}
    r = rec.recommend(w)
    assert "gpu.selection" not in r.values
    said = " ".join(r.values.get("warnings", []))
    assert "No configuration of l40s-48gb meets the deadline of 90 days" in said
    assert "No allowed catalog GPU holds" not in said
    assert r["perf.deadline_card_one_node"] > 90
    w["gpu"] = {"model": "h100-sxm-80gb"}
    assert rec.recommend(w)["perf.train_days"] <= 90
    # a pinned card the catalog gives no rate for the work (the B300 no fp32 one): the note naming it is the reason,
    # not a memory shortfall; in bf16 its 16-bit rate times it
    w["gpu"] = {"model": "b300-288gb"}
    assert rec.recommend(w)["perf.train_days"] <= 90
    said = " ".join(rec.recommend(dict(w, precision="fp32")).values.get("warnings", []))
    assert "cannot be timed against the deadline" in said and "b300-288gb" in said
    assert "No allowed catalog GPU holds" not in said


def test_a_stated_mfu_changes_the_count(rec: Any) -> None:
    w = example("cluster-llama2-70b-deadline")
    w["model_flops_utilization"] = 0.3
    low = rec.recommend(w)
    assert low["gpu.count"] > rec.recommend(example("cluster-llama2-70b-deadline"))["gpu.count"]


def test_owned_gpus_with_a_deadline_say_how_many_would_do(rec: Any) -> None:
    w = example("cluster-llama2-70b-deadline")
    w["gpu"] = {"model": "h100-sxm-80gb", "count": 32}
    r = rec.recommend(w)
    assert r["gpu.count"] == 32
    assert r["perf.train_days"] > 90
    assert any("would finish in time" in x for x in r["warnings"])


def test_a_token_budget_sets_the_run_length(rec: Any) -> None:
    w = example("cluster-llama2-70b-deadline")
    w["training_tokens"] = "2T"
    r = rec.recommend(w)
    assert r["perf.train_tokens_total"] == 2e12
    assert r["perf.train_days"] <= 90


def test_a_deadline_small_enough_for_one_node_stays_on_one(rec: Any) -> None:
    w = {
        "name": "small",
        "task": "fine-tuning",
        "model": {"name": "llama-3-8b"},
        "precision": "bf16",
        "dataset": {"size_gb": 1},
        "deadline_days": 1,
    }
    r = rec.recommend(w)
    assert r["nodes"] == 1
    assert r["gpu.count"] in (1, 2, 4, 8)
    assert r["perf.train_days"] <= 1


def test_a_pinned_tensor_parallel_size_is_the_one_planned(rec: Any) -> None:
    """parallelism.tensor_parallel: 4 on 8 owned H100 plans 2 replicas at TP4, as a measured TP4 deployment runs."""
    w = {
        "name": "tp4",
        "task": "inference",
        "model": {"name": "llama-3.1-70b"},
        "precision": "bf16",
        "serving": {"engine": "vllm", "concurrent_requests": 64, "prompt_tokens": 1000, "output_tokens": 500},
        "gpu": {"model": "h100-sxm-80gb", "count": 8},
    }
    auto = rec.recommend(w)["serving.plan"]
    pinned = rec.recommend({**w, "parallelism": {"tensor_parallel": 4}})["serving.plan"]
    assert (pinned["tensor_parallel"], pinned["replicas"], pinned["count"]) == (4, 2, 8)
    assert auto["tensor_parallel"] != 4
    # the same pin without a serving: section splits the model over 4 GPUs
    plain = {k: v for k, v in w.items() if k not in ("serving", "gpu")}
    r = rec.recommend({**plain, "batch_size": 4, "sequence_length": 4096, "parallelism": {"tensor_parallel": 4}})
    assert r["gpu.count"] == 4 and "tensor parallel, degree 4" in r["gpu.selection"]["split"]


def test_pinned_pipeline_stages_are_the_ones_planned(rec: Any) -> None:
    """serving.pipeline_parallel: 2 with TP4 on 16 owned H100 plans 2 replicas of 2 stages of 4 GPUs, as a
    measured PP2 x TP4 deployment runs; auto plans one stage; an engine without stages across nodes says so.
    """
    serving = {"engine": "vllm", "concurrent_requests": 64, "prompt_tokens": 1000, "output_tokens": 500}
    w = {
        "name": "pp2",
        "task": "inference",
        "model": {"name": "llama-3.1-70b"},
        "precision": "bf16",
        "serving": serving,
        "gpu": {"model": "h100-sxm-80gb", "count": 16},
        "parallelism": {"tensor_parallel": 4},
    }
    auto = rec.recommend(w)["serving.plan"]
    assert auto["pipeline_parallel"] == 1
    plan = rec.recommend({**w, "serving": {**serving, "pipeline_parallel": 2}})["serving.plan"]
    assert (plan["tensor_parallel"], plan["pipeline_parallel"], plan["replicas"], plan["count"]) == (4, 2, 2, 16)
    # three stages (no layout auto tries), each a TP group of the card's node, on a card gpusizer picks
    free = {k: v for k, v in w.items() if k not in ("gpu", "parallelism")}
    three = rec.recommend({**free, "serving": {**serving, "pipeline_parallel": 3}})["serving.plan"]
    assert three["pipeline_parallel"] == 3 and three["count"] == three["tensor_parallel"] * 3 * three["replicas"]
    r = rec.recommend({**w, "serving": {**serving, "engine": "tgi", "pipeline_parallel": 2}})
    assert any(a.startswith("ENGINE CANNOT: Text Generation Inference") for a in r["alerts"])
    assert r.get("serving.plan") is None
    # two stages on two PCIe cards of one server pass activations inside it (no fabric needed)
    owned = {**w, "model": {"name": "llama-3.1-8b"}, "gpu": {"model": "l40s-48gb", "count": 2}, "parallelism": {}}
    pcie = rec.recommend({**owned, "serving": {**serving, "pipeline_parallel": 2}})["serving.plan"]
    assert (pcie["tensor_parallel"], pcie["pipeline_parallel"], pcie["count"], pcie["nodes"]) == (1, 2, 2, 1)
    # a pinned layout larger than the GPUs pinned: said first, and not blamed on the cards' memory
    for pins in ({"serving": {**serving, "pipeline_parallel": 4}}, {"parallelism": {"tensor_parallel": 8}}):
        small = rec.recommend({**w, "gpu": {"model": "h100-sxm-80gb", "count": 2}, "parallelism": {}, **pins})
        assert any(a.startswith("LAYOUT LARGER THAN THE GPUS") for a in small["alerts"]), small.get("alerts")
        assert not any("would hold this workload with its weights quantized" in x for x in small.get("warnings") or [])


def test_a_checkpoint_that_declares_an_fp8_kv_cache_is_served_with_one(rec: Any, tmp_path: Any) -> None:
    """A ModelOpt config's kv_cache_quant_algo FP8 gives vLLM and TensorRT-LLM an FP8 cache (half the bytes a
    token) when kv_cache_dtype is not given; SGLang, and an explicit auto, keep the 16-bit one.
    """
    import json

    cfg = json.loads((ROOT / "examples" / "configs" / "Llama-3.1-8B.config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    serving = {"concurrent_requests": 32, "prompt_tokens": 2000, "output_tokens": 500}

    def served(engine: str, **extra: Any) -> Any:
        w = {"name": "kv", "task": "inference", "model": {"config": str(path)}}
        return rec.recommend({**w, "serving": {**serving, "engine": engine, **extra}})

    sixteen = served("sglang")
    assert sixteen["model.kv_cache_quant"] == "fp8" and sixteen["serving.kv_cache_dtype"] == "auto"
    for engine in ("vllm", "trtllm"):
        r = served(engine)
        assert r["serving.kv_cache_dtype"] == "fp8"
        assert r["serving.kv_bytes_per_token"] * 2 == sixteen["serving.kv_bytes_per_token"]
        assert "kv_cache_quant_algo" in r.explain("serving.kv_cache_dtype")["detail"]
    assert served("vllm", kv_cache_dtype="auto")["serving.kv_cache_dtype"] == "auto"


def test_a_tensor_parallel_size_that_does_not_divide_the_heads_is_an_alert(rec: Any) -> None:
    w = {
        "name": "tp3",
        "task": "inference",
        "model": {"name": "llama-3.1-8b"},
        "precision": "bf16",
        "parallelism": {"tensor_parallel": 3},
    }
    r = rec.recommend(w)
    assert any("tensor_parallel 3 does not divide" in a for a in r["alerts"])


def test_a_decode_step_reads_the_cache_apart_and_carries_prompt_chunks(rec: Any) -> None:
    """32 users of Qwen2.5-7B with 7k-token prompts on one H100: the step is the weights' GEMMs (read or
    FLOPs, the longer), plus per request the paged cache read at the engine's own, lower efficiency and
    the attention of the prompt chunks each step carries, plus the engine's host gap a step. Reading the
    cache at the weights' efficiency inside the same max() (the old model) is faster by over 15%."""
    w = example("serving-qwen2.5-7b-32-users")
    w["gpu"] = {"model": "h100-sxm-80gb", "count": 1}
    plan = rec.recommend(w)["serving.plan"]
    engines = yaml.safe_load((ROOT / "knowledge" / "serving_engines.yaml").read_text(encoding="utf-8"))
    e = next(i for i in engines["items"] if i["id"] == "vllm")
    # the parameters a token multiplies by: all 7.62B but the untied input embedding, which it looks up
    weights, params, layers, hidden = 15.231233024e9, 7615616512 - 544997376, 28, 3584
    kvbpt = 2 * layers * 4 * 128 * 2  # 4 KV heads of 128 in 16 bits
    b, p, o = 32, 7168, 1024
    ctx = p + o / 2
    bw = 3350e9 * e["decode_bandwidth_efficiency"]
    kv_bw = 3350e9 * e["decode_kv_bandwidth_efficiency"]
    per_flop = 1 / (989.5e12 * e["prefill_flops_efficiency"])
    gemms = max(weights / bw, b * 2 * params * (1 + p / o) * per_flop)
    decode_attention = max(ctx * kvbpt / kv_bw, 4 * layers * ctx * hidden * per_flop)
    per_request = decode_attention + 2 * layers * hidden * p * p / o * per_flop
    assert plan["batch"] == b
    assert plan["step_s"] == pytest.approx(gemms + b * per_request + e["decode_step_overhead_s"], rel=1e-9)
    flops = 2 * params * (1 + p / o) + 4 * layers * ctx * hidden + 2 * layers * hidden * p * p / o
    old = max((weights + b * ctx * kvbpt) / bw, b * flops * per_flop)
    assert plan["step_s"] > 1.15 * old


def test_tensorrt_llm_keeps_the_cache_in_16_bits_unless_told(rec: Any) -> None:
    """Llama 3.3 70B in FP8 on 2 x H100 with TensorRT-LLM: the KV cache is the 16-bit one gpusizer assumes for every
    engine (the LLM API takes the checkpoint's KV dtype, which the workload does not name); kv_cache_dtype: fp8 halves
    each request's cache, so the two cards hold about twice the requests. The budget is 90% of what is free after the
    weights, the profiling pass and the memory outside PyTorch."""
    w = {
        "name": "trtllm",
        "task": "inference",
        "model": {"name": "llama-3.3-70b"},
        "precision": "fp8",
        "serving": {"engine": "trtllm", "concurrent_requests": 50, "prompt_tokens": 5000, "output_tokens": 500},
        "gpu": {"model": "h100-sxm-80gb", "count": 2},
    }
    bf16 = rec.recommend(w)
    fp8 = rec.recommend({**w, "serving": {**w["serving"], "kv_cache_dtype": "fp8"}})
    assert bf16["serving.kv_bytes_per_token"] == 2 * fp8["serving.kv_bytes_per_token"]
    a, b = bf16["serving.plan"], fp8["serving.plan"]
    assert a["engine"] == "trtllm" and a["tensor_parallel"] == 2
    assert b["kv_cache_tokens"] == pytest.approx(2 * a["kv_cache_tokens"], rel=0.01)
    assert a["max_concurrency"] < 50 <= b["max_concurrency"]
    # 90% of (device memory - weights - profiling pass - memory outside PyTorch and CUDA graphs), in 32-token blocks
    engines = yaml.safe_load((ROOT / "knowledge" / "serving_engines.yaml").read_text(encoding="utf-8"))
    e = next(i for i in engines["items"] if i["id"] == "trtllm")
    gib = 1024**3
    weights = bf16["memory.weights_gb"] * 1e9 / 2
    profiling = e["activation_bytes_per_token_mlp"] * e["max_num_batched_tokens"] * 28672 / 2
    free = a["per_gpu_gb"] * 1e9 - weights - profiling - (e["non_torch_tp_gib"] + e["cuda_graph_gib"]) * gib
    per_token = bf16["serving.kv_bytes_per_token"] / 2
    assert a["kv_cache_tokens"] == math.floor(e["kv_share"] * free / (32 * per_token)) * 32


def test_a_four_card_nvlink_bridge_carries_tensor_parallel_4(rec: Any) -> None:
    """Four H200 NVL cards share one NVLink bridge (bridge_gpus 4): the serving plan times a TP4 decode step's
    all-reduces on NVLink (its rate and latency); four A100 PCIe cards (bridged in pairs) at TP4 take the PCIe path."""

    def plan(card: str) -> dict:
        w = {
            "name": card,
            "task": "inference",
            "model": {"name": "llama-3.1-70b"},
            "precision": "bf16",
            "serving": {"engine": "vllm", "concurrent_requests": 8, "prompt_tokens": 2000, "output_tokens": 500},
            "parallelism": {"tensor_parallel": 4},
            "gpu": {"model": card, "count": 4},
        }
        return rec.recommend(w)

    h200 = rec.rulebase.catalogs["gpu"].items["h200-nvl-141gb"]
    a100 = rec.rulebase.catalogs["gpu"].items["a100-pcie-80gb"]
    assert h200.get("bridge_gpus") == 4 and a100.get("bridge_gpus") == 2
    calls = {c["formula"]: c["value"] for c in plan("h200-nvl-141gb").explain("serving.plan")["binding"][0]["formulas"]}
    assert calls["direct_linked"] is True
    calls = {c["formula"]: c["value"] for c in plan("a100-pcie-80gb").explain("serving.plan")["binding"][0]["formulas"]}
    assert calls["direct_linked"] is False


PERSONAL_SERVING = {
    "name": "placement",
    "task": "inference",
    "scenario": "personal",
    "model": {"name": "qwen2.5-7b"},
    "precision": "bf16",
    "serving": {"concurrent_requests": 8, "prompt_tokens": 1000, "output_tokens": 200},
}


def test_serving_plans_on_excluded_platforms_are_sized_only_where_no_allowed_platform_takes_a_plan(rec: Any) -> None:
    """A plan on a platform the workload excludes ranks after every plan on one it allows (serving.plan's
    first key), so it is sized only when there is none: a personal workload gets tower plans alone, and
    the same workload pinned to SXM modules, which no tower takes, gets the server plans it would need,
    the alert that nothing is recommended, and the same choice the plans on every platform gave."""
    towers = rec.recommend(PERSONAL_SERVING)
    plans = towers.outcome.conclusions["serving.plan"].contributions
    assert plans and not any(c.value["unplaced"] for c in plans)
    assert towers["serving.placed_plans"] == len(plans)
    assert {c.rule for c in plans} == {"serving-plan-vllm"}
    assert towers["gpu.model"] == towers["serving.plan"]["gpu"]

    pinned = rec.recommend({**PERSONAL_SERVING, "gpu": {"model": "h100-sxm-80gb"}})
    plans = pinned.outcome.conclusions["serving.plan"].contributions
    assert plans and all(c.value["unplaced"] for c in plans)
    assert {c.rule for c in plans} == {"serving-plan-vllm-disallowed"}
    assert "serving.placed_plans" not in pinned.values and "gpu.model" not in pinned.values
    assert any(a.startswith("NOT PLACED") for a in pinned["alerts"])
    assert pinned["serving.plan"]["gpu"] == "h100-sxm-80gb"
