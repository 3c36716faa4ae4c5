"""The API's OpenAPI description: request bodies, answers and the one error shape.

Bodies are read by the workers, strictly (no duplicate keys, finite numbers, the workload's
limits), not by FastAPI; this module only describes them for ``/api/v1/openapi.json``.
"""

from __future__ import annotations

from typing import Any

from ..load.resources import data_dir


def _template(name: str) -> str:
    return (data_dir("templates") / name).read_text(encoding="utf-8")


def _example() -> str:
    """The example workload (the one the page opens with)."""
    return _template("serve-example.yaml")


OPERATIONS = {
    "recommend": "Recommend a server: the JSON document `gpusizer recommend --format json` writes",
    "explain": "How one conclusion was derived, down to the inputs (`gpusizer explain`)",
    "why-not": "Why a conclusion did not take a value (`gpusizer why-not`)",
    "what-if": "What changes when workload keys change; a sweep; the largest value that still holds",
}

OPERATION_DOCS = {
    "recommend": "The answer's `result` is the document the CLI writes with `--format json`. With "
    "`format` text, markdown or html the body is that report, and the decision id is in the "
    "`Gpusizer-Decision-Id` header.",
    "explain": "`attribute` names the conclusion (e.g. `ram.system_gb`); "
    "`depth` stops the tree that many steps below it.",
    "why-not": "`query` is `ATTRIBUTE=VALUE` (or give `attribute` and `value`). The answer says the first of: the "
    "value is already taken, an input says otherwise, it was overridden, a candidate lost, rules excluded it, a "
    "condition failed, nothing produces it.",
    "what-if": '`set` changes keys (`{"batch_size": 8}` or `["batch_size=8"]`) and answers the changes, old -> '
    'new, with the rule responsible. `sweep` (`{"batch_size": [1, 8, 32]}`) answers a row per value with the '
    "`show` columns. `max` with `while` answers the largest whole value of a key for which the condition holds.",
}

_PARAMS: dict[str, dict[str, Any]] = {
    "recommend": {
        "format": {"type": "string", "enum": ["json", "text", "markdown", "html"], "default": "json"},
        "full": {"type": "boolean", "default": False, "description": "text and markdown: every derivation too"},
    },
    "explain": {
        "attribute": {"type": "string", "example": "ram.system_gb"},
        "depth": {"type": "integer", "minimum": 0},
    },
    "why-not": {
        "query": {"type": "string", "example": "ATTRIBUTE=VALUE"},
        "attribute": {"type": "string"},
        "value": {"description": "the value asked about (text, number or boolean)"},
    },
    "what-if": {
        "set": {
            "oneOf": [{"type": "object", "additionalProperties": True}, {"type": "array", "items": {"type": "string"}}],
            "example": {"batch_size": 8},
        },
        "sweep": {
            "oneOf": [
                {"type": "object", "additionalProperties": {"type": "array"}, "maxProperties": 1},
                {"type": "string"},
            ],
            "example": {"batch_size": [1, 8, 32]},
        },
        "max": {"type": "string", "example": "batch_size"},
        "while": {"type": "string", "example": "ATTRIBUTE <= NUMBER"},
        "show": {"type": "array", "items": {"type": "string"}},
    },
}
_REQUIRED = {"explain": ["attribute"]}


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message", "diagnostics"],
    "properties": {
        "code": {"type": "string", "example": "invalid-input"},
        "message": {"type": "string"},
        "diagnostics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["message"],
                "properties": {
                    "message": {"type": "string"},
                    "file": {"type": ["string", "null"]},
                    "line": {"type": ["integer", "null"]},
                    "column": {"type": ["integer", "null"]},
                    "help": {"type": ["string", "null"]},
                    "snippet": {"type": ["string", "null"]},
                },
            },
        },
    },
}

_STATUS = {
    "400": "the request is malformed: not JSON, a field of the wrong kind, an unknown field",
    "401": "the server needs its token: 'Authorization: Bearer TOKEN'",
    "413": "the request is larger than the server reads",
    "415": "the body is neither application/json nor application/yaml",
    "422": "the workload, sweep specification or a parameter naming an attribute cannot be used; "
    "diagnostics give line, column and help",
    "429": "every worker is busy and the queue is full, or the server holds all the sweep jobs it may; try again",
    "500": "a bug in gpusizer, or the rule engine's process ended while it answered",
    "503": "the request ran past the server's time limit, or no worker is ready",
}
_MORE = {
    "404": "no such sweep job (or catalog); a finished job is kept for a while, then deleted",
    "409": "a sweep job's table was asked for before the job finished",
}


def _errors(*more: str) -> dict[int | str, dict[str, Any]]:
    texts = {**_STATUS, **{code: _MORE[code] for code in more}}
    return {
        code: {"description": texts[code], "content": {"application/json": {"schema": ERROR_SCHEMA}}}
        for code in sorted(texts)
    }


ERRORS = _errors()
FOUND_ERRORS = _errors("404")  # a route that names a job or catalog


def request_body(op: str) -> dict[str, Any]:
    """The OpenAPI requestBody of an operation: JSON with the workload, or the workload as YAML."""
    params = _PARAMS[op]
    json_schema = {
        "type": "object",
        "required": ["workload", *_REQUIRED.get(op, [])],
        "additionalProperties": False,
        "properties": {
            "workload": {
                "description": "the workload: YAML text, or a JSON object with the workload's keys",
                "oneOf": [{"type": "string"}, {"type": "object"}],
                "example": _example(),
            },
            "files": {
                "type": "object",
                "description": "documents the workload names (model.config), by file name: their text",
                "additionalProperties": {"type": "string"},
                "maxProperties": 8,
            },
            **params,
        },
    }
    query = [
        {
            "name": name,
            "in": "query",
            "required": False,
            "schema": {"type": "string"},
            "description": f"with an application/yaml body: {name}",
        }
        for name in params
    ]
    return {
        "parameters": query,
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": json_schema},
                "application/yaml": {"schema": {"type": "string"}, "example": _example()},
            },
        },
    }


def responses(op: str) -> dict[int | str, dict[str, Any]]:
    """The answers of an operation: the decision, or an error in the one shape."""
    result: dict[str, Any] = {
        "type": "object",
        "required": ["decision_id", "result"],
        "properties": {
            "decision_id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "result": {"description": "what the CLI writes with --format json for this command"},
        },
    }
    content: dict[str, Any] = {"application/json": {"schema": result}}
    if op == "recommend":
        content.update({t: {"schema": {"type": "string"}} for t in ("text/plain", "text/markdown", "text/html")})
    return {200: {"description": "the decision", "content": content}, **ERRORS}


def description() -> str:
    """The API's description (``templates/serve-api.md``)."""
    return _template("serve-api.md")


# -- sweeps ---------------------------------------------------------------------------------------

SWEEP_DOC = """A sweep specification is what `gpusizer sweep SPEC -o DIR` reads: `base` (the workload: a
mapping, or the name of a workload attached under `files`; never a path on the server), `vary`
(dotted workload keys, each with a list of values: every combination is a case), and optionally
`cases`, `where`, `columns`, `name` and `description`. It is checked before anything runs; a problem
is a 422 with its line in the specification (`sweep.yaml`). A specification that makes more cases
than the server's limit is a 413. The job then runs on processes of its own, beside the request
workers; poll `GET /api/v1/sweep/{job}` until its status is `done`, then fetch its files. The
same specification on `gpusizer sweep` writes the same `summary.csv`."""

SWEEP_FILES = {
    "summary.csv": "A finished sweep job's summary.csv: one row per case, sorted by case id",
    "pareto.csv": "A finished sweep job's pareto.csv: per group, the cases not beaten on cost and throughput",
    "results.jsonl": "A sweep job's results.jsonl: one row per finished case, as far as the job has got",
    "summary.html": "A finished sweep job's summary page: the table and the plots (self-contained)",
}


SWEEP_STATUS: dict[str, Any] = {
    "type": "object",
    "required": ["id", "decision_id", "name", "status", "cases", "statuses", "seconds", "rate", "links"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "decision_id": {
            "type": "string",
            "pattern": "^[0-9a-f]{32}$",
            "description": "the same specification, documents, rulebase and version give the same id",
        },
        "name": {"type": "string"},
        "status": {"type": "string", "enum": ["queued", "running", "done", "cancelled", "failed"]},
        "cases": {
            "type": "object",
            "required": ["total", "done", "failed"],
            "properties": {
                "total": {"type": "integer"},
                "done": {"type": "integer"},
                "failed": {"type": "integer", "description": "cases done whose status is not ok"},
            },
        },
        "statuses": {"type": "object", "additionalProperties": {"type": "integer"}},
        "seconds": {"type": "number"},
        "rate": {"type": "number", "description": "cases per second"},
        "seconds_left": {"type": ["number", "null"]},
        "workers": {"type": "integer"},
        "error": {"type": ["string", "null"], "description": "why a failed job failed (a bug)"},
        "links": {"type": "object", "additionalProperties": {"type": "string"}},
        "deleted": {"type": "boolean"},
    },
}


def sweep_request() -> dict[str, Any]:
    """The OpenAPI requestBody of ``POST /api/v1/sweep``: the specification as YAML, or in JSON."""
    json_schema = {
        "type": "object",
        "required": ["spec"],
        "additionalProperties": False,
        "properties": {
            "spec": {
                "description": "the sweep specification: YAML text, or a JSON object with its keys",
                "oneOf": [{"type": "string"}, {"type": "object"}],
                "example": _template("serve-sweep-example.yaml"),
            },
            "files": {
                "type": "object",
                "description": "documents the specification names (the base workload, a model.config), by file "
                "name: their text",
                "additionalProperties": {"type": "string"},
                "maxProperties": 8,
            },
        },
    }
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": json_schema},
                "application/yaml": {"schema": {"type": "string"}, "example": _template("serve-sweep-example.yaml")},
            },
        }
    }


def sweep_responses(ok: int, job: bool = True) -> dict[int | str, dict[str, Any]]:
    """The answers of a sweep job's routes: its status, or an error in the one shape."""
    text = {202: "the job, queued or running (Location: its URL)", 200: "the job"}[ok]
    errors = FOUND_ERRORS if job else ERRORS
    return {ok: {"description": text, "content": {"application/json": {"schema": SWEEP_STATUS}}}, **errors}


def sweep_file_responses(media: str) -> dict[int | str, dict[str, Any]]:
    """The answers of a sweep job's file: its text, or an error in the one shape."""
    return {
        200: {"description": "the file", "content": {media.split(";")[0]: {"schema": {"type": "string"}}}},
        **_errors("404", "409"),
    }


SWEEP_LIST: dict[str, Any] = {
    "type": "object",
    "required": ["jobs"],
    "properties": {"jobs": {"type": "array", "items": SWEEP_STATUS}},
}


def sweep_list_responses() -> dict[int | str, dict[str, Any]]:
    """The answers of the sweep jobs' listing."""
    ok = {"description": "the jobs held, oldest first", "content": {"application/json": {"schema": SWEEP_LIST}}}
    return {200: ok, **ERRORS}
