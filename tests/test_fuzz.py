"""The seeded fuzz (tests/fuzz.py) in CI: no input may crash gpusizer or hang it, and the two backends
must agree on every generated rulebase. CI runs a fixed number of cases, so that a slow machine runs
the same cases as a fast one (a time budget made the count depend on the machine). Longer runs:
python tests/fuzz.py."""

import json

import pytest
from fuzz import fuzz

SEED = 20260101
CASES = {"workloads": 200, "rules": 15}  # about 40 s of CI in all on a 2-core machine
CEILING_S = 900  # a safety net only: each case has its own hang limit in tests/fuzz.py


@pytest.mark.parametrize("kind", ["workloads", "rules"])
def test_fuzz_finds_no_crash_hang_or_disagreement(kind):
    stats = fuzz(kind, SEED, CEILING_S, cases=CASES[kind])
    print(json.dumps({k: v for k, v in stats.items() if k != "failures"}))
    assert stats["failures"] == []
    assert stats["crashes"] == stats["hangs"] == stats["mismatches"] == 0
    assert stats["tried"] == CASES[kind] and stats["ok"] > 0 and stats["clean"] > 0


def test_cases_are_reproducible_from_the_seed():
    from fuzz import workload_case

    assert workload_case(SEED, 7) == workload_case(SEED, 7) != workload_case(SEED, 8)
