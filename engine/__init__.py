"""gpusizer: a rules-based, explained GPU server recommendation engine.

``engine`` knows nothing about GPUs: the domain lives in rules/, knowledge/
and templates/. Use ``recommend(path)`` or a ``Recommender`` for many workloads.
"""
from .api import Recommender, recommend
from .errors import GpusizerError, InputError, RuleError
from .result import Result

__version__ = "0.1.0"
__all__ = ["recommend", "Recommender", "Result", "GpusizerError", "InputError", "RuleError", "__version__"]
