"""What the report calls things: the model's name, the default context, how many configurations fit, and
which KV-cache figure is which, on workloads of the kind that showed each wrong."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.report.render import render

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "tests" / "fixtures" / "hf-configs"


def text(recommender: Any, w: dict[str, Any]) -> str:
    """The text report with its lines joined, so that a phrase wrapped at 120 columns is found."""
    return " ".join(render(recommender.recommend(w), "text").split())


def test_a_model_from_a_config_json_is_named_by_its_file_and_family(recommender: Any) -> None:
    w = {
        "name": "c",
        "task": "inference",
        "model": {"config": str(HF / "Qwen--Qwen3-30B-A3B.json")},
        "precision": "bf16",
    }
    report = text(recommender, w)
    assert "given by its numbers" not in report
    assert "the qwen3-moe model of " in report and "Qwen--Qwen3-30B-A3B.json" in report


def test_a_model_from_the_hugging_face_cache_is_named_by_its_id(
    recommender: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = tmp_path / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    shutil.copy(HF / "Qwen--Qwen3-8B.json", snap / "config.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    report = text(
        recommender, {"name": "h", "task": "inference", "model": {"hf": "Qwen/Qwen3-8B"}, "precision": "bf16"}
    )
    assert "inference of Qwen/Qwen3-8B (8.2B parameters)" in report


def test_a_model_given_by_its_numbers_is_still_called_so(recommender: Any) -> None:
    shape = {
        "layers": 4,
        "hidden_size": 512,
        "attention_heads": 8,
        "intermediate_size": 2048,
        "vocab_size": 32000,
        "mlp": "swiglu",
    }
    report = text(recommender, {"name": "n", "task": "inference", "model": shape, "precision": "bf16"})
    assert "a model given by its numbers" in report


@pytest.mark.parametrize(("model", "context"), [("bert-base-uncased", 512), ("gpt2", 1024), ("llama-2-7b", 2048)])
def test_the_default_sequence_stays_within_the_models_positions(recommender: Any, model: str, context: int) -> None:
    r = recommender.recommend({"name": "d", "task": "inference", "model": {"name": model}, "precision": "fp16"})
    assert r["sequence_length"] == context
    assert not [w for w in r["warnings"] if "beyond the" in w]


def test_a_sequence_given_beyond_the_positions_is_kept_and_warned_about(recommender: Any) -> None:
    w = {"name": "d", "task": "inference", "model": {"name": "bert-base-uncased"}, "precision": "fp16"}
    r = recommender.recommend(dict(w, sequence_length=4096))
    assert r["sequence_length"] == 4096
    assert [x for x in r["warnings"] if "beyond the 512 tokens" in x]


def test_a_serving_choice_counts_the_plans_that_fit(recommender: Any) -> None:
    report = text(recommender, {"name": "s", **_serving("llama-3-70b")})
    assert "the one configuration that fits" not in report
    assert "serving plans that fit and meet the targets" in report


def _serving(model: str) -> dict[str, Any]:
    return {
        "task": "inference",
        "model": {"name": model},
        "precision": "bf16",
        "serving": {"engine": "vllm", "concurrent_requests": 200, "prompt_tokens": 2000, "output_tokens": 500},
    }


def test_the_two_kv_cache_figures_say_which_is_which(recommender: Any) -> None:
    r = recommender.recommend({"name": "k", **_serving("llama-3-70b")})
    report = " ".join(render(r, "text").split())
    assert "KV cache the requests need 164 GB" in report
    reserved = r["serving.kv_cache_gb"]
    assert f"the engine reserves {reserved:.1f} GB" in report and "the 200 requests need 163.8 GB" in report
