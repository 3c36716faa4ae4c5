"""gpusizer: a rules-based, explained GPU server recommendation engine.

``engine`` knows nothing about GPUs: the domain lives in rules/, knowledge/ and templates/.
Use ``recommend(path)``, or a ``Recommender`` for many workloads.

The layers, each importing only those below it (tests/test_layers.py checks):
``cli`` > ``serve`` > ``api`` > ``authoring`` > ``report`` > ``explain`` > ``run`` > ``backends`` > ``plan``
> ``load`` > ``errors``, ``format``. See docs/architecture.md.
"""

from .api import Recommender, recommend
from .errors import GpusizerError, InputError, RuleBug, RuleError
from .explain.result import Result

# the one place the version is written: pyproject.toml reads it from here (hatch dynamic version)
__version__ = "0.1.0"

__all__ = ["GpusizerError", "InputError", "Recommender", "Result", "RuleBug", "RuleError", "__version__", "recommend"]
