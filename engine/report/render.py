"""Reports from the JSON document through Jinja templates (text, Markdown, HTML), and explanations."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..explain.record import plain
from ..explain.result import Result
from ..format import num, printable, quantity
from ..load.resources import data_dir
from .chart import bar_chart
from .document import document, to_json

FORMATS = {"text": "txt", "markdown": "md", "html": "html"}

WIDTH = 120
"""The longest line the text and Markdown reports write (a URL or an id longer than that is cut)."""
_GLUE = re.compile(r"(\d) (?=[A-Za-z%])")  # a number stays on the line of its unit: 14.5 GB, 4 x

_ENVS: dict[Path, Any] = {}


def environment(templates: Path | None = None) -> Any:
    """The Jinja environment for a templates folder (the shipped one by default)."""
    import jinja2

    root = Path(templates or data_dir("templates"))
    env = _ENVS.get(root)
    if env is None:
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(root)),
            autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            # Jinja's optimizer folds constants at compile time; each report is rendered once per
            # run, so it cost more (20 of the 70 ms compiling the shared macros) than it saved
            optimized=False,
        )
        env.filters["num"] = num
        env.filters["q"] = quantity
        env.filters["json"] = lambda v: json.dumps(plain(v), ensure_ascii=False)
        env.filters["wrap"] = wrap
        env.filters["money"] = money
        env.globals["bar_chart"] = bar_chart
        env.globals["columns"] = columns
        env.globals["show"] = show
        env.globals["show_inputs"] = show_inputs
        env.globals["WIDTH"] = WIDTH
        _ENVS[root] = env
    return env


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|&])")


def safe_url(url: str) -> bool:
    """A URL a report may turn into a link: http(s), or relative (no scheme, not '//host')."""
    if not url or any(ch.isspace() or not ch.isprintable() for ch in url) or "\\" in url:
        return False
    scheme = _SCHEME.match(url)
    if scheme:
        return scheme.group(1).lower() in ("http", "https") and url[len(scheme.group(0)) :].startswith("//")
    return not url.startswith("//")


def safe_links(value: Any) -> Any:
    """A copy of a document in which a source's URL that is not safe to link is moved into its text."""
    if isinstance(value, list):
        return [safe_links(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: safe_links(v) for k, v in value.items()}
    url = out.get("url")
    if "doc" in out and isinstance(url, str) and not safe_url(url):
        del out["url"]
        out["doc"] = f"{out['doc']} [not a web link: {url}]"
    return out


def shown(value: Any) -> Any:
    """A copy with every text shown as a person reads it: a line break, a tab, a terminal escape or
    a bidirectional override in a name (or any other text) written as an escape, in every format.
    """
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, list):
        return [shown(v) for v in value]
    if isinstance(value, dict):
        return {shown(k): shown(v) for k, v in value.items()}
    return value


def markdown_text(value: Any) -> Any:
    """A copy with every text made inert in Markdown: no HTML, links, code spans, emphasis,
    table cells or line breaks can come out of it (the characters are escaped, line breaks are spaces).
    """
    if isinstance(value, str):
        return _MD_SPECIAL.sub(r"\\\1", " ".join(value.splitlines()))
    if isinstance(value, list):
        return [markdown_text(v) for v in value]
    if isinstance(value, dict):
        return {markdown_text(k): markdown_text(v) for k, v in value.items()}
    return value


def _fenced(value: Any) -> Any:
    """A copy whose texts cannot close a fenced code block (a run of three backticks)."""
    if isinstance(value, str):
        return value.replace("```", "\u02cb\u02cb\u02cb")
    if isinstance(value, list):
        return [_fenced(v) for v in value]
    if isinstance(value, dict):
        return {k: _fenced(v) for k, v in value.items()}
    return value


def _fold(text: str, width: int, indent: str = "") -> list[str]:
    """Text folded at word boundaries to ``width`` columns, a number kept on the line of its unit."""
    lines = textwrap.wrap(_GLUE.sub("\\1\0", text), width=width, subsequent_indent=indent, break_on_hyphens=False)
    return [line.replace("\0", " ") for line in lines]


def wrap(line: object, indent: int = 0, width: int = WIDTH) -> str:
    """A line folded at word boundaries to ``width`` columns, continuation lines indented by ``indent`` spaces.

    A template writes the whole line, label and padding included, and pipes it here; line breaks already in
    the text start new lines at the same indent.
    """
    pad = " " * indent
    out = []
    for n, para in enumerate(str(line).split("\n")):
        text = para if n == 0 else pad + para.lstrip()
        out.append("\n".join(_fold(text, width, pad)) or text)
    return "\n".join(out)


def money(value: object, currency: str = "") -> str:
    """An amount of money, rounded to whole units, with its currency: 31,600 USD."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "?"
    return f"{num(round(value))} {currency}".rstrip()


def show(value: object, unit: str | None, currency: str = "") -> str:
    """A value as the reports show it: an amount of money (unit ``currency``) in the given currency, others with
    their unit.

    A Python function rather than a template macro, so that the HTML report escapes what it returns.
    """
    if unit == "currency":
        return money(value, currency)
    return quantity(value, unit)


def show_inputs(values: dict[str, Any], attributes: dict[str, Any], currency: str = "") -> str:
    """The inputs of a conclusion, ``name = value`` joined by commas, each with its unit."""
    return ", ".join(
        f"{k} = {show(v, attributes[k]['unit'] if k in attributes else None, currency)}" for k, v in values.items()
    )


def columns(
    rows: Sequence[Any], widths: Sequence[int], keys: Sequence[str] | None = None, align: str = "", gap: int = 2
) -> list[str]:
    """Rows of cells side by side, each cell folded to its column's width; the lines, right-trimmed.

    A row is a list of cells, or a mapping read at ``keys``; ``align`` has one character per column,
    ``<`` (left, the default) or ``>`` (right).
    """
    lines: list[str] = []
    for row in rows:
        values = [row.get(k, "") for k in keys] if keys is not None else list(row)
        cells = [_fold(str(v), w) or [""] for v, w in zip(values, widths, strict=True)]
        for k in range(max(len(c) for c in cells)):
            parts = []
            for n, (c, w) in enumerate(zip(cells, widths, strict=True)):
                cell = c[k] if k < len(c) else ""
                parts.append(cell.rjust(w) if align[n : n + 1] == ">" else cell.ljust(w))
            lines.append((" " * gap).join(parts).rstrip())
    return lines


def render(result: Result, fmt: str, templates: Path | None = None, layout: str = "auto", full: bool = False) -> str:
    """One recommendation in a report format: json, text, markdown or html.

    The text and Markdown reports are one screen (configuration, what bound it, alternatives, warnings);
    ``full`` adds every conclusion's derivation and the inputs, which HTML always shows, each with a
    drawing of that derivation alone (``layout`` is no longer used by HTML: the drawings need no layout). In HTML and
    Markdown only http(s) and relative URLs become links; Markdown escapes the workload's and the
    rules' text, so that no value can add markup.
    """
    if fmt == "json":
        return to_json(document(result))
    doc = shown(document(result))
    if fmt in ("html", "markdown"):
        doc = safe_links(doc)
    tmpl = environment(templates).get_template(f"recommend.{FORMATS[fmt]}.j2")
    extra = {}
    if fmt == "html":
        from markupsafe import Markup

        from .drawing import derivation_svg

        def derivation(attr: str) -> Markup:
            """One conclusion's derivation, drawn alone (the whole graph is 'gpusizer graph')."""
            return Markup(derivation_svg(result, attr))

        extra["derivation"] = derivation
    attributes = {
        name: {"unit": result.unit(name), "description": a.description}
        for name, a in result.rulebase.attributes.items()
    }
    if fmt == "markdown":
        doc, attributes = markdown_text(doc), markdown_text(attributes)
    catalogs = result.rulebase.catalogs

    def item(catalog: str, item_id: object) -> Any:
        """A catalog item by id (its name), or None; in Markdown its name escaped like every other text."""
        cat = catalogs.get(catalog)
        found = cat.items.get(str(item_id)) if cat else None
        if found is None:
            return None
        name = printable(str(found.name))
        # the name shown printable (and escaped in Markdown like every other text); fields as the catalog gives them
        return SimpleNamespace(id=found.id, name=markdown_text(name) if fmt == "markdown" else name, get=found.get)

    return str(
        tmpl.render(
            doc=doc, c=doc["conclusions"], i=doc["inputs"], attributes=attributes, item=item, full=full, **extra
        )
    )


def render_explain(result: Result, attr: str, fmt: str, depth: int | None = None, templates: Path | None = None) -> str:
    """How one conclusion was derived, in a report format."""
    tree = result.explain_tree(attr, depth)
    if fmt == "json":
        return to_json(plain(tree))
    tmpl = environment(templates).get_template(f"explain.{FORMATS[fmt]}.j2")
    tree = shown(plain(tree))
    workload: Any = SimpleNamespace(name=printable(result.workload.name))
    if fmt == "markdown":  # the tree is shown in a fenced block, the name in a heading
        tree, workload = _fenced(tree), SimpleNamespace(name=markdown_text(workload.name))
    return str(tmpl.render(tree=tree, workload=workload))
