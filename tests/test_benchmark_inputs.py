"""The speed benchmarks' own workloads are valid inputs: a rule change that makes a generated workload an input
error (full training in int8 became one) breaks the benchmark only when someone next runs it; this test says so
in the test run. It loads the workloads (the schema and input checks), it does not time anything."""

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_speed_and_sweep_benchmarks_workloads_load(recommender):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from speed import workloads
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    texts = [yaml.safe_dump(w) for w in workloads(300)]
    for text in texts:
        recommender.load_text(text, "case")  # raises an InputError with the file and line of the fault
    # the mix still has every precision and task it was built with (int8 where it is valid: inference)
    loaded = [yaml.safe_load(t) for t in texts]
    assert {w["precision"] for w in loaded} == {"int8", "bf16", "fp16", "fp32"}
    assert {w["task"] for w in loaded} == {"inference", "training", "fine-tuning"}
