"""The accuracy benchmark's figures, held: every committed measurement (benchmarks/accuracy/results.json
and results-families.json) is sized again by gpusizer here, the way benchmarks/accuracy/compare.py
sizes it (numbers by hand for the first set, each family case from its config.json), and the
figures the README and benchmarks/accuracy/README.md state must still hold. A rule or knowledge change
that moves them fails this test instead of drifting in silence. In-process rule runs only (~100).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "accuracy"
sys.path.insert(0, str(BENCH))  # compare.py imports families.py beside it

# loaded under its own name: benchmarks/serving has a compare.py too, and tests/test_serving.py imports
# that one as "compare"
_spec = importlib.util.spec_from_file_location("accuracy_compare", BENCH / "compare.py")
assert _spec and _spec.loader
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)

# (cases, mean |error| %, worst |error| %, within 5%, under by more than 5%), as the README states them
STATED = {"results.json": (39, 0.3, 6.6, 38, 0), "results-families.json": (63, 0.1, 0.7, 63, 0)}


_SIZED: dict[str, list[dict]] = {}  # the rows of each results file, sized once per test process


def _errors(recommender, name: str, tmp_path: Path) -> list[dict]:
    if name not in _SIZED:
        cases = [c for c in json.loads((BENCH / name).read_text())["cases"] if "error" not in c]
        ws = compare.workloads(cases, name == "results-families.json", str(tmp_path))
        answers = {}
        for w in ws:
            r = recommender.recommend(w)
            answers[w["name"]] = {"name": w["name"], "memory": {k: r.get(k) for k in compare.KEYS}}
        _SIZED[name] = compare.errors(cases, answers)
    return [dict(r) for r in _SIZED[name]]


@pytest.mark.parametrize("name", sorted(STATED))
def test_stated_accuracy_holds(recommender, tmp_path, name):
    rows = _errors(recommender, name, tmp_path)
    assert not [r["name"] for r in rows if "error" in r], "gpusizer refused measured cases"
    s = compare.stats([r["error_pct"] for r in rows])
    cases, mean, worst, within, under = STATED[name]
    assert s["cases"] == cases
    assert round(s["mean"], 1) == mean
    assert round(s["worst"], 1) == worst
    assert s["within_5"] == within
    assert s["under_5"] == under == 0


def test_family_cases_are_all_within_five_percent(recommender, tmp_path):
    """The target: every family case within 5%, none under by more than 5% (per family, too)."""
    rows = _errors(recommender, "results-families.json", tmp_path)
    worst = max(rows, key=lambda r: abs(r["error_pct"]))
    assert abs(worst["error_pct"]) <= 5, worst["name"]
    cases = {c["name"]: c for c in json.loads((BENCH / "results-families.json").read_text())["cases"]}
    families = {compare.family_of(cases[r["name"]]) for r in rows}
    assert len(families) == 18  # every family measured, LoRA included


def test_the_readmes_state_these_figures():
    readme = (ROOT / "README.md").read_text()
    bench = (BENCH / "README.md").read_text()
    for name, (cases, mean, worst, within, _) in STATED.items():
        row = f"| gpusizer | {cases} | {mean}% | {worst}% | {within} of {cases} |"
        assert row in readme, f"README.md: no row {row!r} for {name}"
        assert row in bench, f"benchmarks/accuracy/README.md: no row {row!r} for {name}"


def test_the_committed_comparisons_are_current(recommender, tmp_path):
    """comparison.txt and comparison-families.txt are compare.py's output for this rulebase."""
    for name, out in (("results.json", "comparison.txt"), ("results-families.json", "comparison-families.txt")):
        rows = _errors(recommender, name, tmp_path)
        text = (BENCH / out).read_text()
        for r in rows:
            line = next(ln for ln in text.splitlines() if ln.startswith(r["name"] + " "))
            assert f"{r['error_pct']:+7.1f}" in line, (out, r["name"])
