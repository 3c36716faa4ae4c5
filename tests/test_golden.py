"""Reports and error messages compared in full with the committed files (a JSON report or explanation
by its conclusions, corpus.golden_text, and its structure); HTML reports and derivation graphs checked
by their structure.

After an intended change: python tests/update_golden.py (--area to pick one), then review the diff.
"""

import html
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from corpus import BAD, GOLDEN, bad_rulebase, bad_workloads, golden_cases, golden_text, html_cases, normalise, run_cli

GOLDEN_CASES = list(golden_cases())
BAD_WORKLOADS = list(bad_workloads())
HTML_CASES = list(html_cases())


@pytest.mark.parametrize("name,argv", GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_report_matches_golden(name, argv, rulebase):
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert err == ""
    assert golden_text(argv, out) == (GOLDEN / name).read_text(encoding="utf-8")
    if name.endswith(".json") and argv[0] == "recommend":
        _check_document(json.loads(out), rulebase)
    if name.endswith(".json") and argv[0] == "explain":
        _check_derivation(json.loads(out))


def _check_document(doc: dict, rb) -> None:
    """The parts of a JSON report the golden leaves out: the rulebase it came from, and for every
    conclusion its description, the rule's summary and sources, what the rule read, and every
    contribution (one binding at least, each with its rule and value)."""
    assert doc["rulebase"] == {"rules": len(rb.rules), "sha256": rb.sha256, "overlays": []}
    for name, c in doc["conclusions"].items():
        assert c["description"] and c["summary"] and c["source"], name
        assert isinstance(c["inputs"], dict) and isinstance(c["items"], dict), name
        assert c["contributions"] and all(set(x) == {"rule", "value", "binding"} for x in c["contributions"]), name
        assert next(x["rule"] for x in c["contributions"] if x["binding"]) == c["rule"], name


def _check_derivation(step: dict) -> None:
    """Each step of a JSON explanation: the binding rules with their summary and sources, the beaten
    contributions with the rule they came from, told once under the step's rules."""
    if step["origin"] == "rule":
        assert step["binding"] and step["binding"][0]["rule"] == step["rule"]
        for b in step["binding"]:
            assert b["summary"] and b["sources"] and "inputs" in b
        assert {x["rule"] for x in step["beaten"]} <= set(step["rules"])
    for p in step["premises"]:
        _check_derivation(p)


def test_every_golden_file_has_its_case():
    """A golden file that no case writes any more is stale (update_golden.py removes it)."""
    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(name for name, _ in GOLDEN_CASES)


# -- HTML reports and graphs: structure, not bytes --------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
SECTIONS = ("title", "recommendation", "reasons", "memory-chart", "why-nodes", "why-warnings", "inputs")


class _Tree(HTMLParser):
    """Every element closed in order (SVG's self-closed ones too); ids seen; text outside tags."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.ids, self.errors, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        ident = dict(attrs).get("id")
        if ident:
            self.ids.append(ident)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        ident = dict(attrs).get("id")
        if ident:
            self.ids.append(ident)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}> at {self.getpos()}")
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _section(page: str, ident: str) -> str:
    """The text of the element with this id (its tags stripped, entities decoded)."""
    m = re.search(rf'<(\w+)[^>]*\bid="{re.escape(ident)}"[^>]*>(.*?)</\1>', page, re.S)
    assert m, f'no element id="{ident}"'
    return html.unescape(re.sub(r"<[^>]+>", " ", m.group(2)))


def _configuration_labels(text_report: str) -> list[str]:
    """The row labels of the text report's CONFIGURATION block (GPUs, Platform, CPU, ...)."""
    lines = text_report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("CONFIGURATION")) + 1
    labels = []
    for line in lines[start:]:
        if not line.strip():
            break
        if line[:2] == "  " and line[2] != " ":
            labels.append(line[2:14].strip())
    return labels


def check_html_report(page: str, text_report: str, doc: dict) -> None:
    """A report page: well formed, self-contained, every section there, the same configuration and workload
    as the text and JSON reports of the same run, every drawing well-formed SVG."""
    assert page.startswith("<!DOCTYPE html>")
    tree = _Tree()
    tree.feed(page)
    tree.close()
    assert not tree.errors, tree.errors[:5]
    assert tree.stack == [], f"unclosed: {tree.stack[-5:]}"
    assert len(tree.ids) == len(set(tree.ids)), "an id is used twice"
    missing = [s for s in SECTIONS if s not in tree.ids]
    assert not missing, f"sections missing: {missing}"
    assert ("alternatives" in tree.ids) == (
        "ALTERNATIVES" in text_report.splitlines()[:40] or "\nALTERNATIVES" in text_report
    )
    # nothing is fetched: no scripts, stylesheets, images or frames, and no URLs in styles
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", page)
    assert not re.search(r"\bsrc=|@import|url\(", page)
    # the same workload and configuration as the text report; the JSON's GPU choice named
    name = doc["workload"]["name"]
    assert html.unescape(_section(page, "title")).strip().endswith(name) or name in _section(page, "title")
    config = _section(page, "recommendation")
    for label in _configuration_labels(text_report):
        assert label in config, f"configuration row {label!r} of the text report is not in the page"
    conclusions = doc["conclusions"]
    for attr in ("gpu.model", "platform.model"):
        if attr in conclusions and isinstance(conclusions[attr]["value"], str):
            assert conclusions[attr]["value"] in config, f"{attr} = {conclusions[attr]['value']} not in the page"
    # each conclusion's derivation has its own step; each drawing is well-formed SVG
    steps = {
        i.removeprefix("why-") for i in tree.ids if i.startswith("why-") and i not in ("why-nodes", "why-warnings")
    }
    assert steps and steps <= set(conclusions) | set(doc["inputs"]), sorted(steps - set(conclusions))[:5]
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert svgs
    for svg in svgs:
        ET.fromstring(svg)


@pytest.mark.parametrize("name,argv", HTML_CASES, ids=[c[0] for c in HTML_CASES])
def test_html_report_structure(name, argv):
    code, page, err = run_cli(argv)
    assert code == 0 and err == "", err
    code, text_report, err = run_cli([a for a in argv[:2]])
    assert code == 0, err
    code, doc, err = run_cli([*argv[:2], "--format", "json"])
    assert code == 0, err
    check_html_report(page, text_report, json.loads(doc))


def test_the_html_check_finds_a_broken_page():
    """The structural check fails on a page that lost a section, fetches something, is cut short, shows
    another configuration or draws broken SVG."""
    argv = ["recommend", "examples/llama2-70b-chat.yaml"]
    page = run_cli([*argv, "--format", "html", "--layout", "python"])[1]
    text_report = run_cli(argv)[1]
    doc = json.loads(run_cli([*argv, "--format", "json"])[1])
    check_html_report(page, text_report, doc)
    other = json.loads(json.dumps(doc))
    other["conclusions"]["gpu.model"]["value"] = "no-such-card"
    broken = {
        "a section lost": (page.replace('id="reasons"', 'id="reasonz"'), text_report, doc),
        "a script": (
            page.replace("</body>", '<script src="https://x.example/a.js"></script></body>'),
            text_report,
            doc,
        ),
        "a stylesheet url": (page.replace("<style>", "<style>body{background:url(x.png)}"), text_report, doc),
        "cut short": (page[: len(page) // 2], text_report, doc),
        "another card": (page, text_report, other),
        "another row": (page, text_report.replace("  Storage ", "  Tape    ", 1), doc),
        "broken svg": (page.replace("</text>", "</txet>", 1), text_report, doc),
    }
    for what, args in broken.items():
        with pytest.raises(AssertionError):
            check_html_report(*args)
            pytest.fail(f"{what}: not found")


def test_graph_dot_and_svg_structure():
    """gpusizer graph: a dot digraph whose every edge joins declared nodes, and an SVG that parses, both
    naming the conclusions of the JSON report; the same bytes twice."""
    llama = "examples/llama2-70b-chat.yaml"
    code, dot, err = run_cli(["graph", llama, "--format", "dot"])
    assert code == 0 and err == "", err
    assert dot == run_cli(["graph", llama, "--format", "dot"])[1]
    assert dot.startswith("digraph derivation {") and dot.rstrip().endswith("}")
    nodes = set(re.findall(r"^\s*(\w+) \[label=", dot, re.M))
    edges = re.findall(r"^\s*(\w+) -> (\w+)", dot, re.M)
    assert nodes and edges
    undeclared = {n for e in edges for n in e} - nodes
    assert not undeclared, sorted(undeclared)[:5]
    code, doc, _ = run_cli(["recommend", llama, "--format", "json"])
    conclusions = set(json.loads(doc)["conclusions"])
    for attr in ("gpu.model", "gpu.count", "memory.vram_required_gb", "ram.system_gb"):
        assert attr in conclusions and attr in dot
    code, svg, err = run_cli(["graph", llama, "--format", "svg", "--layout", "python"])
    assert code == 0 and err == "", err
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    texts = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    for attr in ("gpu.model", "memory.vram_required_gb"):
        assert attr in texts


@pytest.mark.parametrize("name,argv,expected", BAD_WORKLOADS, ids=[c[0] for c in BAD_WORKLOADS])
def test_bad_workload_message(name, argv, expected):
    code, out, err = run_cli(argv)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert f"exit {code}\n{err}" == expected.read_text(encoding="utf-8")


BAD_RULEBASES = sorted(
    p.relative_to(BAD).as_posix() for kind in ("rules", "knowledge") for p in (BAD / kind).iterdir() if p.is_dir()
)


def test_the_bad_rulebase_corpus_is_not_empty():
    assert len(BAD_RULEBASES) >= 12


@pytest.mark.parametrize("case", BAD_RULEBASES)
def test_bad_rulebase_message(case, tmp_path):
    name, argv, expected, root = bad_rulebase(case, tmp_path)
    code, out, err = run_cli(argv)
    assert code == 2
    assert "Traceback" not in err
    assert f"exit {code}\n{normalise(err, root)}" == expected.read_text(encoding="utf-8")


def test_batch_keeps_good_results_and_fails_overall(tmp_path):
    """A bad file in a batch is reported; the good ones are still written; exit code 2."""
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        [
            "recommend",
            "examples/llama2-70b-chat.yaml",
            "tests/bad/workloads/unknown-key.yaml",
            "examples/gpt2-finetune-personal.yaml",
            "-o",
            str(out),
        ]
    )
    assert code == 2
    assert "unknown key 'batch_sise'" in err
    assert sorted(p.name for p in out.iterdir()) == ["gpt2-finetune-personal.txt", "llama2-70b-chat.txt"]
    assert (out / "llama2-70b-chat.txt").read_text() == (GOLDEN / "llama2-70b-chat.txt").read_text()


def test_json_batch_is_one_array():
    import json

    code, out, err = run_cli(
        ["recommend", "examples/llama2-70b-chat.yaml", "examples/hpc-fp64-bert.yaml", "--format", "json"]
    )
    assert code == 0, err
    docs = json.loads(out)
    assert [d["workload"]["name"] for d in docs] == ["llama2-70b-chat", "hpc-fp64-bert"]


def test_explain_unknown_attribute_suggests_the_closest():
    code, out, err = run_cli(["explain", "examples/llama2-70b-chat.yaml", "ram.system_g"])
    assert code == 2
    assert "unknown attribute 'ram.system_g'" in err and "did you mean 'ram.system_gb'" in err


def test_explain_depth_cuts_the_tree():
    code, full, _ = run_cli(["explain", "examples/llama2-70b-chat.yaml", "gpu.model"])
    code2, cut, _ = run_cli(["explain", "examples/llama2-70b-chat.yaml", "gpu.model", "--depth", "1"])
    assert code == code2 == 0
    assert "precision = fp16" in full and "precision = fp16" not in cut
    assert "..." in cut


def test_missing_file_is_a_clean_error():
    code, out, err = run_cli(["recommend", "examples/no-such-file.yaml"])
    assert code == 2
    assert err.startswith("examples/no-such-file.yaml: error: file not found")
