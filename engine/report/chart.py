"""An inline SVG stacked bar chart for the HTML report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..format import quantity


def escape(text: str) -> str:
    """&, < and > as XML entities (what xml.sax.saxutils.escape does, without importing urllib)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def bar_chart(parts: Sequence[tuple[Any, Any]], unit: str | None = None) -> Any:
    """A stacked bar with a legend; ``parts`` is [(label, value), ...]. Labels are escaped."""
    from markupsafe import Markup

    shown = [(str(label), v) for label, v in parts if isinstance(v, (int, float)) and v > 0]
    if not shown:
        return Markup("<p>Nothing to chart.</p>")
    total = math.fsum(v for _, v in shown)
    colours = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]
    width, x = 960, 0.0
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {40 + 22 * len(shown)}" width="100%" '
        'role="img" aria-label="breakdown" font-family="Helvetica, Arial, sans-serif" font-size="12">'
    ]
    for n, (label, v) in enumerate(shown):
        w = width * v / total
        colour = colours[n % len(colours)]
        out.append(
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="28" fill="{colour}">'
            f"<title>{escape(label)}: {escape(quantity(v, unit))}</title></rect>"
        )
        x += w
        out.append(
            f'<rect x="0" y="{38 + 22 * n}" width="12" height="12" fill="{colour}"/>'
            f'<text x="18" y="{48 + 22 * n}">{escape(label)}: {escape(quantity(v, unit))} '
            f"({100 * v / total:.1f}%)</text>"
        )
    out.append("</svg>")
    return Markup("\n".join(out))
