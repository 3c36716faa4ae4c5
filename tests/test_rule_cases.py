"""Every rule's own test cases (rules/<area>/<id>.test.yaml), one pytest case each."""
import pytest

from engine.rulebase import load_rulebase
from engine.testing import Runner, load_cases

_RB = load_rulebase()
_CASES = load_cases(_RB)
_RUNNER = Runner(_RB)


@pytest.mark.parametrize("case", _CASES, ids=[c.id for c in _CASES])
def test_rule_case(case):
    outcome = _RUNNER.run(case)
    assert outcome.passed, outcome.message


def test_every_rule_has_firing_and_silent_cases():
    for rule_id in _RB.rules:
        mine = [c for c in _CASES if c.rule == rule_id]
        assert any(c.expect for c in mine), rule_id
        assert any(not c.expect for c in mine), rule_id
