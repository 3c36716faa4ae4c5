"""Property: any YAML document, any value for any key -> a recommendation or a clean input error."""

import math

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import InputError

KEYS = {
    "name": None,
    "task": ["training", "fine-tuning", "inference"],
    "precision": ["fp32", "bf16", "fp16", "fp8", "int8", "int4"],
    "batch_size": None,
    "sequence_length": None,
    "optimizer": ["adamw", "adam", "sgd", "sgd-momentum", "adamw-8bit"],
    "mixed_precision": ["auto", True, False],
    "attention": ["fused", "eager"],
    "gradient_checkpointing": [True, False],
    "needs_fp64": [True, False],
    "scenario": ["auto", "personal", "sme", "cluster", "hpc"],
}
MODEL_KEYS = [
    "name",
    "params",
    "layers",
    "hidden_size",
    "attention_heads",
    "kv_heads",
    "intermediate_size",
    "mlp",
    "vocab_size",
    "kind",
]
MODELS = ["llama-2-70b", "gpt2", "bert-base-uncased", "mistral-7b", "mixtral-8x7b", "resnet-50", "nope"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["70B", "6.7b", "125M", "1e9", "0B", "-3", "auto", "fp16", "inference"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)


def _value_for(key):
    options = KEYS.get(key)
    return st.one_of(st.sampled_from(options), values) if options else values


@st.composite
def workloads(draw):
    """Mostly valid workloads (so rules really run), with any key perturbed by any value."""
    doc = {"name": "w", "task": draw(st.sampled_from(KEYS["task"]))}
    if draw(st.booleans()):
        doc["model"] = {"name": draw(st.sampled_from(MODELS))}
    else:
        doc["model"] = {"params": draw(st.one_of(st.integers(1, 10**13), st.sampled_from(["70B", "6.7b", "125M"])))}
    for mk in draw(st.lists(st.sampled_from(MODEL_KEYS[2:]), unique=True, max_size=4)):
        doc["model"][mk] = draw(st.integers(1, 10**5)) if draw(st.integers(0, 9)) else draw(values)
    for key in draw(st.lists(st.sampled_from(sorted(KEYS)), unique=True, max_size=8)):
        options = KEYS[key]
        doc[key] = (
            draw(st.sampled_from(options))
            if options and draw(st.integers(0, 9))
            else draw(st.integers(1, 100000) if options is None and key != "name" and draw(st.booleans()) else values)
        )
    if draw(st.booleans()):
        doc["dataset"] = {"size_gb": draw(st.one_of(st.floats(0, 1e6), values))}
    if draw(st.booleans()):
        doc["gpu"] = {"exclude": draw(st.lists(st.sampled_from(["rtx-4090-24gb", "h100-sxm-80gb", "x"]), max_size=3))}
    if draw(st.booleans()):
        doc["budget"] = {"amount": draw(st.one_of(st.integers(1, 10**6), values))}
    if draw(st.integers(0, 9)) == 0:
        doc[draw(st.sampled_from(["bogus", "model", "gpu", "dataset"]))] = draw(values)
    return doc


def _check(rec, text):
    try:
        result = rec.recommend_text(text)
    except InputError as exc:
        # a clean input error: every problem has a place in the file, a message and a way out
        for d in exc.diagnostics:
            assert d.file == "<workload>" and d.message and d.help, d.render()
            assert d.render().startswith(f"{d.location()}: error: ")
        return
    for attr, value in result.values.items():
        if isinstance(value, float):
            assert math.isfinite(value), (attr, value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=workloads())
def test_any_workload_mapping_gives_a_result_or_a_clean_error(recommender, doc):
    _check(recommender, yaml.safe_dump(doc, allow_unicode=True) + "\n")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_gives_a_result_or_a_clean_error(recommender, text):
    _check(recommender, text + "\n")
