"""The report people read: one screen by default, the derivation behind --full, lines of at most 120 characters,
and one definition of the rows for every format."""

import re
from pathlib import Path

import pytest

from corpus import EXAMPLES, ROOT, run_cli

WIDTH = 120
SCREEN = 55  # about 40 lines, and a few more when a workload draws many warnings


def _report(example, *extra):
    code, out, err = run_cli(["recommend", example.relative_to(ROOT).as_posix(), *extra])
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def rendered(recommender):
    """Every example's report in text and Markdown, short and full, from one run each."""
    from engine.report.render import render

    out = {}
    for example in EXAMPLES:
        result = recommender.recommend(example)
        for fmt in ("text", "markdown"):
            for full in (False, True):
                out[example.stem, fmt, full] = render(result, fmt, full=full)
    return out


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_the_default_text_report_fits_on_a_screen(example, rendered):
    text = rendered[example.stem, "text", False]
    lines = text.splitlines()
    assert len(lines) <= SCREEN, f"{example.stem}: {len(lines)} lines"
    for head in ("CONFIGURATION", "WHAT BOUND IT"):
        assert any(line.startswith(head) for line in lines), head
    assert "DERIVATION" not in lines and "INPUTS" not in lines


def test_no_line_is_longer_than_the_width(rendered):
    for (stem, fmt, full), text in rendered.items():
        long = [line for line in text.splitlines() if len(line) > WIDTH]
        assert not long, f"{stem} {fmt} full={full}: {long[0]!r}"


def test_why_not_and_what_if_text_keep_to_the_width():
    """What people read in a terminal: why-not's answers and what-if's changes fold like the report."""
    text = [p.read_text() for p in sorted((ROOT / "tests" / "golden").glob("why-not.*.txt"))]
    text += [p.read_text() for p in sorted((ROOT / "tests" / "golden").glob("what-if.*.txt"))]
    assert len(text) >= 8
    long = [line for t in text for line in t.splitlines() if len(line) > WIDTH]
    assert not long, long[0]


def test_full_adds_the_derivation_and_inputs():
    example = ROOT / "examples" / "llama2-70b-chat.yaml"
    short, full = _report(example), _report(example, "--full")
    assert full.startswith(short.rsplit("\n\n", 1)[0])
    for head in ("DERIVATION", "INPUTS"):
        assert head in full.splitlines()
    assert "rule    gpu-from-selection:" in full
    md = _report(example, "--format", "markdown", "--full")
    assert "## Derivation" in md and "## Inputs" in md


def test_alternatives_stand_side_by_side_with_their_costs():
    """The alternatives that differ from the choice stand side by side; one that is the choice is named in a line."""
    text = _report(ROOT / "examples" / "sme-deployment-qwen2.5-7b.yaml")
    block = text.split("ALTERNATIVES", 1)[1].split("\n\n", 1)[0].splitlines()
    assert re.search(r"most headroom\s+preferred class", block[1]) and "cheapest fit" not in block[1]
    cost = next(line for line in block if line.lstrip().startswith("Cost"))
    assert cost.count("USD") == 2
    assert any(line.lstrip().startswith("Why not") for line in block)
    assert block[-1].strip() == "The choice is also the cheapest fit."


def test_money_is_shown_in_the_market_currency():
    text = _report(ROOT / "examples" / "cn-qwen2.5-72b-serving.yaml")
    assert "CNY" in text and " USD" not in text and "currency" not in text


def test_owned_gpus_have_no_alternatives():
    text = _report(ROOT / "examples" / "owned-rtx3090-llama3-8b-lora.yaml")
    assert "owned" in text and "ALTERNATIVES" not in text and "Owned GPUs" in text


def test_the_rows_are_defined_once():
    """The text, Markdown and HTML templates lay out rows that _report.j2 defines, and repeat none of them."""
    templates = ROOT / "templates"
    shared = (templates / "_report.j2").read_text(encoding="utf-8")
    for label in ("GPU memory", "Card floor", "Memory", "Storage", "Network", "Power", "Total"):
        assert f'"label": "{label}"' in shared
    for name in ("recommend.txt.j2", "recommend.md.j2", "recommend.html.j2"):
        text = (templates / name).read_text(encoding="utf-8")
        assert 'import "_report.j2"' in text
        for attr in ("ram.system_gb", "power.supplies", "storage.drives", "cost.total", "gpu.floor_note"):
            assert attr not in text, f"{name} reads {attr} itself"


def test_html_graph_text_is_readable_and_attributes_are_described(tmp_path):
    out = tmp_path / "r.html"
    code, _, err = run_cli(
        ["recommend", "examples/llama2-70b-chat.yaml", "--format", "html", "--layout", "python", "-o", str(out)]
    )
    assert code == 0, err
    html = out.read_text(encoding="utf-8")
    # each derivation is drawn alone, beside its explanation
    graph = html.split('class="graph"><', 1)[1]
    svg = re.search(r"<svg[^>]*>", graph).group(0)
    assert 'width="100%"' not in svg
    assert int(re.search(r'font-size="(\d+)"', svg).group(1)) >= 10
    # a conclusion's description, not only its name
    from engine.plan.rulebase import load_rulebase

    rb = load_rulebase()
    assert rb.attributes["ram.system_gb"].description.split("(")[0].strip() in html
    assert 'class="desc"' in html


def test_templates_do_not_mention_machine_paths():
    for path in Path(ROOT / "templates").glob("*.j2"):
        assert "/work/" not in path.read_text(encoding="utf-8")
