"""The speed benchmark's figures, held: every published measurement of benchmarks/speed-accuracy
is run through gpusizer again, and the figures its README states (median and points within 1.25x,
per part) must still hold, so a rule or constant change that moves them fails here instead of
drifting in silence. Ratios of predicted to measured figures only; nothing is timed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "speed-accuracy"
_spec = importlib.util.spec_from_file_location("speed_accuracy_run", BENCH / "run.py")
assert _spec and _spec.loader
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)

# (points, median low, median high, within 1.25x at least), as benchmarks/speed-accuracy/README.md states them
STATED = {
    ("tune", "training"): (20, 0.95, 1.05, 19),
    ("held-back", "training"): (12, 0.95, 1.05, 12),
    ("held-back", "serving"): (15, 0.9, 1.05, 14),
    ("tune", "vision"): (2, 0.95, 1.05, 2),
    ("held-back", "vision"): (17, 0.6, 0.7, 5),
}


@pytest.fixture(scope="module")
def rows():
    from engine import Recommender

    points = yaml.safe_load((BENCH / "points.yaml").read_text())["points"]
    out = []
    with Recommender() as rec:
        for p in points:
            pred = run.predict(rec, p)
            out.append({**p, "predicted": pred, "ratio": run.ratio(p, pred)})
    return out


def test_every_point_has_its_workload_and_source():
    points = yaml.safe_load((BENCH / "points.yaml").read_text())["points"]
    keys = [(p["id"], p["metric"]) for p in points]
    assert len(keys) == len(set(keys))
    for p in points:
        assert (BENCH / "workloads" / f"{p['id']}.yaml").is_file(), p["id"]
        assert p["source"]["url"].startswith("https://"), p["id"]
        assert p["quote"] and p["measured"] > 0, p["id"]
        assert (p["set"], run.kind(p)) in STATED, p["id"]


@pytest.mark.parametrize("part", sorted(STATED))
def test_the_stated_figures_hold(rows, part):
    n, low, high, within = STATED[part]
    s = run.summary([r for r in rows if (r["set"], run.kind(r)) == part])
    assert s["points"] == n and s["predicted"] == n, "every point gets a figure from gpusizer"
    assert low <= s["median"] <= high, f"{part}: median {s['median']:.3f}"
    assert s["within_1_25"] >= within, f"{part}: {s['within_1_25']} within 1.25x"


def test_fp8_is_faster_than_bf16_on_the_same_run(rows):
    """The same Llama 3 8B run in FP8 on H100 is timed faster than it would be in BF16 (the issue's cause)."""
    from engine import Recommender

    w = yaml.safe_load((BENCH / "workloads" / "nemo-h100-fp8-llama3-8b.yaml").read_text())
    with Recommender() as rec:
        fp8 = rec.recommend(w).values["perf.train_tokens_per_s"]
        bf16 = rec.recommend({**w, "precision": "bf16"}).values["perf.train_tokens_per_s"]
    assert fp8 > 1.5 * bf16


def test_fp8_gains_less_where_attention_is_more_of_the_work():
    """FP8 speeds up the GEMMs, not the attention (knowledge/formulas.yaml, train_rate): MPT-1B in FP8 over BF16 is
    timed 1.4x faster at 512 tokens and no faster at 32,768 (0.85x), where MosaicML measured 1.35x and 1.05x
    (70,315 against 52,275 tokens/s per GPU, and 12,580 against 12,025); before, gpusizer timed FP8 twice as fast at
    any length."""
    from engine import Recommender

    w = yaml.safe_load((BENCH / "workloads" / "mosaic-h100-fp8-mpt-1b-s32768.yaml").read_text())
    speedup = {}
    with Recommender() as rec:
        for seq in (512, 32768):
            fp8 = rec.recommend({**w, "sequence_length": seq}).values["perf.train_tokens_per_s"]
            bf16 = rec.recommend({**w, "sequence_length": seq, "precision": "bf16"}).values["perf.train_tokens_per_s"]
            speedup[seq] = fp8 / bf16
    assert 1.2 < speedup[512] < 1.6, speedup
    assert 0.8 < speedup[32768] < 1.2 and speedup[32768] < speedup[512] - 0.2, speedup


def test_long_sequences_are_not_timed_much_faster_than_measured(rows):
    """At 32,768 tokens attention is most of a token's FLOPs and runs at a lower share of the peak than the GEMMs
    (const.attention_flops_utilization): timed at the GEMMs' rate, MPT-7B and 13B came out 1.36-1.39x too fast, and
    1.13-1.14x with the attention at its own rate but its checkpointed forward not run again."""
    long = [r for r in rows if r["id"].endswith("-s32768")]
    assert len(long) >= 4
    assert all(r["ratio"] <= 1.05 for r in long), [(r["id"], round(r["ratio"], 2)) for r in long]


def test_checkpointing_reruns_the_attention_forward():
    """With activation checkpointing the attention's forward runs again (train_rate, knowledge/formulas.yaml): a third
    more attention time, which at 32,768 tokens is most of a token's time and at 2,048 a few percent. MosaicML's
    MPT-7B at 32,768 tokens, checkpointed, is timed at 0.96 of its measured speed (1.14 before)."""
    from engine import Recommender

    w = yaml.safe_load((BENCH / "workloads" / "mosaic-h100-bf16-mpt-7b-s32768.yaml").read_text())
    assert w["gradient_checkpointing"] is True
    slowdown = {}
    with Recommender() as rec:
        for seq in (2048, 32768):
            on = rec.recommend({**w, "sequence_length": seq}).values["perf.train_tokens_per_s"]
            off = rec.recommend({**w, "sequence_length": seq, "gradient_checkpointing": False}).values[
                "perf.train_tokens_per_s"
            ]
            slowdown[seq] = on / off
    assert 0.95 < slowdown[2048] < 1.0, slowdown
    assert 0.75 < slowdown[32768] < 0.9, slowdown


def test_a_cards_measured_scale_applies_to_gpusizers_utilization_not_to_the_workloads():
    """An A100 SXM 80GB sustains 1.4 times Hopper's share at gpusizer's defaults (knowledge/gpus.yaml,
    training_utilization_scale); a utilization the workload measured on its own cards is taken as it is, and a card
    without a measured scale (the A100 PCIe) keeps Hopper's share."""
    from engine import Recommender

    w = yaml.safe_load((BENCH / "workloads" / "mosaic-a100-bf16-mpt-7b-s2048.yaml").read_text())
    with Recommender() as rec:
        scaled = rec.recommend(w).values
        given = rec.recommend({**w, "model_flops_utilization": 0.45}).values
        pcie = rec.recommend({**w, "gpu": {"model": "a100-pcie-80gb", "count": 8}}).values
    scales = [r["perf.utilization_scale"] for r in (scaled, given, pcie)]
    assert scales == [1.4, 1, 1]
    assert scaled["perf.rate_tflops"] == pytest.approx(1.4 * given["perf.rate_tflops"], rel=0.002)
    assert pcie["perf.rate_tflops"] == pytest.approx(given["perf.rate_tflops"], rel=0.002)


def test_vision_several_gpus_each_reach_a_share_of_one(rows):
    """Eight A100 training ResNet-50 are timed at 0.84 of eight times one, as NVIDIA measured 6.72 x (1.22x fast
    before), and no vision point in 16-bit leans optimistic past 1.05x but the T4's inference (README)."""
    by = {r["id"]: r for r in rows}
    one, eight = by["dle-a100-80gb-amp-1gpu"]["predicted"], by["dle-a100-80gb-amp-8gpu"]["predicted"]
    assert eight / one == pytest.approx(8 * 0.84, rel=1e-3)
    fast = {r["id"] for r in rows if run.kind(r) == "vision" and r["ratio"] > 1.05}
    assert fast == {"dle-t4-amp-infer-b256"}, fast
