"""The seeded fuzz (tests/fuzz.py) in CI: no input may crash gpusizer or hang it, and the two backends
must agree on every generated rulebase. CI runs a fixed number of cases, so that a slow machine runs
the same cases as a fast one (a time budget made the count depend on the machine). Longer runs:
python tests/fuzz.py."""

import json

import pytest
from fuzz import fuzz

SEED = 20260101
# every run: 100 workloads and 3 mutated rulebases (each loaded under three backends), about 8 s on a
# 2-core machine; pytest -m slow: 1,000 and 40 more from another seed, about 2 minutes
CASES = {"workloads": 100, "rules": 3}
SLOW_RUNS = {"workloads": 1000, "rules": 40}
# config.json and the Hugging Face cache, serving sections, overlays of the config mapping: about 9 s more
DOCUMENT_CASES = {"configs": 30, "serving": 30, "overlays": 5}
SLOW_CASES = {"configs": 600, "serving": 600, "overlays": 120}  # pytest -m slow: about 10 minutes
CEILING_S = 900  # a safety net only: each case has its own hang limit in tests/fuzz.py


@pytest.mark.parametrize("kind", ["workloads", "rules"])
def test_fuzz_finds_no_crash_hang_or_disagreement(kind):
    stats = fuzz(kind, SEED, CEILING_S, cases=CASES[kind])
    print(json.dumps({k: v for k, v in stats.items() if k != "failures"}))
    assert stats["failures"] == []
    assert stats["crashes"] == stats["hangs"] == stats["mismatches"] == 0
    assert stats["tried"] == CASES[kind] and stats["ok"] > 0 and stats["clean"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["workloads", "rules"])
def test_longer_fuzz_finds_no_crash_hang_or_disagreement(kind):
    stats = fuzz(kind, SEED + 1, 3600, cases=SLOW_RUNS[kind])
    print(json.dumps({k: v for k, v in stats.items() if k != "failures"}))
    assert stats["failures"] == []
    assert stats["crashes"] == stats["hangs"] == stats["mismatches"] == 0
    assert stats["tried"] == SLOW_RUNS[kind] and stats["ok"] > 0 and stats["clean"] > 0


@pytest.mark.parametrize("kind", sorted(DOCUMENT_CASES))
def test_fuzz_of_configs_caches_serving_and_overlays(kind):
    stats = fuzz(kind, SEED, CEILING_S, cases=DOCUMENT_CASES[kind])
    print(json.dumps({k: v for k, v in stats.items() if k != "failures"}))
    assert stats["failures"] == []
    assert stats["crashes"] == stats["hangs"] == 0
    assert stats["tried"] == DOCUMENT_CASES[kind] and stats["ok"] > 0 and stats["clean"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SLOW_CASES))
def test_longer_fuzz_of_configs_caches_serving_and_overlays(kind):
    stats = fuzz(kind, SEED + 1, 3600, cases=SLOW_CASES[kind])
    print(json.dumps({k: v for k, v in stats.items() if k != "failures"}))
    assert stats["failures"] == [] and stats["crashes"] == stats["hangs"] == 0


def test_cases_are_reproducible_from_the_seed():
    from fuzz import workload_case

    assert workload_case(SEED, 7) == workload_case(SEED, 7) != workload_case(SEED, 8)
    from fuzz import config_case, overlay_case, serving_case

    assert config_case(SEED, 3) == config_case(SEED, 3) != config_case(SEED, 4)
    assert serving_case(SEED, 3) == serving_case(SEED, 3) != serving_case(SEED, 4)
    assert overlay_case(SEED, 3) == overlay_case(SEED, 3) != overlay_case(SEED, 4)
