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
