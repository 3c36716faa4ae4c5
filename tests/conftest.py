import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def rulebase():
    from engine.plan.rulebase import load_rulebase

    return load_rulebase()


@pytest.fixture(scope="session")
def recommender(rulebase):
    from engine import Recommender

    return Recommender(rulebase=rulebase)


# -- pytest-xdist: one worker per invariant sweep tier -----------------------------------------------------
# The parametrized tests of these functions read one result that their process computes once (an invariant
# sweep tier over its own pool of processes): each function's cases go to one worker, so that the tier runs
# once. Every other test is a unit of its own, spread over the workers as they free up.
SHARED_RESULT = (
    "tests/invariants/test_sweep.py::test_quick",
    "tests/invariants/test_sweep.py::test_cover",
    "tests/invariants/test_sweep.py::test_pairs",
    "tests/invariants/test_sweep.py::test_full",
)


# Modules whose tests read one expensive module-scoped fixture (every example rendered, the speed benchmark's
# points run, the servers and browser of the web tests, a recommender on every backend): their tests go to one
# worker, so that it is built once rather than once on each worker that happens to draw one of them. For the
# backends' conformance it also keeps the slow tier's network-joins serving examples (some 10 GB each) from
# running two at once, one on each worker, which a machine of 24 GB does not hold.
SHARED_MODULE = (
    "tests/conformance/test_differential.py",
    "tests/test_report.py",
    "tests/test_speed_accuracy.py",
    "tests/test_serve_page.py",
    "tests/test_serving.py",
    "tests/test_serve.py",
    "tests/test_serve_sweep.py",
)


# Test functions of an ordinary module that read one result their process computes once (a module-level
# cache or fixture that a few of its tests share): each group goes to one worker, the module's other tests
# spread as usual.
GROUPS = {
    "accuracy: each results file sized once": (
        "tests/test_accuracy.py::test_stated_accuracy_holds",
        "tests/test_accuracy.py::test_family_cases_are_all_within_five_percent",
        "tests/test_accuracy.py::test_the_committed_comparisons_are_current",
    ),
    "authoring: one full 'gpusizer test' run": (
        "tests/test_authoring.py::test_rule_tests_reach_full_coverage",
        "tests/test_authoring.py::test_shipped_examples_keep_their_expected_conclusions",
    ),
    "vision: the measured cases sized once": (
        "tests/test_vision.py::test_every_measured_case_is_within_five_percent",
        "tests/test_vision.py::test_the_stated_figures_hold",
        "tests/test_vision.py::test_the_committed_comparison_is_current",
    ),
}
SHARED_GROUP = {function: group for group, functions in GROUPS.items() for function in functions}


def scope_of(nodeid: str) -> str:
    """The unit a test is scheduled in: its function for those of SHARED_RESULT, its group for those of
    SHARED_GROUP, its module for those of SHARED_MODULE, else the test itself."""
    function = nodeid.split("[", 1)[0]
    if function in SHARED_RESULT:
        return function
    if function in SHARED_GROUP:
        return SHARED_GROUP[function]
    module = nodeid.split("::", 1)[0]
    return module if module in SHARED_MODULE else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return Scheduling(config, log)


# -- the default run and the slow tier over one space -------------------------------------------------------
# Tests that hold one check over a whole space (the attack corpus, every MoE x engine x precision x market, every
# owned card x task, ...): the default run takes every n-th of their cases, in collection order, and the slow tier
# (CI's `pytest -m slow`, once) the rest, so that CI runs all of them. n is prime, so that over a product of
# parameters the cases taken cycle through each parameter's values rather than repeat a few (a stride of 4 over
# markets x precisions would take one market only): the default run meets every MoE, engine, precision and market,
# every vision model, task and precision, and 36 of the 44 owned cards with each task.
SAMPLED = {
    "tests/test_attacks.py::test_attack": 5,
    "tests/test_attacks.py::test_a_forked_case_ends_as_in_a_fresh_interpreter": 5,
    "tests/test_serving_space.py::test_every_moe_is_served_by_every_engine": 7,
    "tests/test_serving_space.py::test_gpus_the_user_owns_are_used_as_given_or_said_to_be_short": 5,
    "tests/test_vision.py::test_every_model_task_and_precision_gets_a_machine": 7,
    "tests/test_vision_decode.py::test_every_chosen_vision_machine_is_fed": 3,
    "tests/conformance/test_differential.py::test_every_example_is_the_same_under_every_backend": 3,
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the cases of SAMPLED that the default run leaves out ``slow`` (before ``-m`` selects); a case named
    on the command line with its parameters runs as asked."""
    named = {arg.replace("\\", "/") for arg in config.args if "[" in arg}
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        function = item.nodeid.split("[", 1)[0]
        if function in SAMPLED and "slow" not in item.keywords and item.nodeid not in named:
            groups.setdefault(function, []).append(item)
    for function, members in groups.items():
        for i, item in enumerate(members):
            if i % SAMPLED[function]:
                item.add_marker(pytest.mark.slow)


# -- the invariant sweeps' closing counts, pass or fail ------------------------------------------------------
# Here rather than in tests/invariants/conftest.py: under pytest-xdist the controller, which prints the
# summary, collects nothing and so never loads a conftest below this one. A worker hands its counts over.
_from_workers: list[tuple[str, str]] = []


def _sweeps() -> list[tuple[str, str]]:
    for name, module in list(sys.modules.items()):
        if name.endswith("invariants.runner"):
            reports = getattr(module, "REPORTS", [])
            return [(r.tier + (", backends compared" if r.compared else ""), r.counts()) for r in reports]
    return []


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker
        workeroutput["invariant_sweeps"] = _sweeps()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _from_workers.extend(tuple(x) for x in getattr(node, "workeroutput", {}).get("invariant_sweeps", []))


def pytest_terminal_summary(terminalreporter):
    for tier, counts in _sweeps() + _from_workers:
        terminalreporter.write_sep("-", f"invariant sweep: tier {tier}")
        terminalreporter.write_line(counts)
