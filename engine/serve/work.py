"""What a server's worker does with one request: read it, run it, answer it.

A request arrives as plain data (its operation, content type, body text and query); the answer
leaves as plain data (status, content type, body text, headers). Everything a client sent is
parsed here, within the limits every workload file meets (``load/limits.py``), and nothing a
request names is read from disk: a document a workload imports comes attached to the request, ``hf:`` is refused.

Every failure is one error shape: ``{"code", "message", "diagnostics": [{"message", "file",
"line", "column", "help", "snippet"}]}``, with the HTTP status that fits it.
"""

from __future__ import annotations

import base64
import copy
import gc
import hashlib
import json
import math
import re
import sys
import traceback
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from ..api import Recommender
from ..errors import Diagnostic, GpusizerError, InputError, RuleError, hint
from ..explain.record import plain
from ..explain.result import Result
from ..load.workload import Workload

WORKLOAD_NAME = "workload.yaml"
"""What errors and documents call a workload given in a request."""

MAX_FILES = 8
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
MAX_SWEEP = 64
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
JSON_TYPES = ("application/json",)
FORM_TYPES = ("application/x-www-form-urlencoded",)
LINK_MAX_BYTES = 1 << 20  # a link's workload and documents, unpacked


class Failure(Exception):
    """A request that gets an error answer: HTTP status, code, message and diagnostics."""

    def __init__(
        self, status: int, code: str, message: str, diagnostics: list[dict[str, Any]] | None = None, help: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.diagnostics = diagnostics if diagnostics is not None else [diagnostic(message, help=help or None)]

    def body(self) -> dict[str, Any]:
        """The one error shape."""
        return error_body(self.code, self.message, self.diagnostics)


def diagnostic(
    message: str,
    file: str | None = None,
    line: int | None = None,
    column: int | None = None,
    help: str | None = None,
    snippet: str | None = None,
) -> dict[str, Any]:
    """One diagnostic of the error shape."""
    return {"message": message, "file": file, "line": line, "column": column, "help": help, "snippet": snippet}


def error_body(code: str, message: str, diagnostics: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"code", "message", "diagnostics"}``: every failure, API or page, in this shape."""
    return {"code": code, "message": message, "diagnostics": diagnostics}


def from_diagnostic(d: Diagnostic) -> dict[str, Any]:
    """An engine diagnostic in the error shape."""
    return diagnostic(d.message, d.file, d.line, d.col, d.help, d.snippet)


def failure_of(exc: GpusizerError) -> Failure:
    """An engine error as a request failure: 422, the workload (or a parameter) cannot be used."""
    code = "rule-failed" if isinstance(exc, RuleError) else "invalid-input"
    first = exc.diagnostics[0]
    where = first.location() if first.file or first.line else ""
    message = f"{where}: {first.message}" if where else first.message
    if len(exc.diagnostics) > 1:
        message += f" (and {len(exc.diagnostics) - 1} more)"
    return Failure(422, code, message, [from_diagnostic(d) for d in exc.diagnostics])


def answer(
    status: int, body: Any, content_type: str = "application/json", headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A response as plain data: JSON bodies are written here, once, strictly (no NaN)."""
    if content_type == "application/json" and not isinstance(body, str):
        text = json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    else:
        text = str(body)
    return {"status": status, "content_type": content_type, "body": text, "headers": headers or {}}


def failed(f: Failure) -> dict[str, Any]:
    """A failure as a response."""
    return answer(f.status, f.body())


# -- reading a request -----------------------------------------------------------------------------


class Request:
    """A request's workload (YAML text and attached documents) and its other parameters."""

    def __init__(self, text: str, files: dict[str, str], params: dict[str, Any], given_as_json: bool = False) -> None:
        self.text = text
        self.files = files
        self.params = params
        self.given_as_json = given_as_json

    @property
    def key(self) -> str:
        """A sha256 over the workload text and its documents: what makes two requests the same."""
        h = hashlib.sha256(self.text.encode("utf-8"))
        for name in sorted(self.files):
            h.update(b"\0" + name.encode() + b"\0" + self.files[name].encode("utf-8"))
        return h.hexdigest()


def _media(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _strict_json(body: str) -> Any:
    from ..load.yamlsrc import parse_json

    try:
        return parse_json(body, "<request>", "workload")
    except InputError as exc:
        f = failure_of(exc)
        raise Failure(400, "bad-request", f"the request body is not valid JSON: {exc.message}", f.diagnostics) from None


def _workload_text(value: Any, main: str = "workload") -> tuple[str, bool]:
    """The ``workload`` field (or a sweep's ``spec``): YAML text as given, or a JSON object as the
    YAML that says the same.
    """
    if isinstance(value, str):
        return value, False
    if isinstance(value, dict):
        import yaml

        return yaml.safe_dump(value, sort_keys=False, allow_unicode=True), True
    raise Failure(
        400,
        "bad-request",
        f"'{main}' must be YAML text or a JSON object, not {_kind(value)}",
        help=f'send {{"{main}": "name: x\\n..."}} or {{"{main}": {{"name": "x", ...}}}}',
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _files(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Failure(400, "bad-request", f"'files' must be an object of name: text, not {_kind(value)}")
    if len(value) > MAX_FILES:
        raise Failure(413, "too-large", f"{len(value)} attached documents; at most {MAX_FILES}")
    out = {}
    for name, text in value.items():
        if not FILE_NAME.match(name):
            raise Failure(
                400,
                "bad-request",
                f"attached document name {name!r} is not a plain file name",
                help="a plain file name: letters, digits, '.', '_' and '-', no folders",
            )
        if not isinstance(text, str):
            raise Failure(400, "bad-request", f"attached document {name!r} must be text (the JSON as a string)")
        out[name] = text
    return out


def read_request(
    op: str,
    content_type: str,
    body: str,
    query: Mapping[str, list[str]],
    fields: Mapping[str, str],
    *,
    form: bool = False,
    main: str = "workload",
) -> Request:
    """The request's workload and parameters, from a JSON object, a YAML body (parameters in the
    query), or a form (the page). ``fields`` names each parameter this operation takes and its kind;
    ``main`` is the JSON field that holds the YAML document (a sweep's is ``spec``).
    """
    media = _media(content_type)
    if media in JSON_TYPES:
        data = _strict_json(body)
        if not isinstance(data, dict):
            raise Failure(400, "bad-request", f"the request body must be a JSON object, not {_kind(data)}")
        allowed = {main, "files", *fields}
        for k in data:
            if k not in allowed:
                raise Failure(
                    400,
                    "bad-request",
                    f"unknown request field '{k}' for {op}",
                    help=f"{hint(k, allowed)}the fields are: {', '.join(sorted(allowed))}",
                )
        if main not in data:
            raise Failure(
                400,
                "bad-request",
                f"the request has no '{main}'",
                help=f"give the {main} as YAML text or a JSON object",
            )
        text, as_json = _workload_text(data[main], main)
        params = {k: data[k] for k in fields if k in data}
        return Request(text, _files(data.get("files")), params, as_json)
    if media in YAML_TYPES:
        params = _query_params(op, query, fields)
        return Request(body, {}, params)
    if form and media in FORM_TYPES:
        got = parse_form(body)
        files = _strict_json(got.get("files") or "{}")
        params = {k: got[k] for k in fields if k in got}
        return Request(got.get("workload", ""), _files(files), params)
    raise Failure(
        415,
        "unsupported-media-type",
        f"a request body of type {media or '(none)'!r} is not read",
        help=f'send application/json ({{"{main}": ...}}) or application/yaml (the {main} itself)',
    )


def parse_form(body: str) -> dict[str, str]:
    """A URL-encoded form, each field once; at most 32 fields."""
    try:
        raw = parse_qs(body, keep_blank_values=True, strict_parsing=False, max_num_fields=32)
    except ValueError as exc:
        raise Failure(400, "bad-request", f"the form cannot be read: {exc}") from None
    return {k: v[-1] for k, v in raw.items()}


def _query_params(op: str, query: Mapping[str, list[str]], fields: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, values in query.items():
        if k not in fields:
            raise Failure(
                400,
                "bad-request",
                f"unknown query parameter '{k}' for {op}",
                help=f"{hint(k, fields)}the parameters are: {', '.join(sorted(fields)) or 'none'}",
            )
        kind = fields[k]
        if kind == "list":
            out[k] = list(values)
        elif kind == "int":
            try:
                out[k] = int(values[-1])
            except ValueError:
                raise Failure(400, "bad-request", f"query parameter '{k}' must be a whole number") from None
        elif kind == "bool":
            out[k] = values[-1].lower() in ("1", "true", "yes")
        else:
            out[k] = values[-1]
    return out


def _param(req: Request, name: str, kind: type | tuple[type, ...], what: str, default: Any = None) -> Any:
    value = req.params.get(name, default)
    if value is default:
        return value
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise Failure(400, "bad-request", f"'{name}' must be {what}, not {_kind(value)}")
    if not isinstance(value, kind):
        raise Failure(400, "bad-request", f"'{name}' must be {what}, not {_kind(value)}")
    return value


# -- links -----------------------------------------------------------------------------------------


def encode_link(text: str, files: Mapping[str, str]) -> str:
    """The workload (and its documents) packed into a URL-safe string: deflated JSON in base64url."""
    data = json.dumps(
        {"w": text, "f": dict(files)} if files else {"w": text}, ensure_ascii=False, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(zlib.compress(data.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def decode_link(code: str) -> tuple[str, dict[str, str]]:
    """A link's workload and documents; a Failure for anything a link could not have made."""
    try:
        packed = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, LINK_MAX_BYTES)
        if inflater.unconsumed_tail:
            raise Failure(413, "too-large", f"the link's workload unpacks to more than {LINK_MAX_BYTES:,} bytes")
        text = raw.decode("utf-8")
    except Failure:
        raise
    except (ValueError, zlib.error, UnicodeDecodeError):
        raise Failure(
            400, "bad-request", "the link is damaged: it does not unpack to a workload", help="copy the whole link"
        ) from None
    data = _strict_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("w"), str) or set(data) - {"w", "f"}:
        raise Failure(
            400, "bad-request", "the link is damaged: it does not unpack to a workload", help="copy the whole link"
        )
    return data["w"], _files(data.get("f"))


# -- the worker ------------------------------------------------------------------------------------


class Worker:
    """One process's rulebase and what it answers; results of recent workloads are kept (16)."""

    CACHE = 16

    def __init__(self, rules: list[str], knowledge: list[str], key_file: str | None = None) -> None:
        enabled = gc.isenabled()
        gc.disable()  # as the CLI loads: nothing cyclic is made, and the loaded rulebase is frozen
        try:
            self.rec = Recommender([Path(p) for p in rules], [Path(p) for p in knowledge])
        finally:
            gc.freeze()
            if enabled:
                gc.enable()
        self.key = None
        if key_file:
            from ..explain.record import read_key

            self.key = read_key(key_file)
        self._results: OrderedDict[str, Result] = OrderedDict()
        self.ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "info": self._info,
            "recommend": self._recommend,
            "explain": self._explain,
            "why-not": self._why_not,
            "what-if": self._what_if,
            "catalogs": self._catalogs,
            "catalog": self._catalog,
            "schema": self._schema,
        }

    # -- the workload ----------------------------------------------------------------------------
    def load(self, req: Request) -> Workload:
        """The request's workload, validated; attached documents only, never a path."""
        rb = self.rec.rulebase
        return rb.inputs.load(None, rb.catalogs, display=WORKLOAD_NAME, text=req.text, attached=req.files)

    def result(self, req: Request) -> Result:
        """The recommendation for the request's workload (kept for the next request on it)."""
        key = req.key
        hit = self._results.get(key)
        if hit is not None:
            self._results.move_to_end(key)
            return hit
        r = self.rec.recommend(self.load(req))
        self._results[key] = r
        while len(self._results) > self.CACHE:
            self._results.popitem(last=False)
        return r

    def decision_id(self, req: Request) -> str:
        """The id of a decision: the same workload, documents, rulebase and version give the same id."""
        from .. import __version__

        h = hashlib.sha256(b"gpusizer decision\0")
        h.update(__version__.encode() + b"\0" + self.rec.rulebase.sha256.encode() + b"\0" + req.key.encode())
        return h.hexdigest()[:32]

    def variant(self, req: Request, data: dict[str, Any]) -> Result:
        """A changed workload mapping, validated like the request's own, with its attached documents."""
        import yaml

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        return self.result(Request(text, req.files, {}))

    # -- dispatch ----------------------------------------------------------------------------------
    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        """One request in, one response out: never an exception (a bug is a 500 in the error shape)."""
        op = msg.get("op", "")
        fn = self.ops.get(op)
        try:
            if fn is None:
                raise Failure(404, "not-found", f"no operation {op!r}")
            return fn(msg)
        except Failure as f:
            return failed(f)
        except GpusizerError as exc:
            return failed(failure_of(exc))
        except RecursionError:
            return failed(Failure(413, "too-large", "the request nests too deeply to be read"))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            return failed(
                Failure(
                    500,
                    "internal",
                    f"internal error: {type(exc).__name__}: {exc}",
                    help="this is a bug in gpusizer; report it with the workload",
                )
            )

    def _req(self, msg: dict[str, Any], fields: Mapping[str, str]) -> Request:
        return read_request(msg["op"], msg.get("content_type", ""), msg.get("body", ""), msg.get("query", {}), fields)

    # -- the API's operations ------------------------------------------------------------------------
    def _info(self, msg: dict[str, Any]) -> dict[str, Any]:
        from .. import __version__

        rb = self.rec.rulebase
        info = {
            "gpusizer": __version__,
            "rules": len(rb.rules),
            "sha256": rb.sha256,
            "overlays": plain(rb.overlays),
            "catalogs": {name: len(cat.items) for name, cat in sorted(rb.catalogs.items())},
            "signing": {"signed": self.key is not None, "key_id": self.key.id if self.key else None},
        }
        return answer(200, info)

    def _recommend(self, msg: dict[str, Any]) -> dict[str, Any]:
        from ..report.document import document
        from ..report.render import render

        req = self._req(msg, {"format": "str", "full": "bool"})
        fmt = _param(req, "format", str, "json, text, markdown or html", "json")
        full = _param(req, "full", bool, "true or false", False)
        if fmt not in ("json", "text", "markdown", "html"):
            raise Failure(400, "bad-request", f"'format' {fmt!r} is not one of json, text, markdown, html")
        r = self.result(req)
        did = self.decision_id(req)
        if fmt == "json":
            return answer(200, {"decision_id": did, "result": plain(document(r))})
        types = {
            "text": "text/plain; charset=utf-8",
            "markdown": "text/markdown; charset=utf-8",
            "html": "text/html; charset=utf-8",
        }
        return answer(200, render(r, fmt, layout="python", full=full), types[fmt], {"Gpusizer-Decision-Id": did})

    def _attribute(self, req: Request, name: str = "attribute") -> str:
        attr = _param(req, name, str, "an attribute name such as ram.system_gb")
        if attr is None:
            raise Failure(400, "bad-request", f"the request has no '{name}'", help='e.g. "attribute": "ram.system_gb"')
        self.rec.rulebase.attribute(attr)
        return str(attr)

    def _explain(self, msg: dict[str, Any]) -> dict[str, Any]:
        req = self._req(msg, {"attribute": "str", "depth": "int"})
        attr = self._attribute(req)
        depth = _param(req, "depth", int, "a whole number, 0 or more")
        if depth is not None and depth < 0:
            raise Failure(400, "bad-request", "'depth' must be 0 or more")
        r = self.result(req)
        return answer(200, {"decision_id": self.decision_id(req), "result": plain(r.explain_tree(attr, depth))})

    def _why_not(self, msg: dict[str, Any]) -> dict[str, Any]:
        from ..explain.whynot import NotFinite, parse_query, why_not

        req = self._req(msg, {"query": "str", "attribute": "str", "value": "any"})
        query = _param(req, "query", str, "ATTRIBUTE=VALUE text")
        rb = self.rec.rulebase
        try:
            if query is not None:
                attr, value = parse_query(rb, query)
            else:
                attr = self._attribute(req)
                if "value" not in req.params:
                    raise Failure(400, "bad-request", "the request has no 'value' (or give 'query': 'ATTRIBUTE=VALUE')")
                value = req.params["value"]
                if isinstance(value, str):
                    attr, value = parse_query(rb, f"{attr}={value}")
        except NotFinite as exc:  # a malformed value, as the CLI says it
            raise Failure(400, "bad-request", exc.message, help=exc.diagnostics[0].help or "") from None
        if isinstance(value, float) and not math.isfinite(value):  # (strict JSON has no NaN; kept as a guard)
            raise Failure(400, "bad-request", f"{value!r} is not a value {attr} can take", help="give a finite number")
        answer_ = why_not(self.result(req), attr, value)
        return answer(200, {"decision_id": self.decision_id(req), "result": plain(answer_)})

    def _what_if(self, msg: dict[str, Any]) -> dict[str, Any]:
        from ..explain import whatif as W
        from ..explain.diff import compare_results
        from ..format import quantity
        from ..load.yamlsrc import parse

        req = self._req(msg, {"set": "list", "sweep": "str", "max": "str", "while": "str", "show": "list"})
        doc = parse(req.text, WORKLOAD_NAME, "workload")
        base = self.result(req)  # the workload as given is valid first
        data = copy.deepcopy(doc.data)
        for key, value in _assignments(req.params.get("set")):
            W.set_field(data, key, value)
        rb = self.rec.rulebase
        show = _param(req, "show", list, "a list of attribute names") or W.default_columns(rb)
        for name in show:
            if not isinstance(name, str):
                raise Failure(400, "bad-request", "'show' must be a list of attribute names")
            rb.attribute(name, "show: ")
        did = self.decision_id(req)
        if req.params.get("max") is not None:
            return answer(200, {"decision_id": did, "result": self._largest(req, data, show)})
        if req.params.get("sweep") is not None:
            key, values = _sweep(req.params["sweep"])
            rows = []
            for v in values:
                d = copy.deepcopy(data)
                W.set_field(d, key, v)
                try:
                    r = self.variant(req, d)
                    rows.append({key: str(v), **{a: quantity(r.get(a), r.unit(a)) for a in show}})
                except GpusizerError as exc:
                    rows.append({key: str(v), "invalid": exc.message})
            return answer(200, {"decision_id": did, "result": rows})
        changes = compare_results(base, self.variant(req, data))
        return answer(200, {"decision_id": did, "result": [c.as_dict() for c in changes]})

    def _largest(self, req: Request, data: dict[str, Any], show: list[str]) -> dict[str, Any]:
        from ..explain import whatif as W

        key = _param(req, "max", str, "a workload key such as batch_size")
        cond = _param(req, "while", str, "a condition on a conclusion, such as 'ATTRIBUTE <= NUMBER'")
        if not cond:
            raise Failure(400, "bad-request", "'max' needs 'while'", help='e.g. "while": "ram.system_gb <= 256"')
        worker = self

        class _Attached:
            """What whatif.largest asks of a recommender, on this request's attached documents."""

            def load_text(self, text: str, label: str) -> Workload:
                return worker.load(Request(text, req.files, {}))

            def recommend(self, w: Workload) -> Result:
                return worker.rec.recommend(w)

        best, at, beyond = W.largest(_Attached(), data, key, W.condition(cond), WORKLOAD_NAME, limit=1 << 20)

        def row(r: Result | None) -> dict[str, Any] | None:
            return None if r is None else {a: plain(r.get(a)) for a in show}

        return {"key": key, "while": cond, "largest": best, "at": row(at) if best else None, "beyond": row(beyond)}

    def _catalogs(self, msg: dict[str, Any]) -> dict[str, Any]:
        rb = self.rec.rulebase
        return answer(
            200,
            {
                "catalogs": {
                    name: {
                        "description": cat.description,
                        "items": len(cat.items),
                        "fields": {
                            f.name: {"type": f.type, "unit": f.unit, "description": f.description}
                            for f in cat.fields.values()
                        },
                    }
                    for name, cat in sorted(rb.catalogs.items())
                }
            },
        )

    def _catalog(self, msg: dict[str, Any]) -> dict[str, Any]:
        rb = self.rec.rulebase
        name = str(msg.get("name", ""))
        cat = rb.catalogs.get(name)
        if cat is None:
            raise Failure(
                404, "not-found", f"no catalog '{name}'", help=f"{hint(name, rb.catalogs)}see /api/v1/catalogs"
            )
        items = [{"id": it.id, "name": it.name, **plain(dict(it.fields))} for it in cat.items.values()]
        return answer(200, {"catalog": name, "items": items})

    def _schema(self, msg: dict[str, Any]) -> dict[str, Any]:
        return answer(200, plain(self.rec.rulebase.inputs.schema))


def scalar(text: str) -> Any:
    """A value written as YAML in a parameter (8, fp16, true, [a, b]), read as strictly as a workload."""
    from ..load.yamlsrc import parse

    if not text.strip():
        return ""
    try:
        return parse(text, "<parameter>", "workload").data
    except InputError:
        return text


def _assignments(value: Any) -> list[tuple[str, Any]]:
    if value is None:
        return []
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        out = []
        for v in value:
            if "=" not in v:
                raise Failure(400, "bad-request", f"'set' {v!r} is not KEY=VALUE", help="e.g. batch_size=8")
            key, raw = v.split("=", 1)
            out.append((key.strip(), scalar(raw)))
        return out
    raise Failure(400, "bad-request", "'set' must be an object {key: value} or a list of 'key=value'")


def _sweep(value: Any) -> tuple[str, list[Any]]:
    if isinstance(value, dict) and len(value) == 1:
        ((key, values),) = value.items()
        if not isinstance(values, list):
            raise Failure(400, "bad-request", "'sweep' must be {key: [values]}")
    elif isinstance(value, str) and "=" in value:
        key, raw = value.split("=", 1)
        values = [scalar(v) for v in raw.split(",")]
    else:
        raise Failure(400, "bad-request", "'sweep' must be {key: [values]} or 'key=a,b,c'")
    if len(values) > MAX_SWEEP:
        raise Failure(413, "too-large", f"a sweep of {len(values)} values; at most {MAX_SWEEP} in one request")
    return str(key).strip(), values
