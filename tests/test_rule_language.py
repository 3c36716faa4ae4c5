"""The rule language's forms for rule authors: bases, lets in any order, records with declared
fields, text templates, named constants and their overlays; and the errors each can give."""

import pytest

from conformance.conftest import write_rulebase
from engine import InputError, Recommender

BASE = """base: thing-pick
summary: What every thing candidate shares.
when:
  - x: {exists: true}
  - item: thing
    as: t
    where:
      size: {gt: 0}
let:
  cost: t.cost * x
then:
  picked:
    id: "{t.id}"
    cost: cost
    size: t.size
    outside: false
source: {doc: test, note: base}
"""


def _rec(tmp_path, rules, bases=None):
    rdir, kdir = write_rulebase(tmp_path, rules)
    for name, text in (bases or {}).items():
        (rdir / "t" / f"{name}.base.yaml").write_text(text)
    return Recommender([rdir], [kdir])


def test_a_rule_extends_a_base_and_adds_tests_to_its_join(tmp_path):
    rule = """id: big-things
summary: Big things only, each marked outside.
extends: thing-pick
when:
  - item: thing
    as: t
    where:
      size: {gte: 5}
then:
  picked:
    outside: true
source: {doc: test, note: rule}
"""
    with _rec(tmp_path, {"big-things": rule}, {"thing-pick": BASE}) as rec:
        r = rec.recommend({"name": "w", "x": 2})
        pick = r["picked"]
        # the base's size > 0 and the rule's size >= 5 both hold; c (cost 3) beats b (cost 10)
        assert pick == {"id": "c", "cost": 6, "size": 10, "outside": True}
        step = r.explain("picked")
        assert [c["rule"] for c in step["binding"] + step["beaten"]] == ["big-things", "big-things"]
        notes = [s.get("note") for s in step["binding"][0]["sources"]]
        assert notes == ["base", "rule"]
        planned = rec.rulebase.rules["big-things"]
        assert planned.rule.extends == "thing-pick" and planned.rule.base_files[0].endswith("thing-pick.base.yaml")


def test_a_base_that_does_not_exist_or_a_cycle_of_bases_is_a_load_error(tmp_path):
    rule = "id: r\nsummary: s.\nextends: nope\nsource: {doc: test}\n"
    with pytest.raises(InputError, match="unknown base 'nope'"):
        _rec(tmp_path / "a", {"r": rule}, {"thing-pick": BASE})
    loop_a = "base: a\nsummary: s.\nextends: b\n"
    loop_b = "base: b\nsummary: s.\nextends: a\n"
    rule = "id: r\nsummary: s.\nextends: a\nsource: {doc: test}\n"
    with pytest.raises(InputError, match="bases extend each other in a cycle"):
        _rec(tmp_path / "b", {"r": rule}, {"a": loop_a, "b": loop_b})


def test_lets_are_evaluated_in_dependency_order_and_a_cycle_is_refused(tmp_path):
    ordered = """id: ordered
summary: s.
when:
  - x: {exists: true}
let:
  cc: bb * 2
  bb: aa + 1
  aa: x
then:
  level1: cc
source: {doc: test}
"""
    with _rec(tmp_path / "a", {"ordered": ordered}) as rec:
        assert rec.recommend({"name": "w", "x": 3})["level1"] == 8
    looped = ordered.replace("aa: x", "aa: cc")
    with pytest.raises(InputError, match="let values read each other in a cycle"):
        _rec(tmp_path / "b", {"looped": looped.replace("id: ordered", "id: looped")})


def test_a_record_must_give_exactly_its_declared_fields(tmp_path):
    missing = """id: missing
summary: s.
when:
  - item: thing
    as: t
then:
  picked: {id: "{t.id}", cost: t.cost, size: t.size}
source: {doc: test}
"""
    with pytest.raises(InputError, match="the record for 'picked' lacks 'outside'") as info:
        _rec(tmp_path / "a", {"missing": missing})
    assert info.value.file == "rules/t/missing.yaml" and info.value.line == 7  # the "picked:" line
    extra = missing.replace("size: t.size}", "size: t.size, outside: false, colour: 1}")
    with pytest.raises(InputError, match="'picked' has no field 'colour'"):
        _rec(tmp_path / "b", {"missing": extra})


def test_a_broken_template_points_at_its_column(tmp_path):
    rule = (
        'id: broken\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  text.out: "x is {x +}"\nsource: {doc: test}\n'
    )
    with pytest.raises(InputError) as info:
        _rec(tmp_path, {"broken": rule})
    d = info.value.first
    assert (d.file, d.line) == ("rules/t/broken.yaml", 6)
    assert "in placeholder {x +}" in d.message and d.col > 13


def test_a_site_gives_a_constant_its_own_value(tmp_path):
    rule = "id: uses\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  level1: x * const.ten\nsource: {doc: test}\n"
    rdir, kdir = write_rulebase(tmp_path / "base", {"uses": rule})
    site = tmp_path / "site"
    site.mkdir()
    (site / "constants.yaml").write_text(
        "description: site figures\nconstants:\n"
        "  ten: {value: 12, unit: things, description: ten, source: {doc: site}}\n"
    )
    with Recommender([rdir], [kdir]) as rec:
        assert rec.recommend({"name": "w", "x": 2})["level1"] == 20
    with Recommender([rdir], [kdir, site]) as rec:
        r = rec.recommend({"name": "w", "x": 2})
        assert r["level1"] == 24
        assert r.explain("const.ten")["origin"] == "constant"


def test_a_constant_may_be_a_list_of_texts_read_with_in(tmp_path):
    rule = (
        "id: uses\nsummary: s.\nwhen:\n  - s: {exists: true}\nthen:\n"
        '  level1: "1 if s in const.kinds else 0"\n'
        '  tags: "{[s] if s in const.kinds else []}"\nsource: {doc: test}\n'
    )
    rdir, kdir = write_rulebase(tmp_path / "base", {"uses": rule})
    path = kdir / "constants.yaml"
    path.write_text(path.read_text() + "  kinds: {value: [HBM2, HBM3], description: kinds, source: {doc: test}}\n")
    with Recommender([rdir], [kdir]) as rec:
        assert rec.recommend({"name": "w", "s": "HBM3"})["level1"] == 1
        r = rec.recommend({"name": "w", "s": "GDDR6"})
        assert r["level1"] == 0 and r.explain("const.kinds")["value"] == ["HBM2", "HBM3"]
    site = tmp_path / "site"
    site.mkdir()
    (site / "constants.yaml").write_text(
        "description: site figures\nconstants:\n  kinds: {value: [GDDR6], description: kinds, source: {doc: site}}\n"
    )
    with Recommender([rdir], [kdir, site]) as rec:
        assert rec.recommend({"name": "w", "s": "GDDR6"})["level1"] == 1


@pytest.mark.parametrize(
    "value,message",
    [("[HBM2, 3]", "is neither a list of texts nor a list of finite numbers"), ("[]", "must not be empty")],
)
def test_a_list_constant_holds_one_kind_of_member(tmp_path, value, message):
    rdir, kdir = write_rulebase(tmp_path, {})
    path = kdir / "constants.yaml"
    path.write_text(path.read_text() + f"  kinds: {{value: {value}, description: kinds, source: {{doc: test}}}}\n")
    with pytest.raises(InputError) as e:
        Recommender([rdir], [kdir])
    assert message in str(e.value)


def test_every_hbm_memory_type_of_the_gpu_catalog_is_a_declared_hbm_type(recommender):
    """const.hbm_memory_types names the HBM cards (their usable share of memory): a card whose memory type
    names HBM and is not listed would be sized as a GDDR card."""
    rb = recommender.rulebase
    declared = rb.constants["const.hbm_memory_types"].value
    types = {i.get("memory_type") for i in rb.catalogs["gpu"].items.values()}
    hbm = {t for t in types if isinstance(t, str) and "HBM" in t.upper()}
    assert hbm and hbm <= set(declared)
    assert set(declared) <= types  # and names no type the catalog does not use


def _with_attributes(tmp_path, extra, rules):
    rdir, kdir = write_rulebase(tmp_path, rules)
    path = rdir / "_attributes.yaml"
    path.write_text(path.read_text() + extra)
    return Recommender([rdir], [kdir])


MONEY = """  money:
    type: number
    unit: "{s}"
    description: An amount in the currency the workload names.
"""
PRICE = "id: price\nsummary: Twice x.\nwhen:\n  - x: {exists: true}\nthen:\n  money: x * 2\nsource: {doc: test}\n"


def test_a_unit_names_a_text_attribute_and_reports_show_its_value(tmp_path):
    from engine.report.document import document

    with _with_attributes(tmp_path, MONEY, {"price": PRICE}) as rec:
        r = rec.recommend_text("name: w\nx: 3\ns: EUR\n")
        assert r["money"] == 6
        assert r.unit("money") == "EUR"
        assert r.explain("money")["unit"] == "EUR"
        assert document(r)["conclusions"]["money"]["unit"] == "EUR"
        # without the named value there is no unit to show, rather than a wrong one
        assert rec.recommend_text("name: w\nx: 3\n").unit("money") is None


@pytest.mark.parametrize(
    "unit, message",
    [
        ("{nope}", "the unit of 'money' names 'nope', which is no attribute"),
        ("{x}", "the unit of 'money' names 'x', which is a number attribute, not text"),
    ],
)
def test_a_unit_that_names_no_text_attribute_is_a_load_error(tmp_path, unit, message):
    with pytest.raises(InputError) as exc:
        _with_attributes(tmp_path, MONEY.replace("{s}", unit), {"price": PRICE})
    assert message in str(exc.value)
    assert "_attributes.yaml" in str(exc.value)


def test_a_change_of_currency_shows_each_side_in_its_own(recommender):
    import yaml

    from corpus import ROOT
    from engine.explain.diff import compare_results

    data = yaml.safe_load((ROOT / "examples" / "llama2-70b-chat.yaml").read_text())
    before = recommender.recommend_text(yaml.safe_dump(data))
    data["market"] = "cn"
    after = recommender.recommend_text(yaml.safe_dump(data))
    changes = {c.attribute: c for c in compare_results(before, after)}
    total = changes["cost.total"].as_dict()
    assert (total["unit"], total["old_unit"]) == ("CNY", "USD")
    # a change whose unit is the same on both sides (none here) names it once
    assert changes["price.currency"].as_dict() == {
        "attribute": "price.currency",
        "old": "USD",
        "new": "CNY",
        "unit": None,
        "rule": "price-factors",
    }


# -- one text form: a string with {...} in a let or a conclusion is a template ------------------------

UNITS = """  money:
    type: number
    unit: "{s}"
    description: An amount in the currency the workload names.
  sized:
    type: number
    unit: GB
    description: A size.
"""


def test_a_let_with_placeholders_is_a_template_and_old_forms_still_work(tmp_path):
    rule = """id: words
summary: s.
when:
  - x: {exists: true}
let:
  glued: "'x is ' + text(x) + (' things' if x > 1 else ' thing')"
  templated: "x is {x} {'things' if x > 1 else 'thing'}"
  alone: "{x * 2}"
then:
  text.out: "{glued} / {templated} / {alone + 1}"
  level1: "{x}"
source: {doc: test}
"""
    with _rec(tmp_path, {"words": rule}) as rec:
        r = rec.recommend({"name": "w", "x": 12345})
        assert r["text.out"] == "x is 12,345 things / x is 12,345 things / 24,691"
        assert r["level1"] == 12345  # one placeholder alone keeps its value (a number here)
        lets = r.explain("text.out")["binding"][0]["lets"]
        assert lets["glued"] == lets["templated"] and lets["alone"] == 24690


@pytest.mark.parametrize(
    "value",
    [0, 7, -3, 12345, 10**12, 2**70, 0.5, 2.0, -0.25, 1234.5678, 153.66666, 0.000123456, 1.5e12, 1e-9, 99999.5]
    + [True, "", "HBM3", [1, 2.5, "a"], {"a": 1.23456}],
)
def test_a_placeholder_writes_a_value_as_text_does(value):
    """So text glued with '+ text(x) +' and the template that replaces it read the same, to the byte."""
    from engine.lang import expr as X

    def get(name):
        return lambda env: value

    assert X.parse_template("[{v}]").bind(get)({}) == X.parse("'[' + text(v) + ']'").bind(get)({})


def test_a_placeholder_written_with_unit_shows_the_declared_unit(tmp_path):
    """An attribute's unit (one that names the currency attribute too), a formula's, an item field's."""
    amounts = """id: amounts
summary: s.
when:
  - x: {exists: true}
then:
  money: x * 1.5
  sized: x
source: {doc: test}
"""
    shown = """id: shown
summary: s.
when:
  - sized: {exists: true}
  - money: {exists: true}
  - item: thing
    as: t
    where: {id: b}
then:
  text.out: "{sized:unit} here, {money:unit} there, {double(sized):unit}, {t.size:unit}, {t.size}"
source: {doc: test}
"""
    rdir, kdir = write_rulebase(tmp_path, {"amounts": amounts, "shown": shown})
    (rdir / "_attributes.yaml").write_text((rdir / "_attributes.yaml").read_text() + UNITS)
    things = kdir / "things.yaml"
    things.write_text(
        things.read_text().replace(
            "size: {type: number, description: size}", "size: {type: number, unit: cm, description: size}"
        )
    )
    with Recommender([rdir], [kdir]) as rec:
        r = rec.recommend({"name": "w", "x": 2, "s": "EUR"})
        assert r["text.out"] == "2 GB here, 3 EUR there, 4 things, 5 cm, 5"
        assert "s" in rec.rulebase.rules["shown"].reads  # the currency in the unit is read


@pytest.mark.parametrize(
    "placeholder, message",
    [
        ("{x:unit}", "{x:unit}: attribute 'x' has no declared unit"),
        ("{x * 2:unit}", "{x * 2:unit}: 'x * 2' has no declared unit"),
        ("{half:unit}", "{half:unit}: let 'half' has no declared unit"),
        ("{x:.2f}", "in placeholder {x:.2f}: unknown format ':.2f'"),
    ],
)
def test_unit_placeholders_that_cannot_have_a_unit_are_load_errors(tmp_path, placeholder, message):
    rule = f"""id: nounit
summary: s.
when:
  - x: {{exists: true}}
let:
  half: x / 2
then:
  text.out: "value {placeholder}"
source: {{doc: test}}
"""
    with pytest.raises(InputError) as info:
        _rec(tmp_path, {"nounit": rule})
    assert message in str(info.value)
    assert info.value.first.file == "rules/t/nounit.yaml"


# -- named formulas ------------------------------------------------------------------------------------


def _formulas(tmp_path, formulas, rules):
    from conformance.conftest import FORMULAS

    rdir, kdir = write_rulebase(tmp_path, rules, formulas=FORMULAS + formulas)
    return Recommender([rdir], [kdir])


CALLS = "id: calls\nsummary: s.\nwhen:\n  - x: {exists: true}\nthen:\n  level1: EXPR\nsource: {doc: test}\n"


@pytest.mark.parametrize(
    "expr, message",
    [
        ("double(x, 1)", "double(v) takes 1 argument(s), not 2"),
        ("nope(x)", "'nope' cannot be called: only the listed functions can"),
        ("bigger(x, 1)", "bigger(t, by): 't' is a thing item; give the alias of a joined thing (as: ...), not 'x'"),
    ],
)
def test_a_rule_calling_a_formula_wrongly_is_a_load_error(tmp_path, expr, message):
    with pytest.raises(InputError) as info:
        _formulas(tmp_path, "", {"calls": CALLS.replace("EXPR", expr)})
    assert message in str(info.value)
    assert info.value.first.file == "rules/t/calls.yaml"


@pytest.mark.parametrize(
    "formula, message",
    [
        (
            "  loop_a:\n    params: {v: a value}\n    value: loop_b(v)\n    unit: x\n    description: d\n"
            "    source: {doc: t}\n"
            "  loop_b:\n    params: {v: a value}\n    value: loop_a(v)\n    unit: x\n    description: d\n"
            "    source: {doc: t}\n",
            "formulas call each other in a cycle: loop_a -> loop_b -> loop_a",
        ),
        (
            "  unknown:\n    params: {v: a value}\n    value: v + nothing.here\n    unit: x\n    description: d\n"
            "    source: {doc: t}\n",
            "formula 'unknown': unknown name 'nothing.here'",
        ),
        (
            "  no_field:\n    params: {t: {item: thing, description: d}}\n    value: t.weight\n    unit: x\n"
            "    description: d\n    source: {doc: t}\n",
            "formula 'no_field': catalog 'thing' has no field 'weight' ('t.weight')",
        ),
        (
            "  no_catalog:\n    params: {t: {item: things, description: d}}\n    value: t.size\n    unit: x\n"
            "    description: d\n    source: {doc: t}\n",
            "formula 'no_catalog': parameter 't' is an item of catalog 'things', which does not exist",
        ),
        (
            "  arity:\n    params: {v: a value}\n    value: double(v, v)\n    unit: x\n    description: d\n"
            "    source: {doc: t}\n",
            "formula 'arity' calls double(v) with 2 argument(s)",
        ),
        (
            "  item_as_value:\n    params: {t: {item: thing, description: d}}\n    value: double(t)\n    unit: x\n"
            "    description: d\n    source: {doc: t}\n",
            "formula 'item_as_value': 't' is an item; read one of its fields (t.id)",
        ),
        (
            "  max:\n    params: {v: a value}\n    value: v\n    unit: x\n    description: d\n    source: {doc: t}\n",
            "formula 'max' has the name of a built-in function",
        ),
        ("  unitless:\n    params: {v: a value}\n    value: v\n    description: d\n    source: {doc: t}\n", "unit"),
    ],
)
def test_a_broken_formula_is_a_load_error_at_its_line(tmp_path, formula, message):
    with pytest.raises(InputError) as info:
        _formulas(tmp_path, formula, {"calls": CALLS.replace("EXPR", "x")})
    assert message in str(info.value)
    assert info.value.first.file == "knowledge/formulas.yaml"
    assert info.value.first.line is not None and info.value.first.line > 20  # the added formula, not the file's top


def test_a_site_gives_its_own_formula(tmp_path):
    rdir, kdir = write_rulebase(tmp_path / "base", {"calls": CALLS.replace("EXPR", "double(x)")})
    site = tmp_path / "site"
    site.mkdir()
    (site / "formulas.yaml").write_text(
        "formulas:\n  double:\n    params: {v: a number}\n    value: v * 3\n    unit: things\n"
        "    description: thrice, at this site\n    source: {doc: site}\n"
    )
    with Recommender([rdir], [kdir]) as rec:
        assert rec.recommend({"name": "w", "x": 2})["level1"] == 4
    with Recommender([rdir], [kdir, site]) as rec:
        r = rec.recommend({"name": "w", "x": 2})
        assert r["level1"] == 6
        assert r.explain("level1")["binding"][0]["formulas"][0]["sources"] == [{"doc": "site"}]
