"""The sweep's own machinery: each check holds on a sound recommendation and fails on one doctored to
break it; the catalog search finds what fits and only that; a crash is told from an input error.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from types import SimpleNamespace

import pytest

from . import brute, checks, runner, space
from .space import Case

SOUND = Case("llama-2-7b", "inference", "bf16", "sme", "global", space.AUTO)
OWNED = Case("llama-2-7b", "training", "bf16", "sme", "global", "nvidia-hopper-datacenter-board", "h100-sxm-80gb")


@pytest.fixture(scope="module")
def worker(rulebase):
    w = runner.Worker(None, False, rulebase=rulebase)
    yield w
    w.close()


@pytest.fixture(scope="module")
def sound(worker):
    worker.inspect(SOUND.model)
    return worker.rec.recommend(SOUND.workload())


def doctored(result, values=None, conclusions=None):
    """The result with some final values (and conclusions) replaced."""
    v = dict(result.values)
    v.update(values or {})
    c = dict(result.conclusions)
    for attr, value in (conclusions or {}).items():
        c[attr] = replace(c[attr], value=value)
        v[attr] = value
    return SimpleNamespace(values=v, conclusions=c, firings=result.firings, rulebase=result.rulebase)


def failures(name, case, result, ctx):
    _, fn = checks.CHECKS[name]
    return list(fn(case, result, ctx))


def test_a_sound_recommendation_holds_every_invariant(worker, sound):
    checked, found = checks.run_checks(SOUND, sound, worker.ctx)
    assert found == []
    assert "machine-offered" in checked and "none-fits-confirmed" not in checked


def test_none_fits_is_checked_against_the_catalog(worker, sound):
    gone = {k: v for k, v in sound.values.items() if k not in ("gpu.model", "gpu.selection")}
    fake = SimpleNamespace(values=gone, conclusions=sound.conclusions, firings=sound.firings, rulebase=sound.rulebase)
    found = failures("none-fits-confirmed", SOUND, fake, worker.ctx)
    assert len(found) == 1 and "holds it" in found[0].message
    # a need no catalog machine holds (beyond every board, in a tower): confirmed
    huge = {**gone, "memory.replicated_gb": 500.0, "scenario.effective": "personal"}
    fake.values = huge
    assert failures("none-fits-confirmed", SOUND, fake, worker.ctx) == []


def test_parameters_must_agree_with_inspect_model(worker, sound):
    assert failures("params-agree", SOUND, sound, worker.ctx) == []
    found = failures(
        "params-agree", SOUND, doctored(sound, {"model.params": 7e9, "perf.active_params": -1.0}), worker.ctx
    )
    assert {f.key for f in found} == {"model.params", "perf.active_params"}


def test_owned_gpus_are_kept(worker):
    worker.inspect(OWNED.model)
    result = worker.rec.recommend(OWNED.workload())
    assert failures("owned-pin-kept", OWNED, result, worker.ctx) == []
    found = failures("owned-pin-kept", OWNED, doctored(result, {"gpu.count": 8, "cost.gpus": 120000}), worker.ctx)
    assert {f.key for f in found} == {"model or count changed", "owned GPUs billed"}


def test_a_quoted_number_must_be_the_conclusion_it_names(worker, sound):
    assert failures("text-numbers", SOUND, sound, worker.ctx) == []
    # change the final value of every attribute some text quotes whole: each quote now disagrees
    quoted = set()
    for attr, _, firing in checks.texts(sound):
        template = checks._template_of(sound.rulebase, firing.rule, attr)
        for part in template.parts if template else ():
            named = None if isinstance(part, str) else checks._unwrap(part.source)
            if named and named[0] in sound.values and named[0] in sound.rulebase.attributes:
                quoted.add(named[0])
    assert quoted, "the sound case quotes no conclusion in its warnings and notes"
    changed = {a: (sound.values[a] * 3 + 1 if checks._is_num(sound.values[a]) else "other") for a in quoted}
    found = failures("text-numbers", SOUND, doctored(sound, changed), worker.ctx)
    assert {f.key.split(": ", 1)[1] for f in found} >= quoted


def test_unwrap_and_agreement():
    assert checks._unwrap("memory.vram_required_gb") == ("memory.vram_required_gb", None)
    assert checks._unwrap("round(p.ttft_s, 2)") == ("p.ttft_s", 2)
    assert checks._unwrap("text(round(budget.limit))") == ("budget.limit", 0)
    assert checks._unwrap("max(p.gpus_needed - p.count, 0)") is None
    assert checks._agrees("682.7", 682.74, None) and not checks._agrees("682.7", 683.1, None)
    assert checks._agrees("68,976,648,192", 68976648192, None) and checks._agrees("6.19e+12", 6.1896e12, None)
    assert checks._agrees("0.48", 0.4797, 2) and not checks._agrees("0.6", 0.4797, None)


def test_cost_machine_and_card_checks_fail_on_a_doctored_machine(worker, sound):
    v = sound.values
    assert failures("cost-sum", SOUND, doctored(sound, {"cost.total": v["cost.total"] + 1000}), worker.ctx)
    assert failures("machine-offered", SOUND, doctored(sound, {"platform.model": "desktop-am5"}), worker.ctx)
    missing = doctored(sound)
    del missing.values["cpu.model"]
    assert failures("machine-offered", SOUND, missing, worker.ctx)
    assert failures("fits-card", SOUND, doctored(sound, {"memory.per_gpu_gb": 1000.0}), worker.ctx)
    assert failures("fits-card", SOUND, doctored(sound, {"gpu.vram_total_gb": 1.0}), worker.ctx)
    assert failures("ram-layout", SOUND, doctored(sound, {"ram.system_gb": v["ram.system_gb"] * 2}), worker.ctx)
    assert failures("currency", SOUND, doctored(sound, {"price.currency": "CNY"}), worker.ctx)


def test_numbers_and_alternatives_fail_when_doctored(worker, sound):
    assert failures("numbers-sane", SOUND, doctored(sound, conclusions={"memory.weights_gb": -1.0}), worker.ctx)
    assert failures("numbers-sane", SOUND, doctored(sound, conclusions={"memory.weights_gb": float("nan")}), worker.ctx)
    assert failures("alternatives-labelled", SOUND, sound, worker.ctx) == []
    cheapest = copy.deepcopy(sound.values["gpu.cheapest"])
    label = "saves 1 USD" if sound.values["gpu.cheapest_note"] == "the choice" else "the choice"
    found = failures("alternatives-labelled", SOUND, doctored(sound, {"gpu.cheapest_note": label}), worker.ctx)
    assert [f.key for f in found] == ["gpu.cheapest: label"]
    cheapest["cost"] = sound.values["gpu.selection"]["cost"] + 100
    found = failures("alternatives-labelled", SOUND, doctored(sound, {"gpu.cheapest": cheapest}), worker.ctx)
    assert "cheapest costs more" in {f.key for f in found}


def _outcome(precision, total, gpu="h100-sxm-80gb"):
    case = replace(SOUND, precision=precision)
    summary = {"machine": True, "total": total, "currency": "USD", "gpu": gpu, "count": 1}
    summary.update(platform="p", parts={}, scenario="sme")
    return checks.Outcome(case, "ok", summary=summary)


def test_quantizing_may_not_raise_the_cost():
    compared, found = checks.quantizing([_outcome("bf16", 100), _outcome("fp8", 90), _outcome("int4", 95)])
    assert compared == 3 and [(c.precision, f.key) for c, f in found] == [("fp8", "fp8->int4: same GPUs")]
    # a bf16 card without fp8 leaves fp8 free to cost more
    compared, found = checks.quantizing([_outcome("bf16", 100, "a100-sxm-80gb"), _outcome("fp8", 150)])
    assert (compared, found) == (0, [])


def test_the_search_finds_what_fits_and_only_that():
    base = {"task": "inference", "precision": "bf16", "market": "global", "scenario.effective": "sme"}
    fit = brute.find_fit({**base, "memory.replicated_gb": 1.0, "memory.sharded_gb": 100.0})
    assert fit is not None and fit.per_gpu_gb <= space.catalog("gpus")[fit.gpu]["vram_bytes"] / 1e9
    # too much for one card to hold whole: nothing
    assert brute.find_fit({**base, "memory.replicated_gb": 400.0, "memory.sharded_gb": 1.0}) is None
    # a tower takes no board: a need beyond four cards of 96 GB has no personal machine
    assert (
        brute.find_fit({**base, "scenario.effective": "personal", "memory.replicated_gb": 1, "memory.sharded_gb": 800})
        is None
    )
    assert brute.find_fit({**base, "memory.replicated_gb": 1, "memory.sharded_gb": 800}) is not None
    # owned: the pinned card at the pinned count, whatever the market
    pinned = {**base, "market": "cn", "request.gpu_model": "h100-sxm-80gb", "request.gpu_count": 4}
    assert brute.find_fit({**pinned, "memory.replicated_gb": 1, "memory.sharded_gb": 300}).count == 4
    assert brute.find_fit({**pinned, "memory.replicated_gb": 1, "memory.sharded_gb": 400}) is None
    # a passive card needs a server's airflow; an open-air one does not go in a server
    l40s = {**base, "request.gpu_model": "l40s-48gb", "request.gpu_count": 1, "memory.replicated_gb": 1}
    assert brute.find_fit({**l40s, "memory.sharded_gb": 10, "scenario.effective": "personal"}) is None
    assert brute.find_fit({**l40s, "memory.sharded_gb": 10}) is not None
    assert "h100-sxm-80gb" not in brute.allowed_cards({**base, "market": "cn"})
    assert "v100-sxm2-32gb" not in brute.allowed_cards({**base, "precision": "fp8"})


def test_the_runner_tells_a_crash_from_an_input_error(worker, monkeypatch):
    from engine import InputError, RuleError

    def raising(exc):
        def recommend(_):
            raise exc

        return recommend

    cases = {
        "crash": [RuleError("failed", rule="r", help="fix it"), ValueError("x"), InputError("bad")],
        "input-error": [InputError("bad", help="do this")],
    }
    for status, excs in cases.items():
        for exc in excs:
            monkeypatch.setattr(worker.rec, "recommend", raising(exc))
            out = worker.run(SOUND)
            assert out.status == status, exc
            assert bool(out.failures) == (status == "crash")
