"""gpusizer serve's page in a real headless Chromium (Playwright for Python, Debian's chromium):
type a workload, see the GPU appear, click a figure, see its derivation, make an error and see it
at its line. GPUSIZER_SCREENSHOTS=DIR keeps screenshots at two widths there (docs/ holds them).
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

pytest.importorskip("fastapi", reason="gpusizer[serve] is not installed (the README's test command installs it)")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    not CHROMIUM and not os.environ.get("CI"),
    reason="Debian's headless chromium is not installed (apt-get install chromium; CI installs it)",
)

from serve_helpers import Server, make_pool  # noqa: E402

from engine.serve.app import Options  # noqa: E402

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def server():
    pool = make_pool(size=2)
    try:
        with Server(pool, Options()) as s:
            yield s
    finally:
        pool.close()


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM, "CI must install Debian's chromium package"
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def settle(page):
    """Until no request of the page is in flight (HTMX marks the form while one is)."""
    page.wait_for_timeout(600)  # the editor's debounce
    page.locator("#w.htmx-request").wait_for(state="detached")
    page.locator("#headline", has_text="chat:").wait_for()


def _type_workload(page, text):
    editor = page.locator("#yaml")
    editor.fill("")
    editor.type(text, delay=2)


def test_type_a_workload_click_a_figure_see_an_error(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(120_000)  # a loaded 2-CPU machine answers slowly
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server.url + "/")
    page.wait_for_selector("#recommendation")
    # type a workload: the answer follows
    _type_workload(page, "name: chat\ntask: inference\nmodel: {name: llama-2-70b}\nprecision: fp16\n")
    # (waits by locators: the page's Content-Security-Policy forbids evaluating strings)
    page.locator("#headline", has_text="chat:").wait_for()
    settle(page)
    headline = page.locator("#headline").inner_text()
    assert "x " in headline and "gb" in headline.lower(), headline
    # the form followed the text
    assert page.locator('#pickers [data-key="model.name"]').input_value() == "llama-2-70b"
    # click a figure: its derivation, with its rule, source and drawing
    page.locator('#recommendation button[data-attr="ram.system_gb"]').click()
    page.wait_for_selector("#derivation-card #derivation-title")
    card = page.locator("#derivation-card").inner_text()
    assert "ram.system_gb" in card and "Set by rule" in card
    assert page.locator("#derivation-graph svg").count() == 1
    box = page.locator("#derivation-graph svg").bounding_box()
    assert box and box["width"] <= 1000
    page.locator("#derivation-close").click()
    # the form changes the text, and the answer
    page.locator('#pickers [data-key="precision"]').select_option("int8")
    expect(page.locator("#yaml")).to_have_value(re.compile("precision: int8"))
    page.locator("#headline", has_text="chat:").wait_for()
    # an error: at its line in the editor
    _type_workload(page, "name: chat\ntask: inference\nmodel: {name: llama-2-70b}\nprecison: fp16\n")
    page.wait_for_selector("#gutter .ln.bad")
    assert page.locator("#gutter .ln.bad").inner_text() == "4"
    marker = page.locator("#marker")
    assert marker.is_visible() and "line 4" in marker.inner_text() and "precision" in marker.inner_text()
    assert not errors, errors
    page.close()


def test_screenshots_at_two_widths(server, browser, tmp_path):
    keep = os.environ.get("GPUSIZER_SCREENSHOTS")
    for width, height in ((1400, 1100), (420, 1600)):
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(server.url + "/")
        page.wait_for_selector("#recommendation")
        page.wait_for_selector("#candidates svg, #candidates p.muted:not(:first-child)", timeout=60000)
        overflow = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        assert not overflow, f"the page scrolls sideways at {width} px"
        shot = tmp_path / f"serve-{width}.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000
        if keep:
            shutil.copy(shot, os.path.join(keep, f"serve-{width}.png"))
        page.close()
