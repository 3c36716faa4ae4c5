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
    "tests/invariants/test_sweep.py::test_cover",
    "tests/invariants/test_sweep.py::test_pairs",
    "tests/invariants/test_sweep.py::test_full",
)


def scope_of(nodeid: str) -> str:
    """The unit a test is scheduled in: its function for those of SHARED_RESULT, else the test itself."""
    function = nodeid.split("[", 1)[0]
    return function if function in SHARED_RESULT else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return Scheduling(config, log)
