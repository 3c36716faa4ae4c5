"""Reports from the JSON document through Jinja templates (text, Markdown, HTML), and explanations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..explain.record import plain
from ..explain.result import Result
from ..format import num, quantity
from ..load.resources import data_dir
from .chart import bar_chart
from .document import document, to_json

FORMATS = {"text": "txt", "markdown": "md", "html": "html"}

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
        env.globals["bar_chart"] = bar_chart
        _ENVS[root] = env
    return env


def render(result: Result, fmt: str, templates: Path | None = None, layout: str = "auto") -> str:
    """One recommendation in a report format: json, text, markdown or html."""
    if fmt == "json":
        return to_json(document(result))
    doc = document(result)
    tmpl = environment(templates).get_template(f"recommend.{FORMATS[fmt]}.j2")
    extra = {}
    if fmt == "html":
        from markupsafe import Markup

        from .drawing import subgraph, to_svg

        extra["graph"] = Markup(to_svg(subgraph(result), layout))
    attributes = {
        name: {"unit": a.unit, "description": a.description} for name, a in result.rulebase.attributes.items()
    }
    return str(tmpl.render(doc=doc, c=doc["conclusions"], i=doc["inputs"], attributes=attributes, **extra))


def render_explain(result: Result, attr: str, fmt: str, depth: int | None = None, templates: Path | None = None) -> str:
    """How one conclusion was derived, in a report format."""
    tree = result.explain_tree(attr, depth)
    if fmt == "json":
        return to_json(plain(tree))
    tmpl = environment(templates).get_template(f"explain.{FORMATS[fmt]}.j2")
    return str(tmpl.render(tree=tree, workload=result.workload))
