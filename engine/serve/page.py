"""The page's answers, rendered in a worker from ``templates/serve*.html.j2``.

The templates say what the page shows (which workload keys the form has, which conclusions the
charts plot); this module only hands them the result, the catalogs, the schema and the drawings.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..errors import GpusizerError, InputError
from ..explain.record import plain
from ..explain.result import Result
from ..load.resources import data_dir
from .work import WORKLOAD_NAME, Failure, Request, answer, decode_link, encode_link, failure_of, read_request

if TYPE_CHECKING:
    from .work import Worker


def default_workload() -> str:
    """The workload the page opens with (``templates/serve-example.yaml``)."""
    return (data_dir("templates") / "serve-example.yaml").read_text(encoding="utf-8")


MAX_CANDIDATES = 8
_STATIC = {"htmx.min.js", "htmx-LICENSE.txt", "serve.js", "serve.css"}
_HTML = "text/html; charset=utf-8"


def environment() -> Any:
    """The report's Jinja environment (its filters and chart helpers)."""
    from ..report.render import environment as env

    return env()


def static_file(name: str) -> bytes | None:
    """A file the page loads (the vendored HTMX, the page's own script and style), or None."""
    if name not in _STATIC:
        return None
    return (resources.files("engine.serve") / "static" / name).read_bytes()


def docs_page(spec: dict[str, Any]) -> str:
    """The API's documentation, rendered here from its OpenAPI document (no scripts, no CDN)."""
    return str(environment().get_template("serve-docs.html.j2").render(spec=spec, dumps=_dumps))


def login_page(target: str, failed: bool) -> str:
    """The form that asks for the server's access token."""
    return str(environment().get_template("serve-login.html.j2").render(target=target, failed=failed))


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


class Pages:
    """The page's operations on one worker."""

    def __init__(self, worker: Worker) -> None:
        self.w = worker

    def ops(self) -> dict[str, Any]:
        """The page's operations, by name, for the worker's table."""
        return {
            "ui-page": self._page,
            "ui-result": self._result,
            "ui-derivation": self._derivation,
            "ui-edit": self._edit,
            "ui-candidates": self._candidates,
            "ui-download": self._download,
        }

    # -- what every template gets ------------------------------------------------------------------
    def _helpers(self) -> dict[str, Any]:
        rb = self.w.rec.rulebase
        schema = rb.inputs

        def items(catalog: str) -> list[tuple[str, str]]:
            cat = rb.catalogs.get(catalog)
            return [(it.id, it.name) for it in cat.items.values()] if cat else []

        def node(key: str) -> dict[str, Any]:
            return dict(schema.leaves.get(tuple(key.split(".")), {}))

        def enum(key: str) -> list[Any]:
            return list(node(key).get("enum") or [])

        from .. import __version__

        return {
            "items": items,
            "schema_node": node,
            "enum": enum,
            "rulebase": {"rules": len(rb.rules), "sha256": rb.sha256, "version": __version__},
            "signed": self.w.key is not None,
        }

    def _context(self, req: Request, r: Result | None, error: Failure | None) -> dict[str, Any]:
        ctx = self._helpers()
        ctx.update(workload_text=req.text, files=req.files, files_json=json.dumps(req.files, ensure_ascii=False))
        ctx["link"] = encode_link(req.text, req.files)
        ctx["error"] = error.body() if error else None
        ctx["result"] = r
        ctx["value"] = _values(self.w, req, r)
        if r is not None:
            ctx.update(self._report(r))
            ctx["decision_id"] = self.w.decision_id(req)
        return ctx

    def _report(self, r: Result) -> dict[str, Any]:
        """What the report templates get (as ``render`` gives them), and the drawings."""
        from markupsafe import Markup

        from ..report.document import document
        from ..report.drawing import derivation_svg
        from ..report.render import safe_links

        doc = safe_links(document(r))
        rb = r.rulebase
        attributes = {n: {"unit": r.unit(n), "description": a.description} for n, a in rb.attributes.items()}

        def item(catalog: str, item_id: object) -> Any:
            cat = rb.catalogs.get(catalog)
            return cat.items.get(str(item_id)) if cat else None

        return {
            "doc": doc,
            "c": doc["conclusions"],
            "i": doc["inputs"],
            "attributes": attributes,
            "item": item,
            "full": True,
            "derivation_svg": lambda attr: Markup(derivation_svg(r, attr)),
            "scatter": scatter_chart,
        }

    def _render(self, template: str, ctx: dict[str, Any]) -> str:
        return str(environment().get_template(template).render(**ctx))

    def _try(self, req: Request) -> tuple[Result | None, Failure | None]:
        try:
            return self.w.result(req), None
        except GpusizerError as exc:
            return None, failure_of(exc)

    # -- operations --------------------------------------------------------------------------------
    def _page(self, msg: dict[str, Any]) -> dict[str, Any]:
        link = str(msg.get("link") or "")
        if link:
            text, files = decode_link(link)
        else:
            text, files = default_workload(), {}
        req = Request(text, files, {})
        r, error = self._try(req)
        return answer(200, self._render("serve.html.j2", self._context(req, r, error)), _HTML)

    def _form(self, msg: dict[str, Any], fields: dict[str, str]) -> Request:
        return read_request(msg["op"], msg.get("content_type", ""), msg.get("body", ""), {}, fields, form=True)

    def _result(self, msg: dict[str, Any]) -> dict[str, Any]:
        req = self._form(msg, {})
        r, error = self._try(req)
        return answer(200, self._render("serve-result.html.j2", self._context(req, r, error)), _HTML)

    def _derivation(self, msg: dict[str, Any]) -> dict[str, Any]:
        req = self._form(msg, {"attribute": "str"})
        attr = str(req.params.get("attribute", ""))
        ctx = self._helpers()
        try:
            self.w.rec.rulebase.attribute(attr)
            r = self.w.result(req)
        except GpusizerError as exc:
            ctx["error"] = failure_of(exc).body()
            return answer(200, self._render("serve-derivation.html.j2", ctx), _HTML)
        ctx.update(self._report(r), error=None, attr=attr, step=plain(r.explain(attr)))
        ctx["premise_is_conclusion"] = lambda name: name in r.conclusions
        return answer(200, self._render("serve-derivation.html.j2", ctx), _HTML)

    def _edit(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The workload text with one key set (or removed, for an empty value), the rest kept."""
        from .edit import set_key

        req = self._form(msg, {"key": "str", "value": "str"})
        key = str(req.params.get("key", ""))
        path = tuple(key.split("."))
        node = self.w.rec.rulebase.inputs.leaves.get(path)
        if node is None:
            raise Failure(400, "bad-request", f"'{key}' is not a workload key")
        raw = str(req.params.get("value", ""))
        value = None if raw == "" else _typed(raw, node)
        return answer(200, {"workload": set_key(req.text, path, value, WORKLOAD_NAME)})

    def _candidates(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Cost against throughput of the candidates the choice beat, each run with its GPUs pinned.

        The form of a candidate and the keys that pin it come from the template (``serve-candidates``):
        ``select`` names the attribute whose contributions are the candidates, ``pin`` maps workload
        keys to a candidate's fields, ``cost`` the field plotted across, ``metrics`` the conclusions
        tried in turn for the throughput.
        """
        req = self._form(msg, {})
        ctx = self._helpers()
        spec = json.loads(environment().get_template("serve-candidates.json.j2").render())
        ctx.update(spec=spec, points=[], metric=None, error=None, scatter=scatter_chart)
        r, error = self._try(req)
        if r is None or spec["select"] not in r.conclusions:
            ctx["error"] = error.body() if error else None
            return answer(200, self._render("serve-candidates.html.j2", ctx), _HTML)
        metric = next((m for m in spec["metrics"] if m in r.conclusions), None)
        chosen = r.get(spec["select"])
        seen: dict[str, dict[str, Any]] = {}
        for contrib in sorted(
            r.conclusions[spec["select"]].contributions, key=lambda c: _num(c.value.get(spec["cost"]))
        ):
            v = contrib.value
            key = str(v.get(spec["label"]))
            if key not in seen and len(seen) < MAX_CANDIDATES:
                seen[key] = dict(v)
        if chosen is not None and str(chosen.get(spec["label"])) not in seen:
            seen[str(chosen.get(spec["label"]))] = dict(chosen)
        import copy

        from ..load.yamlsrc import parse

        base = parse(req.text, WORKLOAD_NAME, "workload").data
        points = []
        for label, cand in seen.items():
            y = None
            if metric is not None:
                data = copy.deepcopy(base)
                for wkey, field in spec["pin"].items():
                    _set(data, wkey, cand.get(field))
                try:
                    variant = self.w.rec.recommend(self.w.load(_variant(req, data)))
                    y = variant.get(metric)
                except GpusizerError:
                    y = None
            points.append(
                {
                    "label": f"{cand.get(spec['count'])} x {label}",
                    "x": _num(cand.get(spec["cost"])),
                    "y": y if isinstance(y, (int, float)) else None,
                    "chosen": chosen is not None and cand.get(spec["label"]) == chosen.get(spec["label"]),
                }
            )
        ctx.update(
            points=points,
            metric=metric,
            metric_unit=r.unit(metric) if metric else None,
            currency=r.get("price.currency"),
        )
        return answer(200, self._render("serve-candidates.html.j2", ctx), _HTML)

    def _download(self, msg: dict[str, Any]) -> dict[str, Any]:
        from ..explain.record import build, dumps, file_name
        from ..report.render import render

        kind = str(msg.get("kind", ""))
        text, files = decode_link(str(msg.get("link") or ""))
        req = Request(text, files, {})
        if kind == "yaml":
            name = _safe_name(_name_of(text))
            return answer(200, text, "application/yaml; charset=utf-8", {"X-Filename": f"{name}.yaml"})
        r = self.w.result(req)
        name = _safe_name(r.workload.name)
        did = self.w.decision_id(req)
        if kind == "json":
            return answer(
                200, render(r, "json"), "application/json", {"X-Filename": f"{name}.json", "Gpusizer-Decision-Id": did}
            )
        if kind == "html":
            return answer(
                200,
                render(r, "html", layout="python"),
                _HTML,
                {"X-Filename": f"{name}.html", "Gpusizer-Decision-Id": did},
            )
        if kind == "record":
            rec = build(r, self.w.key)
            return answer(
                200, dumps(rec), "application/json", {"X-Filename": file_name(rec), "Gpusizer-Decision-Id": did}
            )
        raise Failure(404, "not-found", f"no download {kind!r}", help="yaml, json, html or record")


def _variant(req: Request, data: dict[str, Any]) -> Request:
    import yaml

    return Request(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), req.files, {})


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    node = data
    parts = dotted.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[parts[-1]] = value


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("inf")


def _name_of(text: str) -> str:
    m = re.search(r"^name:\s*['\"]?([^'\"\n#]+)", text, re.M)
    return m.group(1).strip() if m else "workload"


def _safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)[:60].lstrip(".") or "workload"


def _typed(raw: str, node: dict[str, Any]) -> Any:
    """A form's text as the value its key takes: a number, a boolean, or text."""
    from .work import scalar

    kinds = node.get("type")
    if kinds is None:  # anyOf and the like: the text as YAML reads it ('auto', 4)
        return scalar(raw)
    kinds = kinds if isinstance(kinds, list) else [kinds]
    enum = node.get("enum")
    if enum is not None:
        for e in enum:
            if str(e).lower() == raw.lower():
                return e
    if node.get("x-quantity"):
        value = scalar(raw)
        return value if isinstance(value, (int, float, str)) else raw
    if "integer" in kinds or "number" in kinds:
        value = scalar(raw)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        raise InputError(f"'{raw}' is not a number", help="type a number")
    if "boolean" in kinds:
        return raw.lower() in ("true", "yes", "1", "on")
    if "array" in kinds:
        return [v.strip() for v in raw.split(",") if v.strip()]
    return raw


def _values(worker: Worker, req: Request, r: Result | None) -> Any:
    """``value(key)``: what the form shows for a workload key (as text; empty when unknown)."""
    data: Any = None
    try:
        from ..load.yamlsrc import parse

        data = parse(req.text, WORKLOAD_NAME, "workload").data
    except InputError:
        data = None
    schema = worker.rec.rulebase.inputs

    def value(key: str) -> str:
        path = tuple(key.split("."))
        node = data
        for p in path:
            if not isinstance(node, dict) or p not in node:
                node = None
                break
            node = node[p]
        if node is None and r is not None:
            iv = r.workload.inputs.get(schema.attr_of.get(path, key))
            node = iv.value if iv is not None else None
        if node is None:
            return ""
        if isinstance(node, bool):
            return "true" if node else "false"
        if isinstance(node, list):
            return ", ".join(map(str, node))
        return str(node)

    return value


def scatter_chart(points: list[dict[str, Any]], x_label: str, y_label: str) -> Any:
    """Cost across, throughput up: each point a candidate, the choice marked, the cheapest-for-its-speed
    front joined by a line. Inline SVG; labels escaped.
    """
    from markupsafe import Markup

    from ..format import num
    from ..report.chart import escape

    shown = [p for p in points if p["y"] is not None and p["x"] != float("inf")]
    if not shown:
        return Markup('<p class="muted">No candidate has both a price and a throughput to plot.</p>')
    width, height, left, bottom, top, right = 720, 360, 70, 50, 16, 170
    xs = [p["x"] for p in shown]
    ys = [p["y"] for p in shown]
    x0, x1 = 0.0, max(xs) * 1.1 or 1.0
    y0, y1 = 0.0, max(ys) * 1.15 or 1.0

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def py(y: float) -> float:
        return height - bottom - (y - y0) / (y1 - y0) * (height - bottom - top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" role="img" '
        'aria-label="cost and throughput of the candidates" class="scatter" '
        'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#555"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#555"/>',
    ]
    for k in range(5):
        xv, yv = x0 + (x1 - x0) * k / 4, y0 + (y1 - y0) * k / 4
        out.append(
            f'<text x="{px(xv):.0f}" y="{height - bottom + 16}" text-anchor="middle">'
            f"{escape(num(round(xv, -2) if xv > 1000 else round(xv)))}</text>"
        )
        out.append(f'<text x="{left - 6}" y="{py(yv) + 4:.0f}" text-anchor="end">{escape(num(round(yv, 1)))}</text>')
        out.append(f'<line x1="{left}" y1="{py(yv):.0f}" x2="{width - right}" y2="{py(yv):.0f}" stroke="#eee"/>')
    mid = (top + height - bottom) / 2
    out.append(
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text x="14" y="{mid:.0f}" text-anchor="middle" transform="rotate(-90 14 {mid:.0f})">{escape(y_label)}</text>'
    )
    front, best = [], -1.0
    for p in sorted(shown, key=lambda p: (p["x"], -p["y"])):
        if p["y"] > best:
            front.append(p)
            best = p["y"]
    if len(front) > 1:
        d = " ".join(f"{'M' if n == 0 else 'L'}{px(p['x']):.0f},{py(p['y']):.0f}" for n, p in enumerate(front))
        out.append(f'<path d="{d}" fill="none" stroke="#4e79a7" stroke-dasharray="5 3"/>')
    for n, p in enumerate(sorted(shown, key=lambda p: p["x"])):
        colour = "#e15759" if p["chosen"] else "#4e79a7"
        r = 7 if p["chosen"] else 5
        out.append(
            f'<g class="point{" chosen" if p["chosen"] else ""}"><title>{escape(p["label"])}: '
            f"{escape(num(round(p['x'])))} / {escape(num(round(p['y'], 1)))}</title>"
            f'<circle cx="{px(p["x"]):.0f}" cy="{py(p["y"]):.0f}" r="{r}" fill="{colour}"/></g>'
        )
        out.append(
            f'<text x="{width - right + 10}" y="{top + 14 + 16 * n}" fill="{colour}">{escape(p["label"])}'
            f"{' (choice)' if p['chosen'] else ''}</text>"
        )
        out.append(
            f'<line x1="{px(p["x"]) + r:.0f}" y1="{py(p["y"]):.0f}" x2="{width - right + 6}" '
            f'y2="{top + 10 + 16 * n}" stroke="{colour}" stroke-opacity="0.25"/>'
        )
    out.append("</svg>")
    return Markup("\n".join(out))
