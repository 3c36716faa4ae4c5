"""The shipped rulebase under every backend: the same workloads give the same documents."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.backends import BACKENDS, make_backend
from corpus import EXAMPLES
from engine import InputError, Recommender
from engine.report.document import document


@pytest.fixture(scope="module")
def recommenders(rulebase):
    recs = {name: Recommender(rulebase=rulebase, backend=make_backend(name)) for name in BACKENDS}
    yield recs
    for rec in recs.values():
        rec.close()


def _docs(recs, workload):
    out = {}
    for name, rec in recs.items():
        try:
            out[name] = json.dumps(document(rec.recommend(workload)), sort_keys=True)
        except InputError as exc:
            out[name] = exc.render()
    return out


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_is_the_same_under_every_backend(recommenders, example):
    docs = _docs(recommenders, example)
    assert len(set(docs.values())) == 1, f"backends disagree on {example.name}"


WORKLOADS = st.fixed_dictionaries(
    {
        "name": st.just("w"),
        "task": st.sampled_from(["training", "fine-tuning", "inference"]),
        "model": st.fixed_dictionaries(
            {
                "name": st.sampled_from(
                    ["llama-2-7b", "llama-2-70b", "mixtral-8x7b", "gpt2", "bert-base-uncased", "qwen2.5-7b"]
                )
            }
        ),
        "precision": st.sampled_from(["fp32", "bf16", "fp16", "int8", "int4"]),
        "batch_size": st.integers(1, 64),
        "sequence_length": st.sampled_from([128, 2048, 8192]),
        "gradient_checkpointing": st.booleans(),
        "scenario": st.sampled_from(["auto", "personal", "sme", "cluster", "hpc"]),
        "needs_fp64": st.booleans(),
        "gpu": st.fixed_dictionaries(
            {
                "count": st.sampled_from(["auto", 1, 2, 4, 8, 16]),
                "exclude": st.lists(st.sampled_from(["rtx-3090-24gb", "h100-sxm-80gb"]), max_size=2, unique=True),
            }
        ),
        "budget": st.fixed_dictionaries({"amount": st.integers(1000, 3_000_000)}),
    }
)


SUPPRESSED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=20, deadline=None, suppress_health_check=SUPPRESSED)
@given(workload=WORKLOADS)
def test_generated_workloads_are_the_same_under_every_backend(recommenders, workload):
    docs = _docs(recommenders, workload)
    assert len(set(docs.values())) == 1


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=SUPPRESSED)
@given(workload=WORKLOADS)
def test_more_generated_workloads_are_the_same_under_every_backend(recommenders, workload):
    """The slow tier: ten times the generated workloads of the test above."""
    docs = _docs(recommenders, workload)
    assert len(set(docs.values())) == 1
