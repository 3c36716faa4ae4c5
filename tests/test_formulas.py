"""The shipped named formulas (knowledge/formulas.yaml) mean what the rules wrote before them: each
is evaluated against the expression the rules still write, over the whole catalog and the inputs
that reach it.
"""

import itertools
import math

import pytest

from engine.lang import expr as X
from engine.lang.expand import Expander


@pytest.fixture(scope="module")
def formulas(rulebase):
    return rulebase.formulas


def _value(rulebase, text, values, items):
    """An expression over attribute values and items (alias -> catalog item), formulas expanded."""
    aliases = {a: i.catalog for a, i in items.items()}
    expr = Expander(rulebase.formulas, aliases).expr(X.parse(text, rulebase.formulas))

    def resolve(name):
        head, _, rest = name.partition(".")
        if head in items:
            return lambda env: items[head].get(rest)
        return lambda env: values[name]

    try:
        return expr.bind(resolve)({})
    except X.ExprError as exc:
        return f"error: {exc.message}"


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)


def test_every_shipped_formula_is_declared_with_unit_description_and_source(formulas):
    assert {"market_price", "cards_needed", "card_tflops"} <= set(formulas)
    for f in formulas.values():
        assert f.unit and f.description and f.sources and all(p.description for p in f.params)


def test_cards_needed_is_the_candidate_rules_expression(rulebase):
    written = "max(1, ceil(memory.sharded_gb / (g.vram_bytes / 1e9 - memory.replicated_gb)))"
    checked = 0
    for card in rulebase.catalogs["gpu"].items.values():
        for sharded, replicated in itertools.product([0.1, 13.9, 80, 140.5, 1000, 12345.6], [0.5, 3.2, 40, 79.9]):
            values = {"memory.sharded_gb": sharded, "memory.replicated_gb": replicated}
            items = {"g": card}
            old = _value(rulebase, written, values, items)
            new = _value(rulebase, "cards_needed(memory.sharded_gb, memory.replicated_gb, g)", values, items)
            assert _same(old, new), (card.id, sharded, replicated, old, new)
            checked += 1
    assert checked > 500


def test_card_tflops_is_the_training_rules_rate(rulebase):
    written = (
        "g.fp32_tflops if memory.compute_mode == 'fp32' else (g.bf16_tflops if precision == 'bf16' "
        "and g.supports_bf16 and g.bf16_tflops != null else g.fp16_tflops)"
    )
    precisions = sorted(rulebase.catalogs["precision"].items)
    assert "bf16" in precisions and "fp32" in precisions
    for card in rulebase.catalogs["gpu"].items.values():
        for mode, precision in itertools.product(["fp32", "mixed", "fp16", "bf16"], precisions):
            values = {"memory.compute_mode": mode, "precision": precision}
            items = {"g": card}
            old = _value(rulebase, written, values, items)
            new = _value(rulebase, "card_tflops(g, memory.compute_mode, precision)", values, items)
            assert _same(old, new), (card.id, mode, precision, old, new)


@pytest.mark.parametrize("catalog", ["gpu", "platform", "nic", "dimm", "drive", "cpu"])
def test_market_price_is_the_cost_rules_conversion(rulebase, catalog):
    written = "count * d.price * (price.usd if d.price_currency == 'USD' else price.cny)"
    items = [i for i in rulebase.catalogs[catalog].items.values() if i.get("price") is not None]
    assert items, catalog
    for item, (usd, cny), count in itertools.product(items, [(1.0, 0.1412), (7.998, 1.0)], [1, 3, 8]):
        values = {"price.usd": usd, "price.cny": cny, "count": count}
        old = _value(rulebase, written, values, {"d": item})
        new = _value(rulebase, "market_price(count * d.price, d.price_currency)", values, {"d": item})
        assert _same(old, new), (item.id, usd, cny, old, new)


def test_the_rules_write_each_shared_formula_only_by_its_name():
    """A catalog price is turned into the market's currency by market_price() only, and a card's
    training rate by card_tflops(): no rule writes either expression out again.
    """
    from pathlib import Path

    written = {
        "market_price": ("price.usd if", "else price.cny"),
        "card_tflops": ("fp32_tflops if memory.compute_mode == 'fp32' else (g.bf16_tflops if precision == 'bf16' and",),
    }
    rules = Path(__file__).resolve().parent.parent / "rules"
    found = []
    for path in sorted(rules.rglob("*.yaml")):
        if path.name.endswith(".test.yaml"):
            continue
        text = path.read_text(encoding="utf-8")
        found += [(path.name, name) for name, needles in written.items() if any(n in text for n in needles)]
    assert found == []
