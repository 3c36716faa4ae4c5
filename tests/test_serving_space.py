"""The neighbours of the serving examples: every mixture of experts, engine, precision, market and owned pin.

Each workload here is one a user could write; the invariants are the ones an engineer signing for the
machine would check: a plan (or a stated reason why none), parameter counts as ``inspect-model`` reads
them, no rule crash, and an owned pin that is kept as given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
MODELS = {m["id"]: m for m in yaml.safe_load((ROOT / "knowledge" / "models.yaml").read_text())["items"]}
MOE = sorted(k for k, m in MODELS.items() if (m.get("experts") or 1) > 1)
HF = ROOT / "tests" / "fixtures" / "hf-configs"
MOE_CONFIGS = ["Qwen--Qwen3-30B-A3B.json", "deepseek-ai--DeepSeek-R1.json", "openai--gpt-oss-20b.json"]
ENGINES = ["vllm", "sglang", "tgi", "transformers"]


def value(r: Any, name: str) -> Any:
    return r.get(name)


def serving(model: dict[str, Any], precision: str = "bf16", engine: str = "vllm", **extra: Any) -> dict[str, Any]:
    w: dict[str, Any] = {
        "name": "space",
        "task": "inference",
        "model": model,
        "precision": precision,
        "serving": {"engine": engine, "concurrent_requests": 32, "prompt_tokens": 2000, "output_tokens": 500},
    }
    w.update(extra)
    return w


def test_every_moe_in_the_catalog_is_listed() -> None:
    assert set(MOE) >= {
        "mixtral-8x7b",
        "mixtral-8x22b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "deepseek-v3",
        "deepseek-r1",
        "gpt-oss-20b",
        "gpt-oss-120b",
    }


@pytest.mark.parametrize("model", MOE)
def test_active_params_of_a_catalog_moe_are_its_shared_weights_and_routed_experts(recommender: Any, model: str) -> None:
    m = MODELS[model]
    r = recommender.recommend(serving({"name": model}, "int4"))
    experts = value(r, "perf.expert_params")
    assert experts == m["expert_params"]
    active = m["params"] - m["expert_params"] * (m["experts"] - m["experts_per_token"]) / m["experts"]
    assert value(r, "perf.active_params") == pytest.approx(active)
    assert 0 < active < m["params"]
    assert not [w for w in value(r, "warnings") if "more than model.params" in w]


@pytest.mark.parametrize(
    ("model", "billions", "embeddings"),
    [
        ("deepseek-v3", 37, True),
        ("qwen3-235b-a22b", 22, True),
        ("qwen3-30b-a3b", 3.3, True),
        ("mixtral-8x7b", 12.9, True),
        # OpenAI's model card counts 5.1B active without the 0.58B embedding table
        ("gpt-oss-120b", 5.13, False),
        ("gpt-oss-20b", 3.61, False),
    ],
)
def test_active_params_agree_with_what_the_model_cards_publish(
    recommender: Any, model: str, billions: float, embeddings: bool
) -> None:
    r = recommender.recommend(serving({"name": model}, "int4"))
    active = value(r, "perf.active_params") - (0 if embeddings else MODELS[model]["embedding_params"])
    assert active / 1e9 == pytest.approx(billions, rel=0.03)


@pytest.mark.parametrize("config", MOE_CONFIGS)
def test_a_moe_from_its_config_json_gets_the_experts_inspect_model_reads(recommender: Any, config: str) -> None:
    w = serving({"config": str(HF / config)}, "int4")
    loaded = recommender.load(w)
    r = recommender.recommend(loaded)
    assert value(r, "perf.expert_params") == loaded.inputs["model.expert_params"].value
    assert 0 < value(r, "perf.active_params") < loaded.inputs["model.params"].value


def test_deepseek_v3_fp8_served_by_vllm_gets_a_machine(recommender: Any) -> None:
    r = recommender.recommend(serving({"name": "deepseek-v3"}, "fp8"))
    assert value(r, "serving.fits") is True
    assert value(r, "gpu.model") is not None
    assert value(r, "gpu.count") * 141e9 >= 671e9 or value(r, "memory.vram_required_gb") < value(r, "gpu.count") * 200


def test_deepseek_r1_on_eight_owned_h200_is_served(recommender: Any) -> None:
    w = serving({"name": "deepseek-r1"}, "fp8", gpu={"model": "h200-sxm-141gb", "count": 8}, scenario="cluster")
    r = recommender.recommend(w)
    assert value(r, "serving.fits") is True
    assert value(r, "gpu.model") == "h200-sxm-141gb"
    assert value(r, "gpu.count") == 8
