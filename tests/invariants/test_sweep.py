"""The invariant sweep: every catalog model x task x precision x scenario x market x GPUs (the tool's
choice, or each card family pinned as owned) holds every invariant of ``checks.INVARIANTS``.

Four tiers (``space.TIERS``): ``quick`` runs in every test run (every pair of values of any two
dimensions but the model, every card pinned, every model with every task on the tool's choice of GPUs, a
triple of precisions of every model) on the default backend; ``cover`` (every pair of any two dimensions,
each model with each pinned card family too), ``pairs`` (each pinned row at every precision as well) and
``full``, the whole product on the python backend, are marked ``slow`` and run once in CI (``pytest -m
slow``). The slow tier also runs each case of ``cover`` and ``pairs`` again on the python backend, which
must conclude the same values (``backends-agree``); the default run holds the backends to the same
documents on examples and on generated workloads (tests/conformance), at a fraction of a tier's second run.

Run a part of the space with GPUSIZER_SWEEP (``model=deepseek-v3,qwen3-30b-a3b task=serve-vllm``), one
invariant with ``-k``; ``python -m tests.invariants`` prints every failure group with a workload.
GPUSIZER_SWEEP_JOBS sets the worker processes, GPUSIZER_SWEEP_BACKEND the backend of every tier. Under
pytest-xdist a tier's tests go to one worker (tests/conftest.py), so that each tier runs once.
"""

from __future__ import annotations

import itertools
import os

import pytest

from . import runner, space
from .checks import INVARIANTS

_reports: dict[str, runner.Report] = {}


def sweep(tier: str, compare: bool = False) -> runner.Report:
    """The tier's report, run once per test session (``compare``: each case on the python backend too)."""
    key = f"{tier}, backends compared" if compare else tier
    if key not in _reports:
        backend = os.environ.get("GPUSIZER_SWEEP_BACKEND") or ("python" if tier == "full" else None)
        report = runner.run(tier, space.only_from_env(), backend=backend, compare=compare)
        _reports[key] = report
        runner.REPORTS.append(report)
    return _reports[key]


def _holds(report: runner.Report, invariant: str) -> None:
    failed = report.failed(invariant)
    if failed:
        pytest.fail(
            f"{failed:,} of {report.checked(invariant):,} break '{invariant}'\n{report.explain(invariant, groups=25)}",
            pytrace=False,
        )


# Invariants that fail for a known, open defect: name -> pytest.mark.xfail(reason=..., strict=True), so that the
# check still runs and reports its cases, and the marker fails the day it passes. None at present.
KNOWN: dict[str, pytest.MarkDecorator] = {}


def _params(invariants):
    return [pytest.param(i, marks=KNOWN[i]) if i in KNOWN else i for i in invariants]


@pytest.mark.parametrize("invariant", _params(list(INVARIANTS)))
def test_quick(invariant):
    _holds(sweep("quick"), invariant)


@pytest.mark.slow
@pytest.mark.parametrize("invariant", _params([*INVARIANTS, runner.COMPARE]))
def test_cover(invariant):
    _holds(sweep("cover", compare=True), invariant)


@pytest.mark.slow
@pytest.mark.parametrize("invariant", _params([*INVARIANTS, runner.COMPARE]))
def test_pairs(invariant):
    _holds(sweep("pairs", compare=True), invariant)


@pytest.mark.slow
@pytest.mark.parametrize("invariant", _params(list(INVARIANTS)))
def test_full(invariant):
    _holds(sweep("full"), invariant)


# -- the space itself ----------------------------------------------------------------------------------------
def _covers_pairs_and_triples(cases, dims):
    """Every pair of values of any two of ``dims``, every model with every task on the tool's choice, a
    precision triple of every model, every card pinned, each case once."""
    vals = space.values()
    want = {(a, x, b, y) for a, b in itertools.combinations(dims, 2) for x in vals[a] for y in vals[b]}
    have = {(a, c.dims()[a], b, c.dims()[b]) for c in cases for a, b in itertools.combinations(dims, 2)}
    assert not want - have, sorted(want - have)[:10]
    auto = [c for c in cases if c.gpu == space.AUTO]
    assert {(c.model, c.task) for c in auto} == set(itertools.product(vals["model"], vals["task"]))
    triples: dict[tuple, set[str]] = {}
    for c in auto:
        triples.setdefault((c.model, c.task, c.scenario, c.market), set()).add(c.precision)
    assert {k[0] for k, p in triples.items() if p == set(space.PRECISIONS)} == set(vals["model"])
    assert {c.card for c in cases} - {None} == set(space.catalog("gpus"))
    assert len({c.id for c in cases}) == len(cases)


def test_cover_tier_covers_every_pair_and_a_triple_of_every_model():
    cases = list(space.cover())
    _covers_pairs_and_triples(cases, space.DIMENSIONS)
    assert len(cases) < len(list(space.pairs())) / 2


def test_quick_tier_covers_every_pair_but_the_models_and_a_triple_of_every_model():
    cases = list(space.quick())
    _covers_pairs_and_triples(cases, [d for d in space.DIMENSIONS if d != "model"])
    assert {c.model for c in cases if c.gpu != space.AUTO} == set(space.values()["model"])
    assert len(cases) < len(list(space.cover())) / 2 + 1


def test_pairs_tier_covers_every_pair_of_values():
    vals = space.values()
    cases = list(space.pairs())
    want = {(a, x, b, y) for a, b in itertools.combinations(space.DIMENSIONS, 2) for x in vals[a] for y in vals[b]}
    have = {(a, c.dims()[a], b, c.dims()[b]) for c in cases for a, b in itertools.combinations(space.DIMENSIONS, 2)}
    assert not want - have, sorted(want - have)[:10]
    # the tool's own choice: every model with every task, at every precision
    auto = {(c.model, c.task, c.precision) for c in cases if c.gpu == space.AUTO}
    assert auto == set(itertools.product(vals["model"], vals["task"], vals["precision"]))
    # every card of the catalog is pinned somewhere, and each workload is run at every precision
    assert {c.card for c in cases} - {None} == set(space.catalog("gpus"))
    rows: dict[tuple, set[str]] = {}
    for c in cases:
        rows.setdefault((c.model, c.task, c.scenario, c.market, c.card), set()).add(c.precision)
    assert all(p == set(space.PRECISIONS) for p in rows.values())
    assert len({c.id for c in cases}) == len(cases)


def test_full_tier_is_the_product():
    vals = space.values()
    cases = list(space.full())
    assert len(cases) == len({c.id for c in cases}) == len(list(itertools.product(*vals.values())))
    assert {c.card for c in cases} - {None} == set(space.catalog("gpus"))


def test_every_card_has_one_family():
    members = [g for cards in space.families().values() for g in cards]
    assert sorted(members) == sorted(space.catalog("gpus"))


@pytest.mark.parametrize("tier", ["cover", pytest.param("pairs", marks=pytest.mark.slow)])
def test_only_what_cannot_be_expressed_is_trimmed(recommender, tier):
    from engine import InputError

    # every workload of the tier that is not trimmed is one gpusizer reads ...
    refused = []
    for case in space.TIERS[tier]():
        if space.trimmed(case) is None:
            try:
                recommender.load(case.workload())
            except InputError as exc:
                refused.append(f"{case.id}: {exc.message}")
    assert not refused, "refused but not trimmed (add a trim with its reason):\n" + "\n".join(refused[:20])
    # ... and every trim is a combination it refuses
    for name in space.TRIMS:
        case = next(c for c in space.full() if space.trimmed(c) == name)
        with pytest.raises(InputError):
            recommender.load(case.workload())


def test_only_selects_by_dimension():
    only = space.parse_only("model=gpt2,bert-base-uncased task=serve-vllm;card=h100-sxm-80gb")
    cases = space.select(space.full(), only)
    assert cases and {c.model for c in cases} == {"gpt2", "bert-base-uncased"}
    assert {c.task for c in cases} == {"serve-vllm"} and {c.card for c in cases} == {"h100-sxm-80gb"}
    with pytest.raises(ValueError):
        space.parse_only("modle=gpt2")
