"""The derivation graph as a picture: DOT text, and SVG from Graphviz or a pure-Python layout.

Graphviz's ``dot`` is used when it is installed (``layout="auto"``); otherwise,
or with ``layout="python"`` (which tests use, since dot's output differs
between versions), a layered left-to-right layout is computed here.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from typing import Any
from xml.sax.saxutils import escape

from ..errors import InputError
from ..explain.result import Result, value_node
from ..format import quantity


def _label(g: Any, node: str) -> tuple[str, str]:
    d = g.nodes[node]
    if d["kind"] == "firing":
        return d["rule"], "firing"
    if d["kind"] == "item":
        return f"{d['catalog']}: {d['id']}", "item"
    text = f"{d['attribute']} = {quantity(d['value'], d.get('unit'))}"
    return (text if len(text) <= 60 else text[:57] + "..."), ("input" if d.get("origin") != "rule" else "value")


def subgraph(result: Result, attrs: Iterable[str] | None = None, binding_only: bool = False) -> Any:
    """The part of the derivation graph that leads to ``attrs`` (default: every conclusion).

    ``binding_only`` leaves out what a combined value beat (a losing candidate and all that led only to it).
    """
    import networkx as nx

    g = result.graph
    if binding_only:
        g = g.edge_subgraph(
            (u, v) for u, v, d in g.edges(data=True) if d.get("kind") != "contribution" or d.get("binding")
        )
    targets = [value_node(a) for a in (attrs or sorted(result.conclusions)) if value_node(a) in g]
    keep = set(targets)
    for t in targets:
        keep |= nx.ancestors(g, t)
    return g.subgraph(sorted(keep)).copy()


def to_dot(g: Any) -> str:
    """The graph in Graphviz's DOT language."""
    styles = {
        "firing": 'shape=box, style="rounded,filled", fillcolor="#fde9c9"',
        "input": 'shape=note, style=filled, fillcolor="#e3eefc"',
        "item": 'shape=folder, style=filled, fillcolor="#e8f5e1"',
        "value": 'shape=ellipse, style=filled, fillcolor="#ffffff"',
    }
    lines = ["digraph derivation {", "  rankdir=LR;", '  node [fontname="Helvetica", fontsize=10];']
    ids = {n: f"n{i}" for i, n in enumerate(sorted(g.nodes))}
    for n in sorted(g.nodes):
        label, kind = _label(g, n)
        text = label.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'  {ids[n]} [label="{text}", {styles[kind]}];')
    for u, v in sorted(g.edges):
        d = g.edges[u, v]
        style = ' [style=dashed, color="#999999"]' if d.get("kind") == "contribution" and not d.get("binding") else ""
        lines.append(f"  {ids[u]} -> {ids[v]}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _layers(g: Any) -> dict[str, int]:
    import networkx as nx

    layer: dict[str, int] = {}
    for n in nx.topological_sort(g):
        preds = [layer[p] for p in g.predecessors(n)]
        layer[n] = max(preds) + 1 if preds else 0
    return layer


def python_svg(g: Any) -> str:
    """The graph as SVG, laid out in layers left to right without Graphviz."""
    layer = _layers(g)
    columns: dict[int, list[str]] = {}
    for n in sorted(g.nodes, key=lambda n: (layer[n], _label(g, n)[0])):
        columns.setdefault(layer[n], []).append(n)
    colw, rowh, boxh, pad = 300, 34, 24, 12
    pos = {}
    for c, nodes in columns.items():
        for r, n in enumerate(nodes):
            pos[n] = (pad + c * colw, pad + r * rowh)
    width = pad * 2 + len(columns) * colw
    height = pad * 2 + max(len(v) for v in columns.values()) * rowh if columns else 2 * pad
    fills = {"firing": "#fde9c9", "input": "#e3eefc", "item": "#e8f5e1", "value": "#ffffff"}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="derivation graph" font-family="Helvetica, Arial, sans-serif" font-size="12">'
    ]
    boxw = colw - 40
    for u, v in sorted(g.edges):
        (x1, y1), (x2, y2) = pos[u], pos[v]
        d = g.edges[u, v]
        dash = ' stroke-dasharray="4 3"' if d.get("kind") == "contribution" and not d.get("binding") else ""
        sx, sy, ex, ey = x1 + boxw, y1 + boxh / 2, x2, y2 + boxh / 2
        mx = (sx + ex) / 2
        out.append(
            f'<path d="M{sx:.0f},{sy:.0f} C{mx:.0f},{sy:.0f} {mx:.0f},{ey:.0f} {ex:.0f},{ey:.0f}" '
            f'fill="none" stroke="#8a8a8a"{dash}/>'
        )
    for n in sorted(g.nodes):
        x, y = pos[n]
        label, kind = _label(g, n)
        rx = 10 if kind == "firing" else 3
        text = label if len(label) <= 38 else label[:35] + "..."
        out.append(
            f'<g><title>{escape(label)}</title><rect x="{x}" y="{y}" width="{boxw}" height="{boxh}" '
            f'rx="{rx}" fill="{fills[kind]}" stroke="#555"/>'
            f'<text x="{x + 6}" y="{y + 16}">{escape(text)}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def to_svg(g: Any, layout: str = "auto") -> str:
    """The graph as SVG: Graphviz dot when installed (layout auto or dot), else the Python layout."""
    dot = shutil.which("dot") if layout in ("auto", "dot") else None
    if layout == "dot" and not dot:
        raise InputError("Graphviz 'dot' is not installed", help="install graphviz, or use --layout python")
    if dot:
        p = subprocess.run([dot, "-Tsvg"], input=to_dot(g), capture_output=True, text=True, timeout=60)
        if p.returncode == 0:
            svg = p.stdout
            return svg[svg.index("<svg") :] if "<svg" in svg else svg
    return python_svg(g)


# -- one conclusion's derivation, at a readable size -----------------------------------------------

_MAX_PREMISES = 12
_MAX_BEATEN = 8


def _short(value: Any, unit: str | None) -> str:
    """A value in a few words: a record by its first two fields' values."""
    if isinstance(value, dict) or (hasattr(value, "items") and not isinstance(value, (str, list, tuple))):
        return ", ".join(str(v) for v in list(value.values())[:2])
    return quantity(value, unit)


def _fit(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def derivation_svg(result: Result, attr: str) -> str:
    """The derivation of one conclusion alone, as a small SVG: what the binding rule read (values and
    catalog items) on the left, the rule in the middle, the conclusion on the right, and below the
    rule the contributions it beat (dashed). An input shows where it came from instead.
    """
    step = result.explain(attr, formulas=False)
    unit = step.get("unit")
    value = f"{attr} = {_short(step['value'], unit)}"
    colw, boxw, rowh, boxh, pad = 330, 300, 34, 26, 10
    boxes: list[tuple[float, float, str, str, str]] = []  # x, y, kind, text, title
    edges: list[tuple[tuple[float, float], tuple[float, float], bool]] = []  # from, to, dashed
    if step["origin"] != "rule":
        detail = f"{step['origin']}: {step['detail']}"
        boxes = [(pad, pad, "input", detail, detail), (pad + colw, pad, "value", value, value)]
        edges = [((pad + boxw, pad + boxh / 2), (pad + colw, pad + boxh / 2), False)]
        return _svg(boxes, edges, pad * 2 + 2 * colw, pad * 2 + rowh, boxw, boxh, f"how {attr} was derived")
    premises: list[tuple[str, str]] = []
    for b in step["binding"]:
        for alias, it in b["items"].items():
            text = f"{it['catalog']}: {it['id']} (as {alias})"
            if (text, "item") not in premises:
                premises.append((text, "item"))
    for b in step["binding"]:
        for name, v in b["inputs"].items():
            text = f"{name} = {_short(v, result.unit(name))}"
            if (text, "input") not in premises:
                premises.append((text, "input"))
    more = len(premises) - _MAX_PREMISES
    if more > 0:
        premises = [*premises[: _MAX_PREMISES - 1], (f"… and {more + 1} more inputs", "more")]
    firings = [(b, False) for b in step["binding"]] + [(x, True) for x in step["beaten"][:_MAX_BEATEN]]
    rows = max(len(premises), len(firings) + (1 if len(step["beaten"]) > _MAX_BEATEN else 0), 1)
    height = pad * 2 + rows * rowh
    mid_x, right_x = pad + colw, pad + 2 * colw
    concl_y = pad + (min(len(step["binding"]), rows) - 1) * rowh / 2
    boxes.append((right_x, concl_y, "value", value, value))
    for n, (text, kind) in enumerate(premises):
        y = pad + n * rowh
        boxes.append((pad, y, kind, text, text))
    for n, (f, beaten) in enumerate(firings):
        y = pad + n * rowh
        shown = _short(f["value"], unit)
        label = f"{f['rule']} → {shown}" if beaten or len(step["binding"]) > 1 else f["rule"]
        summary = step["rules"][f["rule"]]["summary"]
        boxes.append((mid_x, y, "beaten" if beaten else "firing", label, f"{f['rule']}: {summary} ({shown})"))
        edges.append(((mid_x + boxw, y + boxh / 2), (right_x, concl_y + boxh / 2), beaten))
        if not beaten:
            for k in range(len(premises)):
                edges.append(((pad + boxw, pad + k * rowh + boxh / 2), (mid_x, y + boxh / 2), False))
    if len(step["beaten"]) > _MAX_BEATEN:
        y = pad + len(firings) * rowh
        text = f"… and {len(step['beaten']) - _MAX_BEATEN} more it beat"
        boxes.append((mid_x, y, "more", text, text))
    return _svg(boxes, edges, pad * 2 + 2 * colw + boxw, height, boxw, boxh, f"how {attr} was derived")


_FILLS = {
    "firing": ("#fde9c9", "#8a5a00", ""),
    "beaten": ("#f4f4f4", "#999999", ' stroke-dasharray="4 3"'),
    "input": ("#e3eefc", "#3a5a8a", ""),
    "item": ("#e8f5e1", "#3f7a2a", ""),
    "value": ("#ffffff", "#1d1d1f", ' stroke-width="2"'),
    "more": ("#ffffff", "#bbbbbb", ' stroke-dasharray="2 2"'),
}


def _svg(
    boxes: list[tuple[float, float, str, str, str]],
    edges: list[tuple[tuple[float, float], tuple[float, float], bool]],
    width: float,
    height: float,
    boxw: float,
    boxh: float,
    label: str,
) -> str:
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="{escape(label)}" class="derivation" '
        'font-family="Helvetica, Arial, sans-serif" font-size="13">'
    ]
    for (x1, y1), (x2, y2), dashed in edges:
        mx = (x1 + x2) / 2
        dash = ' stroke-dasharray="4 3" stroke="#aaaaaa"' if dashed else ' stroke="#777777"'
        out.append(
            f'<path d="M{x1:.0f},{y1:.0f} C{mx:.0f},{y1:.0f} {mx:.0f},{y2:.0f} {x2:.0f},{y2:.0f}" fill="none"{dash}/>'
        )
    for x, y, kind, text, title in boxes:
        fill, stroke, extra = _FILLS[kind]
        rx = 12 if kind in ("firing", "beaten") else 3
        weight = ' font-weight="bold"' if kind in ("firing", "value") else ""
        colour = ' fill="#666666"' if kind in ("beaten", "more") else ""
        out.append(
            f'<g class="{kind}"><title>{escape(title)}</title><rect x="{x:.0f}" y="{y:.0f}" width="{boxw}" '
            f'height="{boxh}" rx="{rx}" fill="{fill}" stroke="{stroke}"{extra}/>'
            f'<text x="{x + 8:.0f}" y="{y + 17:.0f}"{weight}{colour}>{escape(_fit(text, 40))}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"
