"""The HTML report: self-contained, escaped, and checked in a real (headless) browser."""

import os
import re
import shutil
import subprocess

import pytest

from corpus import run_cli

XSS = """name: "<script>alert(1)</script>"
task: inference
model: {name: gpt2}
"""


def _html(tmp_path, workload="examples/llama2-70b-chat.yaml"):
    out = tmp_path / "report.html"
    code, _, err = run_cli(["recommend", str(workload), "--format", "html", "--layout", "python", "-o", str(out)])
    assert code == 0, err
    return out


def test_report_is_self_contained(tmp_path):
    html = _html(tmp_path).read_text()
    assert "<svg" in html and 'id="memory-chart"' in html
    # each conclusion's derivation is drawn alone, at a readable size (the whole graph: 'gpusizer graph')
    sizes = [int(w) for w in re.findall(r'width="(\d+)" height="\d+" role="img" aria-label="how ', html)]
    assert sizes and max(sizes) <= 1000
    # nothing is fetched: no scripts, stylesheets or images from elsewhere
    assert not re.search(r"<(script|link|img|iframe)\b", html)
    assert not re.search(r"src=|@import|url\(", html)


def test_workload_values_are_escaped(tmp_path):
    wl = tmp_path / "xss.yaml"
    wl.write_text(XSS)
    html = _html(tmp_path, wl).read_text()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_graph_command_writes_dot_and_svg(tmp_path):
    code, dot, err = run_cli(["graph", "examples/llama2-70b-chat.yaml", "--format", "dot"])
    assert code == 0 and dot.startswith("digraph derivation {")
    code, svg, err = run_cli(
        [
            "graph",
            "examples/llama2-70b-chat.yaml",
            "--format",
            "svg",
            "--layout",
            "python",
            "--attribute",
            "ram.system_gb",
        ]
    )
    assert code == 0 and svg.startswith("<svg") and "ram.system_gb" in svg


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(args, tmp_path):
    profile = tmp_path / "profile"
    base = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1200,1600",
    ]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(
    not _chromium() and not os.environ.get("CI"), reason="headless Chromium is not installed (CI installs it)"
)
def test_report_renders_in_a_browser(tmp_path):
    assert _chromium(), "CI must install Debian's chromium package"
    wl = tmp_path / "xss.yaml"
    wl.write_text(XSS)
    report = _html(tmp_path, wl)
    probe = tmp_path / "probe.html"
    probe.write_text(
        report.read_text().replace(
            "</body>",
            "<script>document.body.setAttribute('data-overflow', "
            "String(document.documentElement.scrollWidth > window.innerWidth));"
            "document.body.setAttribute('data-scripts', String(document.scripts.length));</script></body>",
        )
    )
    dom = _browser(["--virtual-time-budget=2000", "--dump-dom", probe.as_uri()], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout
    assert 'data-overflow="false"' in text, "the report scrolls sideways"
    assert 'data-scripts="1"' in text, "only the probe's own script may exist"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert 'id="recommendation"' in text and "<svg" in text
    shot = tmp_path / "report.png"
    pic = _browser([f"--screenshot={shot}", report.as_uri()], tmp_path)
    assert pic.returncode == 0, pic.stderr[-2000:]
    assert shot.is_file() and shot.stat().st_size > 10_000
    keep = os.environ.get("GPUSIZER_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
