"""Every rule's own test cases (rules/<area>/<id>.test.yaml), one pytest case each.

Cases and their problems are collected without raising, so that one malformed test file fails
the tests of its own rule and does not hide every other rule's cases behind a collection error.
"""

import pytest

from engine.authoring.cases import Runner, collect_cases
from engine.plan.rulebase import load_rulebase

_RB = load_rulebase()
_CASES, _PROBLEMS = collect_cases(_RB)
_RUNNER = Runner(_RB)


@pytest.mark.parametrize("case", _CASES, ids=[c.id for c in _CASES])
def test_rule_case(case):
    outcome = _RUNNER.run(case)
    assert outcome.passed, outcome.message


@pytest.mark.parametrize("rule_id", sorted(_RB.rules))
def test_rule_has_well_formed_cases_that_fire_and_stay_silent(rule_id):
    problems = [d.render() for e in _PROBLEMS for d in e.diagnostics if d.rule == rule_id]
    assert not problems, "\n".join(problems)


def test_a_rule_without_a_silent_case_is_reported(tmp_path):
    """The check above can fail: remove one rule's silent case and it names that rule."""
    import shutil

    from corpus import ROOT

    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    path = next(rules.rglob("ram-training-floor.test.yaml"))
    silent = "  - name: silent-for-inference\n    given: {task: inference}\n    expect: {}\n"
    assert silent in path.read_text()
    path.write_text(path.read_text().replace(silent, ""))
    _, problems = collect_cases(load_rulebase([rules]))
    found = [d for e in problems for d in e.diagnostics]
    assert [(d.rule, d.message) for d in found] == [
        ("ram-training-floor", "rule 'ram-training-floor' has no case where it stays silent")
    ]
