"""The seeded fuzz (tests/fuzz.py) in CI, bounded in time: no input may crash gpusizer or hang it,
and the two backends must agree on every generated rulebase. Longer runs: python tests/fuzz.py."""

import json

import pytest
from fuzz import fuzz

SEED = 20260101
BUDGET_S = {"workloads": 10, "rules": 25}  # about 35 s of CI in all
AT_LEAST = {"workloads": 200, "rules": 15}  # what even a slow machine gets through


@pytest.mark.parametrize("kind", ["workloads", "rules"])
def test_fuzz_finds_no_crash_hang_or_disagreement(kind):
    stats = fuzz(kind, SEED, BUDGET_S[kind])
    print(json.dumps({k: v for k, v in stats.items() if k != "failures"}))
    assert stats["failures"] == []
    assert stats["crashes"] == stats["hangs"] == stats["mismatches"] == 0
    assert stats["tried"] >= AT_LEAST[kind] and stats["ok"] > 0 and stats["clean"] > 0


def test_cases_are_reproducible_from_the_seed():
    from fuzz import workload_case

    assert workload_case(SEED, 7) == workload_case(SEED, 7) != workload_case(SEED, 8)
