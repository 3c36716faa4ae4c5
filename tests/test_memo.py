"""A runner keeps what its runs computed for the runs that follow (``session.RuleMemo``: a rule's firings by the
values it read; ``session.LetMemo``: a let group's values by the values and items it read; the python backend's
join bindings by the values their conditions read). A run that reuses them concludes, fires and explains exactly
what the same run concludes with nothing kept: every value, every firing with its items, lets and outputs, in the
same order, and every failure with the same message.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine import GpusizerError, Recommender
from engine.backends import get_backend
from engine.run.combine import canonical
from tests.invariants import space

ROOT = Path(__file__).resolve().parent.parent
GRID = ROOT / "examples" / "sweeps" / "open-models.yaml"


def _grid(rec: Recommender) -> list[str]:
    from engine.sweep import spec as S

    spec = S.load_spec(GRID, rec)
    return [yaml.safe_dump(spec.workload(c)) for c in S.cases(spec, rec.rulebase.sha256, ())]


def _space(step: int, start: int = 0) -> list[str]:
    return [c.yaml() for c in list(space.quick())[start::step]]


def _seen(rec: Recommender, text: str) -> object:
    """Everything a run made, as text: its values and each firing; or the failure's message."""
    try:
        outcome = rec.runner.run(rec.load_text(text, "case"))
    except GpusizerError as exc:
        return ("failed", exc.render())
    firings = [
        (f.rule, f.stratum, canonical(f.items), canonical(dict(f.attrs)), canonical(f.lets_dict()))
        + (canonical(f.outputs),)
        for f in outcome.firings
    ]
    return canonical(dict(outcome.values)), firings


def _compare(backend: str, texts: list[str]) -> dict[str, int]:
    with Recommender(backend=get_backend(backend)) as warm, Recommender(backend=get_backend(backend)) as cold:
        for i, text in enumerate(texts):
            cold.runner.forget()
            assert _seen(warm, text) == _seen(cold, text), f"case {i}:\n{text}"
        return {"hits": warm.runner.memo.hits, "misses": warm.runner.memo.misses}


@pytest.mark.parametrize("backend", ["durable", "python"])
def test_a_sweep_grid_run_on_kept_firings_is_the_run_alone(backend):
    """The shipped grid (90 serving cases that differ in a model, a precision, the users or the market): most
    rules read none of what changed from one case to the next, and their firings are reused."""
    with Recommender() as rec:
        texts = _grid(rec)
    seen = _compare(backend, texts)
    assert seen["hits"] > 3 * seen["misses"], seen  # the memo is used: the test compares something


@pytest.mark.parametrize("backend", ["durable", "python"])
def test_runs_across_the_workload_space_on_kept_firings_are_the_runs_alone(backend):
    """A tenth of the invariant sweep's quick tier (every model, task, precision, scenario, market and card
    family take turns; pinned and owned cards, failures included), one after another on one runner."""
    texts = _space(10)
    seen = _compare(backend, texts)
    assert seen["hits"] > seen["misses"], seen


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["durable", "python"])
def test_runs_across_the_whole_quick_tier_on_kept_firings_are_the_runs_alone(backend):
    """The rest of the quick tier, in the same way."""
    texts = [t for k in range(1, 10) for t in _space(10, k)]
    _compare(backend, texts)


def test_forget_makes_the_next_run_compute_everything():
    """After forget() a runner reuses nothing: its next run misses for every rule it asks about."""
    with Recommender(backend=get_backend("python")) as rec:
        text = _grid(rec)[0]
        rec.runner.run(rec.load_text(text, "case"))
        before = rec.runner.memo.misses
        rec.runner.run(rec.load_text(text, "case"))
        assert rec.runner.memo.misses == before  # the same case again: every rule's firings were kept
        rec.runner.forget()
        hits = rec.runner.memo.hits
        rec.runner.run(rec.load_text(text, "case"))
        assert rec.runner.memo.hits == hits


def test_a_rule_keeps_its_last_keys_only():
    """A rule keeps the firings of its last RuleMemo.KEYS different values: memory stays bounded in a sweep of
    any size."""
    from engine.run.session import RuleMemo

    memo = RuleMemo()
    for k in range(RuleMemo.KEYS + 5):
        memo.put("r", (k,), [])
    assert memo.get("r", (0,)) is None and memo.get("r", (RuleMemo.KEYS + 4,)) == []
    assert sum(memo.get("r", (k,)) is not None for k in range(RuleMemo.KEYS + 5)) == RuleMemo.KEYS
