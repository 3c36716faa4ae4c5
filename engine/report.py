"""Reports: a stable JSON document, and Jinja templates fed from it."""
from __future__ import annotations

import json
import math
from pathlib import Path

from .resources import data_dir
from .result import Result

FORMATS = {"text": "txt", "markdown": "md", "html": "html"}


def _plain(value):
    """Values as JSON would carry them (tuples to lists), floats kept exact."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def document(result: Result) -> dict:
    """The JSON report: stable keys, every conclusion with its rule, source and inputs."""
    from . import __version__

    rb = result.rulebase
    w = result.workload
    inputs = {}
    for attr, iv in result.outcome.inputs.items():
        inputs[attr] = {"value": _plain(iv.value), "unit": rb.attributes[attr].unit,
                        "origin": iv.origin, "detail": iv.detail}
    conclusions = {}
    for attr in sorted(result.conclusions):
        a = rb.attributes[attr]
        if not a.report:
            continue
        step = result.explain(attr)
        first = step["binding"][0]
        conclusions[attr] = {
            "value": _plain(step["value"]), "unit": a.unit, "description": a.description,
            "rule": first["rule"], "summary": first["summary"], "source": first["sources"],
            "overlay": first["overlay"],
            "inputs": _plain(first["inputs"]),
            "items": first["items"],
            "combine": a.combine, "note": step["note"],
            "contributions": [{"rule": x["rule"], "value": _plain(x["value"]), "binding": x["binding"]}
                              for x in step["binding"] + step["beaten"]],
        }
    return {
        "gpusizer": __version__,
        "workload": {"name": w.name, "file": w.file},
        "input_sha256": w.sha256,
        "inputs": inputs,
        "conclusions": conclusions,
        "rulebase": {"rules": len(rb.rules), "sha256": rb.sha256, "overlays": rb.overlays},
        "firings": len(result.firings),
    }


def to_json(doc) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def num(value, digits: int = 4) -> str:
    """Numbers for people: 153.7, 0.5, 68,976,648,192 -> 68.98e9 stays readable."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}" if abs(value) < 1e12 else f"{value:.4g}"
    if value == 0 or not math.isfinite(value):
        return str(value)
    mag = int(math.floor(math.log10(abs(value))))
    decimals = max(0, digits - 1 - mag)
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def quantity(value, unit=None) -> str:
    if isinstance(value, list):
        return ", ".join(quantity(v) for v in value) if value else "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k} {quantity(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = num(value)
    return f"{text} {unit}" if unit and text else text


_ENVS: dict = {}


def environment(templates: Path | None = None):
    import jinja2

    root = Path(templates or data_dir("templates"))
    env = _ENVS.get(root)
    if env is None:
        from .cache import template_cache

        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(root)),
                                 autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",),
                                                                     default_for_string=False),
                                 bytecode_cache=template_cache(),
                                 undefined=jinja2.StrictUndefined, trim_blocks=True,
                                 lstrip_blocks=True, keep_trailing_newline=True)
        env.filters["num"] = num
        env.filters["q"] = quantity
        env.filters["json"] = lambda v: json.dumps(_plain(v), ensure_ascii=False)
        env.globals["bar_chart"] = bar_chart
        _ENVS[root] = env
    return env


def render(result: Result, fmt: str, templates: Path | None = None, layout: str = "auto") -> str:
    if fmt == "json":
        return to_json(document(result))
    doc = document(result)
    tmpl = environment(templates).get_template(f"recommend.{FORMATS[fmt]}.j2")
    extra = {}
    if fmt == "html":
        from markupsafe import Markup

        from .drawing import subgraph, to_svg
        extra["graph"] = Markup(to_svg(subgraph(result), layout))
    return tmpl.render(doc=doc, c=doc["conclusions"], i=doc["inputs"],
                       attributes=result.rulebase.attributes, **extra)


def bar_chart(parts, unit: str | None = None):
    """An inline SVG stacked bar with a legend; ``parts`` is [(label, value), ...]. Labels are escaped."""
    from xml.sax.saxutils import escape

    from markupsafe import Markup

    parts = [(str(label), v) for label, v in parts if isinstance(v, (int, float)) and v > 0]
    if not parts:
        return Markup("<p>Nothing to chart.</p>")
    total = sum(v for _, v in parts)
    colours = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]
    width, x = 960, 0.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {40 + 22 * len(parts)}" width="100%" '
           'role="img" aria-label="breakdown" font-family="Helvetica, Arial, sans-serif" font-size="12">']
    for n, (label, v) in enumerate(parts):
        w = width * v / total
        colour = colours[n % len(colours)]
        out.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="28" fill="{colour}">'
                   f'<title>{escape(label)}: {escape(quantity(v, unit))}</title></rect>')
        x += w
        out.append(f'<rect x="0" y="{38 + 22 * n}" width="12" height="12" fill="{colour}"/>'
                   f'<text x="18" y="{48 + 22 * n}">{escape(label)}: {escape(quantity(v, unit))} '
                   f'({100 * v / total:.1f}%)</text>')
    out.append("</svg>")
    return Markup("\n".join(out))


def render_explain(result: Result, attr: str, fmt: str, depth: int | None = None,
                   templates: Path | None = None) -> str:
    tree = result.explain_tree(attr, depth)
    if fmt == "json":
        return to_json(_plain(tree))
    tmpl = environment(templates).get_template(f"explain.{FORMATS[fmt]}.j2")
    return tmpl.render(tree=tree, workload=result.workload)
