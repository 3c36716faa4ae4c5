"""Condition scheduling (``lang.semantics.scheduled``): the python backend tries a rule's conditions in an
order that prunes early, and it must match exactly what the written order matches, in the same order."""

from __future__ import annotations

import pytest

from engine import Recommender
from engine.backends import get_backend
from engine.backends import python as P
from engine.lang import semantics as S
from engine.lang.ir import ItemCond


def _checked(conditions, scheduled):
    """The scheduled order is the written one's conditions, joins in their order, each other condition after
    the join of every alias it reads, and one that reads none before every join."""
    assert sorted(map(id, scheduled)) == sorted(map(id, conditions))
    joins = [c for c in conditions if isinstance(c, ItemCond)]
    assert [c for c in scheduled if isinstance(c, ItemCond)] == joins
    aliases = frozenset(j.alias for j in joins)
    at = {c.alias: i for i, c in enumerate(scheduled) if isinstance(c, ItemCond)}
    for i, c in enumerate(scheduled):
        if isinstance(c, ItemCond):
            continue
        read = S.aliases_read(c, aliases)
        assert all(at[a] < i for a in read)
        if not read:
            assert all(i < j for j in at.values())


def test_every_shipped_variant_is_scheduled_as_the_rule_says(rulebase):
    moved = 0
    for rule in rulebase.rules.values():
        for v in rule.variants:
            scheduled = S.scheduled(v.conditions)
            _checked(v.conditions, scheduled)
            moved += scheduled != tuple(v.conditions)
    assert moved > 20  # the candidate rules' own conditions come after their bases' joins as written


def test_a_condition_on_an_attribute_moves_before_the_joins_and_one_on_an_item_after_its_join(rulebase):
    """gpu-candidate-tensor-parallel: 'task: inference' is written after the base's joins (card, platform, GPUs
    a node, CPUs, DIMMs, drives, adapters) and is tried before any of them; the excluded-card test right after
    the card."""
    v = rulebase.rules["gpu-candidate-tensor-parallel"].variants[0]
    scheduled = S.scheduled(v.conditions)
    first_join = next(i for i, c in enumerate(scheduled) if isinstance(c, ItemCond))
    written_first_join = next(i for i, c in enumerate(v.conditions) if isinstance(c, ItemCond))
    task = next(c for c in v.conditions if getattr(c, "attribute", None) == "task")
    assert list(v.conditions).index(task) > written_first_join and scheduled.index(task) < first_join


EXAMPLES = [
    "examples/cluster-llama2-70b-pretrain.yaml",
    "examples/llama2-70b-chat.yaml",
    "examples/serving-qwen2.5-7b-32-users.yaml",
    "examples/owned-rtx3090-llama3-8b-lora.yaml",
    "examples/vision-resnet50-imagenet-training.yaml",
    "examples/light-inference-bert-t4.yaml",
]


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_scheduled_order_matches_the_same_bindings_in_the_same_order(rulebase, monkeypatch, example):
    """Every rule of every step of a run, matched both ways on the same values: the same item bindings."""
    compared = []

    def match(self, step, skip=frozenset()):
        env = S.Env(self._values, self._compiled.catalogs, {})
        expected = []
        for rule in self._compiled.at.get(step, ()):
            for v in rule.variants:
                written = [{a: i.id for a, i in m.items()} for m in S.matches(v.conditions, env, v.required)]
                ordered = [
                    {a: i.id for a, i in m.items()} for m in S.matches(S.scheduled(v.conditions), env, v.required)
                ]
                assert ordered == written, (rule.id, v.index)
                compared.append(len(written))
                expected += [(rule.id, v.index, tuple((a, m[a]) for a, _ in v.items)) for m in written]
        # the backend itself (which also asks a condition that reads no item once a step) finds the same
        found = original(self, step, skip)
        assert [(m.rule, m.variant, m.items) for m in found] == expected, step
        return found

    original = P.PythonSession.match
    monkeypatch.setattr(P.PythonSession, "match", match)
    with Recommender(rulebase=rulebase, backend=get_backend("python")) as rec:
        rec.recommend(example)
    assert len(compared) > 300 and sum(compared) > 50


def _reference(conditions, env):
    """Matching as the language defines it, with nothing kept and no index: every item of every join
    tried against every test, in catalog and written order."""

    def go(i, env):
        if i == len(conditions):
            yield {a: item.id for a, item in env.items.items()}
            return
        c = conditions[i]
        if isinstance(c, ItemCond):
            for item in env.catalogs[c.catalog].items.values():
                bound = env.with_item(c.alias, item)
                if S.item_passes(c.where, item, bound):
                    yield from go(i + 1, bound)
            return
        if isinstance(c, S.Not) and isinstance(c.inner, ItemCond):
            inner = c.inner
            if any(
                S.item_passes(inner.where, item, env.with_item(inner.alias, item))
                for item in env.catalogs[inner.catalog].items.values()
            ):
                return
        elif not S.holds(c, env):
            return
        yield from go(i + 1, env)

    return list(go(0, env))


@pytest.mark.parametrize("example", EXAMPLES)
def test_joins_kept_by_their_operands_values_match_what_the_language_defines(rulebase, monkeypatch, example):
    """The backends keep, from run to run, which items passed a join whose tests do not read its own
    item, by the values its operands computed (``semantics.matches``' memo): every rule of every step
    of two runs matches the same bindings, in the same order, as a matcher that keeps nothing, and the
    kept joins test fewer items (the smallest CPU of a family is found once for each number of cores
    wanted)."""
    tried = {"kept": 0, "not kept": 0}
    passes = S._Join.passes
    counting = {"on": "kept"}

    def counted(self, item):
        tried[counting["on"]] += 1
        return passes(self, item)

    memo: dict = {}  # kept across the steps and the runs, as the backends keep it

    def match(self, step, skip=frozenset()):
        env = S.Env(self._values, self._compiled.catalogs, {})
        for rule in self._compiled.at.get(step, ()):
            for v in rule.variants:
                counting["on"] = "kept"
                kept = [{a: i.id for a, i in m.items()} for m in S.matches(v.conditions, env, v.required, memo)]
                counting["on"] = "not kept"
                with monkeypatch.context() as patched:
                    patched.setattr(S._Join, "outcome_key", lambda self: None)
                    alone = [{a: i.id for a, i in m.items()} for m in S.matches(v.conditions, env, v.required)]
                want = _reference(v.conditions, env) if all(n in env.values for n in v.required) else []
                assert kept == alone == want, (rule.id, v.index)
        return original(self, step, skip)

    original = P.PythonSession.match
    monkeypatch.setattr(S._Join, "passes", counted)
    monkeypatch.setattr(P.PythonSession, "match", match)
    with Recommender(rulebase=rulebase, backend=get_backend("python")) as rec:
        rec.recommend(example)
        rec.recommend("examples/serving-qwen2.5-7b-32-users.yaml")  # a second run, on what the first kept
    assert 0 < tried["kept"] < tried["not kept"]


def test_a_join_is_kept_by_its_operands_types_and_values():
    """1, 1.0 and true are three operands, and so are 0.0 and -0.0 (an operator may tell them apart); a
    list, a record or a number that is not finite is not kept at all."""
    keys = [S._value_key(v) for v in (1, 1.0, True, 0.0, -0.0, "1", None, S.ABSENT)]
    assert len(set(keys)) == len(keys)
    assert all(S._value_key(v) is None for v in ([1], {"a": 1}, float("inf"), float("nan")))


@pytest.mark.parametrize("backend", ["python", "durable"])
def test_a_memo_past_its_limit_is_emptied_and_the_runs_conclude_the_same(rulebase, monkeypatch, backend):
    def conclusions(rec):
        return [
            {k: c.value for k, c in rec.recommend(e).conclusions.items()}
            for e in ("examples/llama2-70b-chat.yaml", "examples/cluster-llama2-70b-pretrain.yaml")
        ]

    with Recommender(rulebase=rulebase, backend=get_backend(backend)) as rec:
        want = conclusions(rec)
        assert rec.runner.compiled.memo
    monkeypatch.setattr(S, "MEMO_LIMIT", 3)
    with Recommender(rulebase=rulebase, backend=get_backend(backend)) as rec:
        assert conclusions(rec) == want
        assert len(rec.runner.compiled.memo) < 200  # emptied again and again, not grown to the first run's size
