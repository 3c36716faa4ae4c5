"""The rule language's meaning, held against every backend (see engine/lang/semantics.py).

Each table names a condition, the workload values it is tried on, and whether it holds. The
same rules run under each backend; a backend that differs from the expectation fails here.
"""

import pytest

from engine import InputError, RuleError

from .conftest import hit

ABSENT = object()


def _hits(rec, values):
    doc = {"name": "w"}
    doc.update({k: v for k, v in values.items() if v is not ABSENT})
    return set(rec.recommend(doc).get("hits") or [])


def _table(build, cases):
    """cases: [(rule id, condition yaml, [(values, holds), ...]), ...] run as one rulebase."""
    rec = build({rid: hit(rid, cond) for rid, cond, _ in cases})
    for rid, cond, trials in cases:
        for values, holds in trials:
            got = rid in _hits(rec, values)
            assert got == holds, f"{rid} ({cond.strip()}) with {values}: expected {'holds' if holds else 'fails'}"


NUMBER = [
    ("eq", "  - x: 5", [({"x": 5}, True), ({"x": 5.0}, True), ({"x": 6}, False), ({"x": ABSENT}, False)]),
    ("eq-text-vs-number", "  - sc: '5'", [({"sc": 5}, False), ({"sc": "5"}, True)]),
    ("ne", "  - x: {ne: 5}", [({"x": 5}, False), ({"x": 4}, True), ({"x": ABSENT}, False)]),
    ("ne-text", "  - sc: {ne: 5}", [({"sc": "auto"}, True), ({"sc": 5}, False)]),
    ("gt", "  - x: {gt: 5}", [({"x": 5}, False), ({"x": 5.5}, True), ({"x": ABSENT}, False)]),
    ("gte", "  - x: {gte: 5}", [({"x": 5}, True), ({"x": 4.999}, False)]),
    ("lt", "  - x: {lt: 5}", [({"x": 4}, True), ({"x": 5}, False)]),
    ("lte", "  - x: {lte: 5}", [({"x": 5}, True), ({"x": 6}, False)]),
    ("ordering-on-text", "  - sc: {gt: 3}", [({"sc": "zzz"}, False), ({"sc": 4}, True)]),
    ("in", "  - x: {in: [1, 2, 3]}", [({"x": 2}, True), ({"x": 4}, False), ({"x": ABSENT}, False)]),
    ("not-in", "  - x: {not_in: [1, 2]}", [({"x": 3}, True), ({"x": 1}, False), ({"x": ABSENT}, False)]),
    ("exists", "  - x: {exists: true}", [({"x": 0}, True), ({"x": ABSENT}, False)]),
    ("absent", "  - x: {exists: false}", [({"x": 0}, False), ({"x": ABSENT}, True)]),
    ("range", "  - x: {gt: 1, lt: 9}", [({"x": 5}, True), ({"x": 9}, False), ({"x": 1}, False)]),
    ("tiny-float", "  - x: {gt: 1.0e-05}", [({"x": 2e-05}, True), ({"x": 1e-05}, False)]),
]

TEXT_AND_BOOLEAN = [
    ("text-eq", "  - s: abc", [({"s": "abc"}, True), ({"s": "abd"}, False)]),
    ("text-in", "  - s: {in: [a, b]}", [({"s": "b"}, True), ({"s": "c"}, False)]),
    ("text-in-whole-members", "  - s: {in: [abc]}", [({"s": "ab"}, False), ({"s": "abc"}, True)]),
    (
        "in-mixed-kinds",
        "  - sc: {in: ['1', 2]}",
        [({"sc": "1"}, True), ({"sc": 1}, False), ({"sc": 2}, True), ({"sc": "2"}, False)],
    ),
    ("bool-true", "  - b: true", [({"b": True}, True), ({"b": False}, False), ({"b": ABSENT}, False)]),
    ("bool-is-not-one", "  - b: 1", [({"b": True}, False)]),
    ("bool-ne", "  - b: {ne: false}", [({"b": True}, True), ({"b": False}, False)]),
]

LIST = [
    ("contains", "  - l: {contains: x1}", [({"l": ["x1", "x2"]}, True), ({"l": ["x2"]}, False), ({"l": []}, False)]),
    ("contains-whole-members", "  - l: {contains: x}", [({"l": ["xy"]}, False), ({"l": ["xy", "x"]}, True)]),
    (
        "not-contains",
        "  - l: {not_contains: x1}",
        [({"l": ["x2"]}, True), ({"l": ["x1"]}, False), ({"l": ABSENT}, True)],
    ),
    ("empty", "  - l: {empty: true}", [({"l": []}, True), ({"l": ["a"]}, False), ({"l": ABSENT}, False)]),
    ("not-empty", "  - l: {empty: false}", [({"l": ["a"]}, True), ({"l": []}, False)]),
]

REFS = [
    ("ref-eq", "  - x: {ref: y}", [({"x": 3, "y": 3}, True), ({"x": 3, "y": 4}, False), ({"x": 3}, False)]),
    ("ref-arith", "  - x: {gt: {ref: y * 2 + 1}}", [({"x": 8, "y": 3}, True), ({"x": 7, "y": 3}, False)]),
    ("ref-div-zero", "  - x: {gt: {ref: 10 / y}}", [({"x": 8, "y": 0}, False), ({"x": 8, "y": 2}, True)]),
    ("ref-function", "  - x: {gte: {ref: 'max(y, 2) ** 2'}}", [({"x": 9, "y": 3}, True), ({"x": 8, "y": 3}, False)]),
    ("ref-constant", "  - x: {lt: {ref: const.ten}}", [({"x": 9}, True), ({"x": 10}, False)]),
]

NOT_ANY = [
    ("not-attr", "  - not: {x: {gt: 5}}", [({"x": 3}, True), ({"x": 6}, False), ({"x": ABSENT}, True)]),
    ("not-member", "  - not: {l: {contains: x1}}", [({"l": ["x2"]}, True), ({"l": ["x1"]}, False)]),
    (
        "any",
        "  - any:\n      - [{x: 1}]\n      - [{s: one}]",
        [({"x": 1}, True), ({"s": "one"}, True), ({"x": 2, "s": "two"}, False)],
    ),
]


@pytest.mark.parametrize(
    "table", [NUMBER, TEXT_AND_BOOLEAN, LIST, REFS, NOT_ANY], ids=["number", "text-boolean", "list", "refs", "not-any"]
)
def test_operators(build, table):
    _table(build, table)


def _matched(rec, values, attr="hits"):
    doc = {"name": "w", **values}
    return sorted(rec.recommend(doc).get(attr) or [])


def test_joins_bind_each_matching_item(build):
    rule = """id: join
summary: each thing of size above x.
when:
  - x: {exists: true}
  - item: thing
    as: t
    where:
      size: {gt: {ref: x}}
then:
  hits: "{t.id}"
source: {doc: test}
"""
    rec = build({"join": rule})
    assert _matched(rec, {"x": 0}) == ["a", "b", "c"]
    assert _matched(rec, {"x": 4}) == ["b", "c"]
    assert _matched(rec, {"x": 10}) == []


def test_join_tests_on_missing_fields(build):
    """An item without a field fails every test on it except exists: false (ne included), and a ref that is the
    field alone; a computed ref reads the field as null, so it may test it (c has no flag, so 0 for c)."""
    rules = {
        "ref-guarded": "id: ref-guarded\nsummary: s.\nwhen:\n  - item: thing\n    as: t\n"
        "  - x: {gt: {ref: \"t.cost if t.flag != null else 0\"}}\nthen:\n  hits: 'guard:{t.id}'\nsource: {doc: test}\n",
        "ref-null-arith": "id: ref-null-arith\nsummary: s.\nwhen:\n  - item: thing\n    as: t\n"
        '  - x: {gt: {ref: "t.flag + 0 if t.flag == null else 0"}}\n'
        "then:\n  hits: 'arith:{t.id}'\nsource: {doc: test}\n",
        "flag-ne": "id: flag-ne\nsummary: s.\nwhen:\n  - item: thing\n    as: t\n    where:\n      flag: {ne: true}\n"
        "then:\n  hits: 'ne:{t.id}'\nsource: {doc: test}\n",
        "flag-absent": "id: flag-absent\nsummary: s.\nwhen:\n  - item: thing\n    as: t\n    where:\n"
        "      flag: {exists: false}\nthen:\n  hits: 'absent:{t.id}'\nsource: {doc: test}\n",
        "ref-missing": "id: ref-missing\nsummary: s.\nwhen:\n  - item: thing\n    as: t\n  - x: {gt: {ref: t.flag}}\n"
        "then:\n  hits: 'ref:{t.id}'\nsource: {doc: test}\n",
    }
    rec = build(rules)
    # a and b give 0; c, whose flag is null, adds a null to a number, which fails the test
    assert _matched(rec, {"x": 1}) == ["absent:c", "arith:a", "arith:b", "guard:c", "ne:b"]


def test_two_joins_and_a_ref_between_them(build):
    rule = """id: pair
summary: pairs where the second is bigger.
when:
  - item: thing
    as: p
  - item: thing
    as: q
    where:
      size: {gt: {ref: p.size * 2}}
then:
  hits: "{p.id}<{q.id}"
source: {doc: test}
"""
    assert _matched(build({"pair": rule}), {}) == ["a<b", "a<c"]  # b<c would need 10 > 10


def test_eq_joins_match_by_kind_and_value(build):
    """An eq test against another item's field (which a backend may answer from an index): numbers
    equal across int and float, a boolean is no number, a missing field or value matches nothing.
    """

    def pairs(where: str) -> list[str]:
        rule = f"""id: eq
summary: pairs joined by eq.
when:
  - item: thing
    as: p
  - item: thing
    as: q
    where: {where}
then:
  hits: "{{p.id}}={{q.id}}"
source: {{doc: test}}
"""
        return _matched(build({"eq": rule}), {"x": 1})

    assert pairs("{label: {eq: big}}") == ["a=c", "b=c", "c=c"]
    assert pairs("{cost: {ref: p.cost}}") == ["a=a", "a=b", "b=a", "b=b", "c=c"]
    assert pairs("{size: {ref: p.size * 1.0}}") == ["a=a", "b=b", "c=c"]  # 1.0 finds 1
    assert pairs("{flag: {ref: p.flag}}") == ["a=a", "b=b"]  # c has no flag: neither side matches
    assert pairs("{size: {ref: p.flag}}") == []  # true is not 1
    assert pairs("{size: {ref: p.size / 0}}") == []  # a ref that cannot be computed: no item
    assert pairs("{size: {ref: p.size}, label: {eq: big}}") == ["c=c"]
    # no ref at all: one item may bind both aliases (durable-rules never matches one fact twice)
    assert pairs("{label: {eq: big}}") == ["a=c", "b=c", "c=c"]


def test_joins_that_ask_for_an_attribute_value_match_the_items_with_that_value(build):
    """Joins whose tests ask a field to equal an attribute's value, or one of a few literals (a backend may assert
    only the items they allow, as each rule's step comes): at two strata, numbers equal across int and float, a
    boolean, a negated join of the same kind, and no value, no item."""

    def rule(rid: str, when: str, then: str) -> str:
        return f"id: {rid}\nsummary: s.\nwhen:\n{when}\nthen:\n{then}\nsource: {{doc: test}}\n"

    rules = {
        "by-label": rule(
            "by-label",
            "  - item: thing\n    as: t\n    where:\n      label: {ref: s}",
            "  hits: 'label:{t.id}'\n  level1: t.size + 4",
        ),
        "by-size": rule(
            "by-size", "  - item: thing\n    as: t\n    where:\n      size: {ref: level1}", "  hits: 'size:{t.id}'"
        ),
        "by-x": rule("by-x", "  - item: thing\n    as: t\n    where:\n      size: {ref: x}", "  hits: 'x:{t.id}'"),
        "in-list": rule(
            "in-list",
            "  - item: thing\n    as: t\n    where:\n      label: {in: [small, big]}\n      flag: {ref: b}",
            "  hits: 'in:{t.id}'",
        ),
        "none-labelled": rule(
            "none-labelled",
            "  - s: {exists: true}\n  - not: {item: thing, as: t, where: {label: {ref: s}}}",
            "  hits: none",
        ),
    }
    rec = build(rules)
    # a is small (size 1, so level1 5 finds b); x 5.0 finds b's 5; a is small with its flag true
    assert _matched(rec, {"s": "small", "x": 5.0, "b": True}) == ["in:a", "label:a", "size:b", "x:b"]
    # no thing is huge (no level1, so by-size has nothing to ask for); c has no flag, so flag false finds none
    assert _matched(rec, {"s": "huge", "x": 10, "b": False}) == ["none", "x:c"]
    # b is mid (size 5, so level1 9, which no thing has); no b given: no flag to ask for
    assert _matched(rec, {"s": "mid", "x": 2}) == ["label:b"]


IN_BESIDE_REFS = [
    ("{label: {in: [small, big]}, flag: {ref: b}}", [({"b": False}, []), ({"b": True}, ["a"])]),
    ("{flag: {ref: b}, label: {in: [small, big]}}", [({"b": False}, []), ({"b": True}, ["a"])]),
    ("{size: {in: [1, 10]}, flag: {ref: b}}", [({"b": False}, []), ({"b": True}, ["a"])]),
    ("{label: {in: [small, big], ne: {ref: s}}}", [({"s": "small"}, ["c"])]),
    ("{label: {ne: {ref: s}, in: [small, big]}}", [({"s": "small"}, ["c"])]),
    ("{label: {in: [small, big], eq: {ref: s}}}", [({"s": "big"}, ["c"]), ({"s": "mid"}, [])]),
    ("{label: {in: [small, big]}, size: {ref: x}}", [({"x": 5}, []), ({"x": 1}, ["a"])]),
    ("{label: {in: [small, big]}, cost: {ne: {ref: y}}}", [({"y": 10}, ["c"])]),
]


@pytest.mark.parametrize("where,cases", IN_BESIDE_REFS, ids=[w for w, _ in IN_BESIDE_REFS])
def test_an_in_list_beside_reference_tests_in_either_order(build, where, cases):
    """An 'in' list of an item's field with tests against attributes' values, in either order: every test
    holds for the items matched (durable-rules passed items that failed a test written after the list)."""
    rule = f"id: r\nsummary: s.\nwhen:\n  - item: thing\n    as: t\n    where: {where}\nthen:\n  hits: '{{t.id}}'\n"
    rec = build({"r": rule + "source: {doc: test}\n"})
    for values, want in cases:
        assert _matched(rec, values) == want, values


def test_negated_join(build):
    rule = """id: no-big
summary: no thing is bigger than x.
when:
  - x: {exists: true}
  - not: {item: thing, as: t, where: {size: {gt: {ref: x}}}}
then:
  hits: no-big
source: {doc: test}
"""
    rec = build({"no-big": rule})
    assert _matched(rec, {"x": 10}) == ["no-big"]
    assert _matched(rec, {"x": 9}) == []


def test_negated_join_sees_the_item_a_join_bound(build):
    """'no big thing' is false while a big thing exists, whichever item another join bound."""
    rule = """id: none-big
summary: each thing, when no thing is big.
when:
  - item: thing
    as: p
  - not: {item: thing, as: t, where: {label: {eq: big}}}
then:
  hits: "{p.id}"
source: {doc: test}
"""
    assert _matched(build({"none-big": rule}), {"x": 1}) == []


def test_any_fires_once_when_several_alternatives_hold(build):
    rule = """id: once
summary: either.
when:
  - any:
      - [{x: {gt: 0}}]
      - [{y: {gt: 0}}]
then:
  n.sum: 1
source: {doc: test}
"""
    rec = build({"once": rule})
    assert rec.recommend({"name": "w", "x": 1, "y": 1})["n.sum"] == 1


def test_long_in_lists_and_many_tests_in_one_condition(build):
    """Past durable-rules' node fan-out (511 successors loop forever) and its 64 tests per pattern."""
    values = ", ".join(str(i) for i in range(600))
    many = (
        "\n".join(f"      label: {{ne: w{i}}}" for i in range(1))
        + "\n"
        + "\n".join(f"      size: {{ne: {1000 + i}}}" for i in range(1))
    )
    rules = {
        "big-in": hit("big-in", f"  - x: {{in: [{values}]}}"),
        "many-tests": "id: many-tests\nsummary: s.\nwhen:\n  - item: thing\n    as: t\n    where:\n"
        f"      id: {{not_in: [{', '.join(f'z{i}' for i in range(80))}]}}\n"
        "      size: {gt: 4}\nthen:\n  hits: 'many:{t.id}'\nsource: {doc: test}\n",
    }
    assert many
    rec = build(rules)
    assert _matched(rec, {"x": 599}) == ["big-in", "many:b", "many:c"]
    assert _matched(rec, {"x": 600}) == ["many:b", "many:c"]


def test_long_text_values(build):
    long = "x" * 5000
    rules = {"long-eq": hit("long-eq", f"  - s: {long}"), "long-ne": hit("long-ne", "  - s: {ne: short}")}
    rec = build(rules)
    assert _matched(rec, {"s": long}) == ["long-eq", "long-ne"]
    assert _matched(rec, {"s": long + "y"}) == ["long-ne"]


def test_strata_a_rule_sees_only_final_values(build):
    rules = {
        "one": "id: one\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  level1: x + 1\nsource: {doc: test}\n",
        "two": "id: two\nsummary: s.\nwhen:\n  - level1: {gt: 1}\nthen:\n  level2: level1 * 10\nsource: {doc: test}\n",
        "tag-a": "id: tag-a\nsummary: s.\nwhen:\n  - x: {gt: 5}\nthen:\n  tags: a\nsource: {doc: test}\n",
        "untagged": hit("untagged", "  - tags: {not_contains: a}"),
    }
    rec = build(rules)
    r = rec.recommend({"name": "w", "x": 1})
    assert (r["level1"], r["level2"]) == (2, 20)
    assert r.get("tags") is None and r["hits"] == ["untagged"]  # negation over a list nobody added to
    r = rec.recommend({"name": "w", "x": 6})
    assert r["tags"] == ["a"] and r.get("hits") is None


def _policy_rules():
    def rule(rid, then, when="  - x: {exists: true}"):
        priority = int(rid[-1]) if rid[-1].isdigit() else 0
        return f"id: {rid}\nsummary: s.\npriority: {priority}\nwhen:\n{when}\nthen:\n{then}\nsource: {{doc: test}}\n"

    return {
        "max1": rule("max1", "  n.max: x"),
        "max2": rule("max2", "  n.max: x * 2"),
        "min1": rule("min1", "  n.min: x"),
        "min2": rule("min2", "  n.min: x * 2"),
        "sum1": rule("sum1", "  n.sum: x"),
        "sum2": rule("sum2", "  n.sum: 1"),
        "pref1": rule("pref1", "  n.prefer: low"),
        "pref2": rule("pref2", "  n.prefer: high"),
        "pick": rule(
            "pick",
            "  picked:\n    id: '{t.id}'\n    cost: t.cost\n    size: t.size\n    outside: t.id == 'c'",
            "  - item: thing\n    as: t",
        ),
        "big": rule("big", "  biggest: {id: t.id, size: t.size}", "  - item: thing\n    as: t"),
    }


def test_every_combine_policy(build):
    rec = build(_policy_rules())
    r = rec.recommend({"name": "w", "x": 3})
    assert (r["n.max"], r["n.min"], r["n.sum"], r["n.prefer"]) == (6, 3, 4, "high")
    # argmin: first_by (outside: false first) keeps 'c' (cost 3) out; a and b tie on cost, size breaks it
    assert r["picked"]["id"] == "a"
    assert r["biggest"]["id"] == "c"
    step = r.explain("picked")
    assert step["note"] == "lowest cost, then size of 3 candidate(s), those with the lowest outside first"


def test_single_policy_conflict_names_the_rules(build):
    rules = {
        "one": "id: one\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  n.single: 1\nsource: {doc: test}\n",
        "two": "id: two\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  n.single: 2\nsource: {doc: test}\n",
    }
    rec = build(rules)
    with pytest.raises(RuleError, match=r"rules disagree on 'n.single' \(one gives 1; two gives 2\)"):
        rec.recommend({"name": "w", "x": 1})


def test_errors_while_firing_name_the_rule(build):
    rules = {
        "div": "id: div\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  level1: 1 / (x - x)\nsource: {doc: test}\n"
    }
    rec = build(rules)
    with pytest.raises(RuleError, match="rule 'div' failed while firing: division by zero"):
        rec.recommend({"name": "w", "x": 1})


def test_a_conclusion_of_the_wrong_type_names_the_rule(build):
    rules = {
        "typ": "id: typ\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  level1: \"'text'\"\nsource: {doc: test}\n"
    }
    with pytest.raises(RuleError, match="it concluded \"text\" for 'level1', which must be a number"):
        build(rules).recommend({"name": "w", "x": 1})


def test_templates_format_values_and_keep_a_lone_value(build):
    rules = {
        "tpl": "id: tpl\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n"
        "  text.out: \"{x} things, {{braces}}, {'big' if x > 1000 else 'small'}\"\nsource: {doc: test}\n"
    }
    rec = build(rules)
    assert rec.recommend({"name": "w", "x": 12345})["text.out"] == "12,345 things, {braces}, big"


def test_unknown_names_are_load_errors(build):
    with pytest.raises(InputError, match="unknown attribute 'nope'"):
        build({"bad": hit("bad", "  - nope: 1")})
    with pytest.raises(InputError, match="unknown catalog 'things'"):
        build({"bad": hit("bad", "  - item: things\n    as: t")})


def test_a_large_stratum_runs(build):
    """Hundreds of rules in one stratum: past durable-rules' per-node tables (shards)."""
    rules = {f"r{i}": hit(f"r{i}", f"  - x: {{gt: {i}}}") for i in range(300)}
    rec = build(rules)
    assert len(_matched(rec, {"x": 150})) == 150


def test_catalog_functions_look_an_item_up_by_a_value(build):
    """min_in/max_in read a catalog without a join: the least or greatest field of the items whose key field
    equals the value, items lacking either passed over, null when none has the value."""
    rule = """id: look
summary: s.
when:
  - s: {exists: true}
  - b: {exists: true}
let:
  least: min_in('thing', 'cost', 'label', s)
  most: max_in('thing', 'size', 'flag', b)
then:
  level1: least if least != null else -1
  n.single: most if most != null else -1
source: {doc: test}
"""
    rec = build({"look": rule})
    for s, b, least, most in [("big", True, 3, 1), ("mid", False, 10, 5), ("none", True, -1, 1)]:
        got = rec.recommend({"name": "w", "s": s, "b": b})
        assert (got["level1"], got["n.single"]) == (least, most), (s, b)
    # thing c (size 10) has no flag, so it is in neither group: the largest thing whose flag is false is b (5)
    step = rec.recommend({"name": "w", "s": "big", "b": False}).explain("n.single")
    assert step["value"] == 5


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("min_in('things', 'cost', 'label', s)", "unknown catalog 'things'"),
        ("min_in('thing', 'price', 'label', s)", "catalog 'thing' has no field 'price'"),
        ("min_in('thing', 'cost', 'colour', s)", "catalog 'thing' has no field 'colour'"),
        ("min_in('thing', 'cost', s)", "takes a catalog, a field, a key field"),
        ("min_in(s, 'cost', 'label', s)", "takes a catalog, a field, a key field"),
    ],
)
def test_catalog_functions_are_checked_when_the_rulebase_loads(build, call, message):
    rule = f'id: bad\nsummary: s.\nwhen:\n  - s: {{exists: true}}\nthen:\n  level1: "{call}"\nsource: {{doc: test}}\n'
    with pytest.raises(InputError, match=message):
        build({"bad": rule})


def test_a_catalog_function_given_a_list_names_the_rule(build):
    rule = (
        "id: listy\nsummary: s.\nwhen:\n  - l: {exists: true}\nthen:\n"
        "  level1: \"min_in('thing', 'cost', 'label', l)\"\nsource: {doc: test}\n"
    )
    rec = build({"listy": rule})
    with pytest.raises(RuleError, match=r"listy.*looks up one value"):
        rec.recommend({"name": "w", "l": ["big"]})


def test_a_catalog_function_in_a_condition_is_a_load_error(build):
    cond = "  - x: {gt: {ref: \"min_in('thing', 'cost', 'label', 'big')\"}}"
    with pytest.raises(InputError, match="a condition's operand cannot call a catalog function"):
        build({"bad": hit("bad", cond)})


def test_a_condition_that_reads_a_let_calling_a_catalog_function_is_a_load_error(build):
    rule = (
        "id: bad\nsummary: s.\nwhen:\n  - s: {exists: true}\n  - x: {gt: {ref: least}}\nlet:\n"
        "  least: min_in('thing', 'cost', 'label', s)\nthen:\n  hits: bad\nsource: {doc: test}\n"
    )
    with pytest.raises(InputError, match="a condition's operand cannot call a catalog function"):
        build({"bad": rule})
