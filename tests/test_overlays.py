"""Site rulebases laid over the shipped one: add, replace, disable; amend a catalog."""

import json

from corpus import run_cli

SITE_RULES = "tests/overlays/site-rules"
SITE_KNOWLEDGE = "tests/overlays/site-knowledge"
EXAMPLE = "examples/gpt2-finetune-personal.yaml"


def _json(argv):
    code, out, err = run_cli(argv + ["--format", "json"])
    assert code == 0, err
    return json.loads(out)


def test_overlay_raises_the_ram_floor_and_disables_a_rule():
    base = _json(["recommend", EXAMPLE])
    site = _json(["recommend", EXAMPLE, "--rules", SITE_RULES])
    assert base["conclusions"]["ram.base_gb"]["value"] == 64
    floor = site["conclusions"]["ram.base_gb"]
    assert floor["value"] == 96 and floor["rule"] == "ram-site-floor" and floor["overlay"] == "site-rules"
    assert site["conclusions"]["ram.floor_gb"]["value"] == 96
    assert site["conclusions"]["ram.system_gb"]["value"] >= 96 > base["conclusions"]["ram.system_gb"]["value"]
    assert "ram-personal-tier" in [c["rule"] for c in base["conclusions"]["ram.base_gb"]["contributions"]]
    assert "ram-personal-tier" not in [c["rule"] for c in floor["contributions"]]
    (note,) = [o for o in site["rulebase"]["overlays"] if o["kind"] == "rules"]
    assert note == {
        "name": "acme-site",
        "kind": "rules",
        "added": ["ram-site-floor"],
        "replaced": [],
        "disabled": ["ram-personal-tier"],
    }


def test_explain_names_the_overlay():
    code, out, err = run_cli(["explain", EXAMPLE, "ram.base_gb", "--rules", SITE_RULES, "--format", "json"])
    assert code == 0, err
    tree = json.loads(out)
    assert tree["binding"][0]["overlay"] == "site-rules"


def test_knowledge_overlay_amends_prices():
    base = _json(["recommend", EXAMPLE])
    site = _json(["recommend", EXAMPLE, "--knowledge", SITE_KNOWLEDGE])
    assert base["conclusions"]["gpu.model"]["value"] == "rtx-3090-24gb"
    assert site["conclusions"]["gpu.model"]["value"] != "rtx-3090-24gb"
    assert any(o["kind"] == "knowledge" and o["catalog"] == "gpu" for o in site["rulebase"]["overlays"])


def test_disabling_an_unknown_rule_is_an_error(tmp_path):
    d = tmp_path / "site"
    d.mkdir()
    (d / "_overlay.yaml").write_text("disable: [ram-personal-teir]\n")
    code, out, err = run_cli(["recommend", EXAMPLE, "--rules", str(d)])
    assert code == 2
    assert "cannot disable unknown rule 'ram-personal-teir'" in err and "did you mean 'ram-personal-tier'" in err


def _site(tmp_path, text):
    d = tmp_path / "site"
    d.mkdir(exist_ok=True)
    (d / "prices.yaml").write_text(text)
    return str(d)


def test_a_price_list_needs_only_ids_and_the_fields_that_change(tmp_path):
    site = _site(tmp_path, "catalog: gpu\nitems:\n  - {id: rtx-3090-24gb, price: 4000, price_currency: CNY}\n")
    doc = _json(["recommend", "examples/owned-rtx3090-llama3-8b-lora.yaml", "--knowledge", site])
    base = _json(["recommend", EXAMPLE])
    assert base["conclusions"]["gpu.model"]["value"] == "rtx-3090-24gb"
    # an owned card costs nothing, whatever its price; the example that buys one pays the site's CNY price
    assert doc["conclusions"]["cost.gpus"]["value"] == 0
    bought = _json(["recommend", EXAMPLE, "--knowledge", site])
    assert bought["conclusions"]["gpu.model"]["value"] == "rtx-3090-24gb"
    assert bought["conclusions"]["cost.gpus"]["value"] == round(4000 * bought["conclusions"]["price.cny"]["value"])


def test_file_level_defaults_and_source_apply_to_every_item(tmp_path):
    doc = _json(["recommend", "examples/llama2-70b-chat.yaml", "--knowledge", SITE_KNOWLEDGE])
    assert "h100-pcie-80gb" not in doc["conclusions"]["gpu.unpriced"]["value"]
    # the file's defaults give the currency, date and condition a price needs; the price is the site's
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(
        "name: pinned\ntask: inference\nmodel: {name: llama-2-7b}\nprecision: fp16\nscenario: sme\n"
        "gpu: {model: h100-pcie-80gb}\n"
    )
    site = _json(["recommend", str(pinned), "--knowledge", SITE_KNOWLEDGE])
    assert site["conclusions"]["cost.gpus"]["value"] == 21000 * site["conclusions"]["gpu.count"]["value"]


def test_a_new_item_needs_name_and_source(tmp_path):
    site = _site(tmp_path, "catalog: gpu\nitems:\n  - {id: rtx-3090-ti-24gb, price: 1100}\n")
    code, out, err = run_cli(["recommend", EXAMPLE, "--knowledge", site])
    assert code == 2
    assert "item 'rtx-3090-ti-24gb' is new to catalog 'gpu', so it needs name and source" in err
    assert "did you mean 'rtx-3090-24gb'" in err


def test_a_new_catalog_needs_description_and_fields(tmp_path):
    site = _site(tmp_path, "catalog: racks\nitems:\n  - {id: r1, name: Rack 1, source: {doc: site}}\n")
    code, out, err = run_cli(["recommend", EXAMPLE, "--knowledge", site])
    assert code == 2
    assert "catalog 'racks' is defined here, so it needs 'description'" in err


def test_a_card_sold_new_needs_a_dated_sourced_price(tmp_path):
    """A catalog field may say which items must give it (required_when): an overlay that adds a card sold new
    without a price, or makes a used-only card current without one, is refused when loaded and by validate."""
    site = _site(tmp_path, "catalog: gpu\nitems:\n  - {id: a800-pcie-80gb, status: current}\n")
    code, out, err = run_cli(["recommend", EXAMPLE, "--knowledge", site])
    assert code == 2
    assert "item 'a800-pcie-80gb' lacks field 'price', which it must give: its status is current" in err
    code, out, err = run_cli(["validate", "--knowledge", site])
    assert code == 1
    assert "lacks field 'price', which it must give: its status is current" in out
    # a price needs its currency and date (required_with)
    site = _site(tmp_path, "catalog: gpu\nitems:\n  - {id: a800-pcie-80gb, price: 9000}\n")
    code, out, err = run_cli(["recommend", EXAMPLE, "--knowledge", site])
    assert code == 2
    assert "lacks field 'price_currency', which it must give: it gives price" in err


def test_the_example_price_list_prices_an_unpriced_card():
    """examples/site-prices, the README's price list: only ids and prices, in CNY, with one source for all."""
    workload = "examples/cn-qwen2.5-72b-serving.yaml"
    base = _json(["recommend", workload])
    site = _json(["recommend", workload, "--knowledge", "examples/site-prices"])
    assert "a800-pcie-80gb" in base["conclusions"]["gpu.unpriced"]["value"]
    assert "a800-pcie-80gb" not in site["conclusions"].get("gpu.unpriced", {}).get("value", [])
    (note,) = [o for o in site["rulebase"]["overlays"] if o["kind"] == "knowledge"]
    assert "gpu" in str(note)
