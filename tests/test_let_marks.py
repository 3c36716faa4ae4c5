"""A let's expression put in place of its name in a condition's ref is marked with the items it reads
(engine/lang/expand.py), and an Env that keeps lets' values computes it once for those items
(engine/lang/semantics.py, Env.lets): the value is the one the expression gives, and a fault is met
again, not kept.
"""

import ast

from engine.lang import expr as X
from engine.lang import semantics as S
from engine.lang.expand import Expander
from engine.lang.ir import Item, Ref, Span


def _item(iid, **fields):
    return Item(catalog="thing", id=iid, name=iid.upper(), fields=fields, sources=(), span=Span("test"))


def _ref(text, lets):
    parsed = {name: X.parse(source) for name, source in lets.items()}
    return Ref(Expander({}, {"p": "thing", "q": "thing"}, parsed).expr(X.parse(text)))


def _marks(ref):
    return [n.__dict__[X.LET_MARK] for n in ast.walk(ref.expr.tree) if X.LET_MARK in n.__dict__]


def test_a_let_with_work_in_it_is_marked_with_the_items_it_reads():
    ref = _ref("big + small + q.size", {"big": "(p.size * 2 + p.cost / 10) / (x + 1) + 1", "small": "p.size"})
    assert [(m.name, m.items) for m in _marks(ref)] == [("big", ("p",))]  # 'small' reads one field: not worth it


def test_an_env_that_keeps_lets_computes_one_once_for_its_items_and_gives_the_same_value():
    ref = _ref("big + q.size", {"big": "(p.size * 2 + p.cost / 10) / (x + 1) + 1"})
    a, b = _item("a", size=1, cost=10), _item("b", size=5, cost=10)
    q = _item("q", size=3)
    kept: dict = {}
    values = {"x": 1}
    for p in (a, b, a, b):
        with_lets = S.Env(values, {}, {"p": p, "q": q}, kept)
        without = S.Env(values, {}, {"p": p, "q": q})
        assert S.operand_value(ref, with_lets) == S.operand_value(ref, without)
    assert S.operand_value(ref, S.Env(values, {}, {"p": a, "q": q}, kept)) == (1 * 2 + 1) / 2 + 1 + 3
    assert len(kept) == 2  # one value for each p, whatever q is


def test_a_let_that_fails_is_not_kept_and_fails_again():
    ref = _ref("big", {"big": "(p.size * 2 + p.cost / 10) / x + 1"})
    p = _item("a", size=1, cost=10)
    kept: dict = {}
    for _ in range(2):
        assert S.operand_value(ref, S.Env({"x": 0}, {}, {"p": p}, kept)) is S.ABSENT  # division by zero
    assert kept == {}
