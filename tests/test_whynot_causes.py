"""why-not leads with the cause: the fact that stopped the rule that would have chosen the value, followed to
its root, and names only briefly the rules that are for another kind of workload or of card."""

from __future__ import annotations

from typing import Any

from engine.explain.whynot import why_not

SERVING = {
    "name": "w",
    "task": "inference",
    "model": {"name": "llama-3-8b"},
    "precision": "bf16",
    "scenario": "sme",
    "serving": {"engine": "vllm", "concurrent_requests": 32, "prompt_tokens": 2000, "output_tokens": 500},
}


def test_a_serving_workload_is_told_the_card_has_no_price(recommender: Any) -> None:
    # the A800 PCIe (sold in China) is the card the catalog leaves unpriced
    answer = why_not(recommender.recommend({**SERVING, "market": "cn"}), "gpu.model", "a800-pcie-80gb")
    message = answer["message"]
    cause = message.index("serving-cards: the condition on g.price failed: gt 0 (it is None)")
    assert message.startswith("no rule proposed a800-pcie-80gb: serving-gpu-selection")
    assert cause < message.index("not for this workload")
    # the memory-only and deadline candidates are for other workloads: named once, after the cause
    assert message.index("deadline-candidate") > cause and "which cannot be computed" not in message
    assert message.count("serving-plan-sglang") == 0


def test_owned_cards_without_a_platform_are_told_which_rules_rule_the_platforms_out(recommender: Any) -> None:
    w = {
        "name": "o",
        "task": "fine-tuning",
        "fine_tuning": {"method": "lora"},
        "model": {"name": "llama-3.1-8b"},
        "precision": "bf16",
        "scenario": "sme",
        "batch_size": 1,
        "sequence_length": 1024,
        "gpu": {"model": "rtx-5090-32gb", "count": 1},
    }
    message = why_not(recommender.recommend(w), "gpu.model", "rtx-5090-32gb")["message"]
    assert message.startswith("no rule proposed rtx-5090-32gb: gpu-candidate-fixed-count: every platform")
    assert "platform-exclude-towers-company" in message and "platform-unfit-open-air-in-server" in message
    assert message.index("platform-exclude-towers-company") < message.index("not for this workload")
