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
    assert base["conclusions"]["ram.floor_gb"]["value"] == 64
    floor = site["conclusions"]["ram.floor_gb"]
    assert floor["value"] == 96 and floor["rule"] == "ram-site-floor" and floor["overlay"] == "site-rules"
    assert site["conclusions"]["ram.system_gb"]["value"] >= 96 > base["conclusions"]["ram.system_gb"]["value"]
    assert "ram-personal-tier" in [c["rule"] for c in base["conclusions"]["ram.floor_gb"]["contributions"]]
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
    code, out, err = run_cli(["explain", EXAMPLE, "ram.floor_gb", "--rules", SITE_RULES, "--format", "json"])
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
