"""Reports from the JSON document through Jinja templates (text, Markdown, HTML), and explanations."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..explain.record import plain
from ..explain.result import Result
from ..format import num, quantity
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


def wrap(line: object, indent: int = 0, width: int = WIDTH) -> str:
    """A line folded at word boundaries to ``width`` columns, continuation lines indented by ``indent`` spaces.

    A template writes the whole line, label and padding included, and pipes it here; line breaks already in
    the text start new lines at the same indent.
    """
    import textwrap

    pad = " " * indent
    out = []
    for n, para in enumerate(str(line).split("\n")):
        text = _GLUE.sub("\\1\0", para if n == 0 else pad + para.lstrip())
        out.append(textwrap.fill(text, width=width, subsequent_indent=pad, break_on_hyphens=False) or text)
    return "\n".join(out).replace("\0", " ")


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
    import textwrap

    lines: list[str] = []
    for row in rows:
        values = [row.get(k, "") for k in keys] if keys is not None else list(row)
        cells = [
            [
                line.replace("\0", " ")
                for line in textwrap.wrap(_GLUE.sub("\\1\0", str(v)), width=w, break_on_hyphens=False)
            ]
            or [""]
            for v, w in zip(values, widths, strict=True)
        ]
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
    ``full`` adds every conclusion's derivation and the inputs, which HTML always shows.
    """
    if fmt == "json":
        return to_json(document(result))
    doc = document(result)
    tmpl = environment(templates).get_template(f"recommend.{FORMATS[fmt]}.j2")
    extra = {}
    if fmt == "html":
        from markupsafe import Markup

        from .drawing import subgraph, to_svg

        extra["graph"] = Markup(to_svg(subgraph(result, binding_only=True), layout))
    attributes = {
        name: {"unit": a.unit, "description": a.description} for name, a in result.rulebase.attributes.items()
    }
    catalogs = result.rulebase.catalogs

    def item(catalog: str, item_id: object) -> Any:
        """A catalog item by id (its name and fields), or None."""
        cat = catalogs.get(catalog)
        return cat.items.get(str(item_id)) if cat else None

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
    return str(tmpl.render(tree=tree, workload=result.workload))
