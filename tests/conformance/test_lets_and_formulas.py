"""A condition that reads the rule's own let values, and named formulas called from conditions,
lets and conclusions: the same answers under every backend (see engine/lang/expand.py).
"""

import pytest

from engine import InputError

from .conftest import hit


def _matched(rec, values, attr="hits"):
    return sorted(rec.recommend({"name": "w", **values}).get(attr) or [])


def test_a_condition_reads_a_let_of_attributes(build):
    rule = hit("twice", "  - x: {exists: true}\n  - y: {gt: {ref: twice}}", "let:\n  twice: x * 2\n")
    rec = build({"twice": rule})
    assert _matched(rec, {"x": 3, "y": 7}) == ["twice"]
    assert _matched(rec, {"x": 3, "y": 6}) == []
    assert _matched(rec, {"y": 7}) == []  # the let reads x, which has no value: the ref cannot be computed


def test_a_let_reads_a_joined_item_and_a_later_join_tests_against_it(build):
    """The let reads p (joined first); q's where-clause reads the let: pairs where q is more than
    twice p (the same pairs as writing the expression in the ref).
    """
    rule = """id: pair
summary: pairs where the second is more than twice the first.
when:
  - item: thing
    as: p
  - item: thing
    as: q
    where:
      size: {gt: {ref: doubled}}
let:
  doubled: p.size * 2
then:
  hits: "{p.id}<{q.id}"
source: {doc: test}
"""
    assert _matched(build({"pair": rule}), {}) == ["a<b", "a<c"]


def test_lets_that_read_lets_and_name_one_field(build):
    """A let that is one item field (pushed into durable-rules' network as a reference), and a let
    that reads another let, each read by a condition.
    """
    rule = """id: same-label
summary: things whose label is the text given, and whose cost is under the limit.
when:
  - item: thing
    as: t
  - s: {ref: label}
  - x: {gt: {ref: cost_plus}}
let:
  label: t.label
  cost: t.cost
  cost_plus: cost + 1
then:
  hits: "{t.id}"
source: {doc: test}
"""
    rec = build({"same-label": rule})
    assert _matched(rec, {"s": "mid", "x": 100}) == ["b"]
    assert _matched(rec, {"s": "mid", "x": 11}) == []  # b costs 10: 11 is not above 10 + 1
    assert _matched(rec, {"s": "big", "x": 4.5}) == ["c"]


def test_a_let_in_a_negated_join(build):
    rule = """id: none-bigger
summary: no thing is bigger than twice x.
when:
  - x: {exists: true}
  - not: {item: thing, as: t, where: {size: {gt: {ref: limit}}}}
let:
  limit: x * 2
then:
  hits: none-bigger
source: {doc: test}
"""
    rec = build({"none-bigger": rule})
    assert _matched(rec, {"x": 5}) == ["none-bigger"]
    assert _matched(rec, {"x": 4.9}) == []


def test_a_let_read_before_its_item_is_joined_is_a_load_error(build):
    rule = """id: early
summary: reads a let of p before p is joined.
when:
  - x: {gt: {ref: doubled}}
  - item: thing
    as: p
let:
  doubled: p.size * 2
then:
  hits: early
source: {doc: test}
"""
    with pytest.raises(InputError) as info:
        build({"early": rule})
    d = info.value.first
    assert (d.file, d.line) == ("rules/t/early.yaml", 4)
    assert d.message == "let 'doubled' (line 8) is read here before 'p' is joined: it reads p.size"
    assert "move this condition after the join 'as: p'" in (d.help or "")


def test_a_condition_cannot_read_a_text_let(build):
    rule = hit("texty", "  - s: {ref: words}", "let:\n  words: \"'a' + 'b'\"\n  shown: \"{words}!\"\n")
    build({"texty": rule})  # an expression let that gives text is a value like any other
    bad = hit("texty", "  - s: {ref: shown}", 'let:\n  shown: "{s}!"\n')
    with pytest.raises(InputError, match="a condition reads let 'shown', which is a text template"):
        build({"texty": bad})


def test_formulas_in_conditions_lets_and_conclusions(build):
    rule = """id: formulas
summary: formulas everywhere.
when:
  - x: {exists: true}
  - item: thing
    as: t
    where:
      size: {gt: {ref: double(x)}}
  - y: {lt: {ref: "bigger(t, 1)"}}
let:
  twice: twice_bigger(t)
then:
  hits: "{t.id}:{twice}:{double(twice)}"
source: {doc: test}
"""
    rec = build({"formulas": rule})
    # size > 2x and y < size + 1: with x = 2, b (5) and c (10) pass the join; y = 6 keeps c only
    assert _matched(rec, {"x": 2, "y": 6}) == ["c:20:40"]
    assert _matched(rec, {"x": 2, "y": 5.5}) == ["b:10:20", "c:20:40"]


def test_explain_shows_each_formula_call(build):
    rule = """id: big
summary: a thing's size, doubled.
when:
  - item: thing
    as: t
    where: {id: c}
let:
  grown: bigger(t, 2)
then:
  level1: double(grown)
source: {doc: test}
"""
    r = build({"big": rule}).recommend({"name": "w"})
    assert r["level1"] == 24
    step = r.explain("level1")
    calls = step["binding"][0]["formulas"]
    assert [(c["formula"], c["call"], c["args"], c["value"], c["unit"]) for c in calls] == [
        ("bigger", "bigger(t, 2)", {"t": "c", "by": 2}, 12, "things"),
        ("double", "double(grown)", {"v": 12}, 24, "things"),
    ]
    assert calls[0]["sources"] == [{"doc": "test"}] and calls[0]["description"].startswith("a thing's size")
