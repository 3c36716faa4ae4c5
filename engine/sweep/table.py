"""A sweep's rows as tables and a page: ``summary.csv``, ``pareto.csv`` and ``summary.html``.

Which conclusions are columns, how the front is taken and which plots the page draws are
declared in ``templates/sweep.yaml`` (attribute names; the engine knows none of them). Every
table is sorted by case id and every number written the same way, so the same rows give the same
bytes on any backend and worker count.

The page is one file: the table, and Vega-Lite plots (specifications built here as plain dicts,
kept in the page as JSON) drawn by the vega, vega-lite and vega-embed bundles shipped in
``engine/sweep/js`` (BSD-3-Clause; versions in its README), so it works offline.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..format import num
from ..load.resources import data_dir
from ..load.yamlsrc import load

HTML_ROWS = 2000  # rows the page's table shows at most (summary.csv has them all)
_SCRIPTS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
PLOT_KINDS = ("pareto", "line", "bar")


@dataclass(frozen=True)
class TableConfig:
    """templates/sweep.yaml: columns, recorded inputs, the front's definition and the plots."""

    columns: tuple[str, ...]
    inputs: tuple[str, ...]
    group: tuple[str, ...]
    cost: str
    throughput: tuple[str, ...]
    plots: tuple[Mapping[str, Any], ...]

    def fields(self, extra: Sequence[str] = ()) -> tuple[str, ...]:
        """Every attribute a row records, each once, in a fixed order."""
        out: list[str] = []
        for name in (*self.columns, *extra, *self.inputs, *self.group, self.cost, *self.throughput):
            if name not in out:
                out.append(name)
        for plot in self.plots:
            for role in ("x", "y", "color", "facet"):
                named = plot.get(role)
                if isinstance(named, str) and named not in out:
                    out.append(named)
        return tuple(out)


def table_config(path: Path | None = None) -> TableConfig:
    """Read the table's declaration (the shipped one by default)."""
    file = path or data_dir("templates") / "sweep.yaml"
    doc = load(file, str(file))
    data = doc.data if isinstance(doc.data, dict) else {}

    def names(key: str, where: Any = data) -> tuple[str, ...]:
        value = where.get(key) if isinstance(where, dict) else None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise doc.error((key,), f"'{key}' must list attribute names", "see the shipped templates/sweep.yaml")
        return tuple(value)

    pareto = data.get("pareto")
    plots = data.get("plots") or []
    if not isinstance(pareto, dict) or not isinstance(pareto.get("cost"), str):
        raise doc.error(("pareto",), "'pareto' needs 'group', 'cost' and 'throughput'", "see the shipped file")
    for i, plot in enumerate(plots):
        if not isinstance(plot, dict) or plot.get("kind") not in PLOT_KINDS:
            raise doc.error(("plots", i), f"a plot's kind is one of {', '.join(PLOT_KINDS)}", "see the shipped file")
    return TableConfig(
        columns=names("columns"),
        inputs=names("inputs"),
        group=names("group", pareto),
        cost=pareto["cost"],
        throughput=names("throughput", pareto),
        plots=tuple(plots),
    )


def check_fields(config: TableConfig, attributes: Mapping[str, Any], file: str = "templates/sweep.yaml") -> None:
    """Every attribute the declaration names exists in the rulebase."""
    unknown = [n for n in config.fields() if n not in attributes]
    if unknown:
        raise InputError(
            f"{file} names attributes the rulebase does not declare: {', '.join(unknown)}",
            file=file,
            help="name attributes of 'gpusizer rules list', or declare them in rules/_attributes.yaml",
        )


# -- cells ---------------------------------------------------------------------------------------


def cell(value: Any) -> str:
    """One value as a CSV cell: numbers exactly (shortest round trip), lists joined by ';'."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ";".join(cell(v) for v in value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _csv(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue()


def present_columns(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    """The columns at least one row has a value for, in declared order."""
    have = {k for r in rows for k in (r.get("values") or {})}
    return [c for c in columns if c in have]


def _sorted(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: str(r["case"]))


def label_headers(label_keys: Sequence[str], named: Collection[str]) -> list[str]:
    """The varied keys' column names beside columns ``named`` so: a key whose name a column also has, where the
    key sets another attribute (``gpu.count``: the GPUs asked for, beside the GPUs chosen), is written
    ``KEY (given)``, so that every column name of a table is there once.
    """
    return [f"{k} (given)" if k in named else k for k in label_keys]


def summary_rows(
    rows: Sequence[Mapping[str, Any]], label_keys: Sequence[str], columns: Sequence[str], same: Collection[str] = ()
) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the summary: case, the varied keys, status, the columns, the error. ``same``: varied
    keys that set the attribute of their own name, whose column would repeat them (it is left out).
    """
    shown = [c for c in present_columns(rows, columns) if c not in same]
    header = ["case", *label_headers(label_keys, shown), "status", *shown, "error"]
    body = []
    for r in _sorted(rows):
        vary = r.get("vary") or {}
        values = r.get("values") or {}
        body.append(
            [
                str(r["case"]),
                *(cell(vary.get(k)) for k in label_keys),
                str(r["status"]),
                *(cell(values.get(c)) for c in shown),
                _one_line(r.get("error")),
            ]
        )
    return header, body


def _one_line(text: Any) -> str:
    return " ".join(str(text).split()) if text else ""


def summary_csv(
    rows: Sequence[Mapping[str, Any]], label_keys: Sequence[str], columns: Sequence[str], same: Collection[str] = ()
) -> str:
    """``summary.csv``: one row per case, sorted by case id."""
    return _csv(*summary_rows(rows, label_keys, columns, same))


# -- the front -----------------------------------------------------------------------------------


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def throughput_of(config: TableConfig, values: Mapping[str, Any]) -> tuple[str, float] | None:
    """The first of the declared throughput attributes the case has, and its value."""
    for name in config.throughput:
        v = _number(values.get(name))
        if v is not None:
            return name, v
    return None


def front(config: TableConfig, rows: Sequence[Mapping[str, Any]]) -> list[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """Per group, the cases no other case of the group beats on both cost and throughput.

    A case is beaten when another costs no more and delivers no less, and is better in one;
    equal cases are both kept. Cases are compared only on one measure: a group is also split by
    the throughput attribute a case has (a model served and trained in one sweep has two fronts,
    one of output tokens/s and one of training tokens/s). One sort and one scan per group; the
    group's key ends with that attribute.
    """
    groups: dict[tuple[str, ...], list[tuple[float, float, Mapping[str, Any]]]] = {}
    for r in _sorted(rows):
        values = r.get("values") or {}
        cost = _number(values.get(config.cost))
        thr = throughput_of(config, values)
        if r.get("status") != "ok" or cost is None or thr is None:
            continue
        group = (*(cell(values.get(g)) for g in config.group), thr[0])
        groups.setdefault(group, []).append((cost, thr[1], r))
    out: list[tuple[tuple[str, ...], Mapping[str, Any]]] = []
    for group in sorted(groups):
        entries = sorted(groups[group], key=lambda e: (e[0], -e[1], str(e[2]["case"])))
        best = float("-inf")  # the highest throughput of every strictly cheaper case
        i = 0
        while i < len(entries):
            j = i
            while j < len(entries) and entries[j][0] == entries[i][0]:
                j += 1
            top = entries[i][1]  # the highest throughput at this cost (sorted descending)
            if top > best:
                out += [(group, e[2]) for e in entries[i:j] if e[1] == top]
            best = max(best, top)
            i = j
    return out


def pareto_csv(
    config: TableConfig,
    rows: Sequence[Mapping[str, Any]],
    label_keys: Sequence[str],
    columns: Sequence[str],
    same: Collection[str] = (),
) -> str:
    """``pareto.csv``: the front of each group, cheapest first. A varied key that sets the attribute of a group
    (``model.name``) is the group's column alone; every column name is there once (``label_headers``).
    """
    label_keys = [k for k in label_keys if not (k in same and k in config.group)]
    shown = [c for c in present_columns(rows, columns) if c not in (*config.group, config.cost) and c not in same]
    named = {*config.group, config.cost, "case", "throughput", "throughput_attribute", *shown}
    header = [
        *config.group,
        "case",
        *label_headers(label_keys, named),
        config.cost,
        "throughput",
        "throughput_attribute",
        *shown,
    ]
    body = []
    for group, r in front(config, rows):
        values = r.get("values") or {}
        vary = r.get("vary") or {}
        thr = throughput_of(config, values)
        assert thr is not None
        body.append(
            [
                *group[:-1],
                str(r["case"]),
                *(cell(vary.get(k)) for k in label_keys),
                cell(values.get(config.cost)),
                cell(thr[1]),
                thr[0],
                *(cell(values.get(c)) for c in shown),
            ]
        )
    return _csv(header, body)


# -- the page ------------------------------------------------------------------------------------


def plot_specs(config: TableConfig, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One Vega-Lite specification per declared plot that the rows can draw, data inlined."""
    ok = [r for r in _sorted(rows) if r.get("status") == "ok"]
    on_front = {str(r["case"]) for _, r in front(config, rows)}
    specs: list[dict[str, Any]] = []
    for plot in config.plots:
        if plot["kind"] == "pareto":
            spec = _pareto_plot(config, plot, ok, on_front)
        else:
            spec = _line_plot(plot, ok)
        if spec is not None:
            specs.append(spec)
    return specs


def _pareto_plot(
    config: TableConfig, plot: Mapping[str, Any], ok: Sequence[Mapping[str, Any]], on_front: set[str]
) -> dict[str, Any] | None:
    color, facet = plot.get("color"), plot.get("facet")
    data = []
    for r in ok:
        values = r["values"]
        cost = _number(values.get(config.cost))
        thr = throughput_of(config, values)
        if cost is None or thr is None:
            continue
        data.append(
            {
                "case": r["case"],
                "label": ", ".join(f"{k}={cell(v)}" for k, v in (r.get("vary") or {}).items()),
                "group": " / ".join([*(cell(values.get(g)) for g in config.group), thr[0]]),
                "measure": thr[0],
                "color": cell(values.get(color)) if color else "",
                "panel": cell(values.get(facet)) if facet else "",
                "cost": cost,
                "throughput": thr[1],
                "front": str(r["case"]) in on_front,
            }
        )
    if not data:
        return None
    tooltip = [
        {"field": k, "type": "quantitative" if k in ("cost", "throughput") else "nominal"}
        for k in ("case", "label", "cost", "throughput", "measure")
    ]
    measures = sorted({d["measure"] for d in data})
    x = {"field": "cost", "type": "quantitative", "title": config.cost}
    # one measure: the axis names it; several (a sweep that serves and trains): each point's tooltip does
    y = {"field": "throughput", "type": "quantitative", "title": measures[0] if len(measures) == 1 else "throughput"}
    hue = {"field": "color", "type": "nominal", "title": color or ""}
    spec: dict[str, Any] = {
        "width": 420,
        "height": 300,
        "layer": [
            {
                "mark": {"type": "point", "filled": True, "opacity": 0.45},
                "encoding": {"x": x, "y": y, "color": hue, "tooltip": tooltip},
            },
            {
                "transform": [{"filter": "datum.front"}],
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": x,
                    "y": y,
                    "color": hue,
                    "detail": {"field": "group", "type": "nominal"},
                    "order": {"field": "cost", "type": "quantitative"},
                    "tooltip": tooltip,
                },
            },
        ],
    }
    return _framed(plot.get("title", "Cost against throughput"), data, spec, "panel" if facet else None, facet)


def _framed(
    title: str, data: list[dict[str, Any]], spec: dict[str, Any], field: str | None, label: Any
) -> dict[str, Any]:
    """A specification with its data, in panels by ``field`` when there is one."""
    out: dict[str, Any] = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "title": title}
    out["data"] = {"values": data}
    if field:
        out["facet"] = {"field": field, "type": "nominal", "title": label}
        out["columns"] = 3
        out["spec"] = spec
        out["resolve"] = {"scale": {"x": "independent"}}
    else:
        out.update(spec)
    return out


def _line_plot(plot: Mapping[str, Any], ok: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A line (or bar) plot of the largest y at each x, one line (or bar) per color, a panel per facet."""
    x, y = plot.get("x"), plot.get("y")
    color, facet = plot.get("color"), plot.get("facet")
    data = []
    for r in ok:
        values = r["values"]
        if values.get(x) is None or _number(values.get(y)) is None:
            continue
        data.append(
            {
                "x": values.get(x),
                "y": values.get(y),
                "color": cell(values.get(color)) if color else "",
                "panel": cell(values.get(facet)) if facet else "",
            }
        )
    if not data:
        return None
    numeric = all(_number(p["x"]) is not None for p in data)
    bar = plot["kind"] == "bar"
    xtype = "quantitative" if numeric and not bar else "ordinal" if numeric else "nominal"
    encoding: dict[str, Any] = {
        "x": {"field": "x", "type": xtype, "title": x},
        "y": {"field": "y", "type": "quantitative", "title": y, "aggregate": "max"},
        "color": {"field": "color", "type": "nominal", "title": color or ""},
        "tooltip": [
            {"field": "x", "type": xtype, "title": x},
            {"field": "y", "type": "quantitative", "title": f"{y} (largest)", "aggregate": "max"},
            {"field": "color", "type": "nominal", "title": color or ""},
        ],
    }
    if bar:
        encoding["xOffset"] = {"field": "color", "type": "nominal"}
    elif xtype == "quantitative":
        encoding["x"]["scale"] = {"zero": False}
    spec = {
        "width": 240 if facet else 560,
        "height": 180 if facet else 320,
        "mark": {"type": "bar"} if bar else {"type": "line", "point": True},
        "encoding": encoding,
    }
    framed = _framed(plot.get("title", f"{y} by {x}"), data, spec, "panel" if facet else None, facet)
    if facet:
        framed["resolve"] = {"scale": {"y": "shared"}}
    return framed


def _script(name: str) -> str:
    return resources.files(__package__).joinpath("js", name).read_text(encoding="utf-8")


def _json_for_script(value: Any) -> str:
    """JSON that cannot end the <script> element it sits in."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def summary_html(
    config: TableConfig,
    rows: Sequence[Mapping[str, Any]],
    label_keys: Sequence[str],
    columns: Sequence[str],
    same: Collection[str] = (),
    *,
    title: str,
    description: str = "",
    totals: Mapping[str, Any] | None = None,
) -> str:
    """``summary.html``: one self-contained page with the table and the plots."""
    from ..report.render import environment

    header, body = summary_rows(rows, label_keys, columns, same)
    specs = plot_specs(config, rows)
    status = {s: sum(1 for r in rows if r.get("status") == s) for s in sorted({str(r.get("status")) for r in rows})}
    pareto = [(g, str(r["case"])) for g, r in front(config, rows)]
    return str(
        environment()
        .get_template("sweep.html.j2")
        .render(
            title=title,
            description=description,
            header=header,
            body=body[:HTML_ROWS],
            omitted=max(0, len(body) - HTML_ROWS),
            cases=len(rows),
            status=status,
            front=pareto,
            plots=[{"title": s.get("title", ""), "spec": _json_for_script(s)} for s in specs],
            scripts=[_script(n).replace("</script", "<\\/script") for n in _SCRIPTS],
            totals=totals or {},
            num=num,
        )
    )
