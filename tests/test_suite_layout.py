"""The test run's own scheduling (tests/conftest.py) names tests that exist: a renamed test would otherwise
leave its group and be computed once on each worker again, or leave the default run's sample silently."""

import ast

import pytest
from conftest import ROOT, SAMPLED, SHARED_GROUP, SHARED_MODULE, SHARED_RESULT, scope_of


def _functions(module: str) -> set[str]:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("nodeid", sorted({*SHARED_RESULT, *SHARED_GROUP, *SAMPLED}))
def test_every_named_test_function_exists(nodeid):
    module, function = nodeid.split("::")
    assert function in _functions(module), f"tests/conftest.py names {nodeid}, which is not a test function"


@pytest.mark.parametrize("module", SHARED_MODULE)
def test_every_named_module_exists(module):
    assert (ROOT / module).is_file()


def test_a_group_is_scheduled_as_one_unit_and_other_tests_alone():
    accuracy = [n for n in SHARED_GROUP if n.startswith("tests/test_accuracy.py")]
    assert len({scope_of(f"{n}[x]") for n in accuracy}) == 1
    assert scope_of("tests/test_accuracy.py::test_the_readmes_state_these_figures") == (
        "tests/test_accuracy.py::test_the_readmes_state_these_figures"
    )
    assert scope_of("tests/test_report.py::test_x[a]") == "tests/test_report.py"
    assert scope_of("tests/invariants/test_sweep.py::test_quick[runs]") == "tests/invariants/test_sweep.py::test_quick"
