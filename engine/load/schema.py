"""JSON Schema validation of YAML documents, with errors at file:line:col."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import InputError, closest
from .fastcheck import Check, Compiler, Unsupported
from .yamlsrc import Doc

SCHEMA_DIR = Path(__file__).parent / "schemas"


_HUMAN = {
    "integer": "a whole number",
    "number": "a number",
    "string": "text",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "nothing",
}


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


@cache
def engine_schema(name: str) -> dict[str, Any]:
    """One of the engine's own JSON Schemas (rule, rule-test, attributes, knowledge, ...)."""
    schema: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return schema


def _validator(schema: dict[str, Any]) -> Any:
    # jsonschema is imported here, not at module level: it is the slowest import
    # and only runs when a document actually needs checking.
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry()
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        registry = registry.with_resource(contents["$id"], Resource.from_contents(contents))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry)


_VALIDATORS: dict[str, Any] = {}  # the schema's content -> its validator


_RECENT: dict[int, tuple[dict[str, Any], str]] = {}  # id -> (the schema, held so the id stays its own; key)
_RECENT_MAX = 32


def _content_key(schema: dict[str, Any]) -> str:
    """A schema's identity by content: a rulebase loaded again reuses what was made for the last one.

    Writing a schema out costs about 0.1 ms, once per checked file; the last few schemas seen keep
    their key (each held, so that its id cannot pass to another object meanwhile).
    """
    hit = _RECENT.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    key = json.dumps(schema, sort_keys=True)
    if len(_RECENT) >= _RECENT_MAX:
        del _RECENT[next(iter(_RECENT))]
    _RECENT[id(schema)] = (schema, key)
    return key


def validator_for(schema: dict[str, Any]) -> Any:
    """A validator for one of the schemas, made once."""
    key = _content_key(schema)
    v = _VALIDATORS.get(key)
    if v is None:
        v = _VALIDATORS[key] = _validator(schema)
    return v


def _path_text(path: Any) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "the document"


def _deepest(error: Any) -> Any:
    """For oneOf/anyOf failures, pick the branch error that got furthest."""
    while error.context:

        def rank(e: Any) -> tuple[int, bool, bool]:
            # prefer errors deeper in the instance, then those not about type
            return (
                len(e.absolute_path),
                e.validator not in ("type", "oneOf", "anyOf"),
                e.validator == "additionalProperties",
            )

        best = max(error.context, key=rank)
        if len(best.absolute_path) < len(error.absolute_path):
            break
        if len(best.absolute_path) == len(error.absolute_path) and best.validator == "type":
            break
        error = best
    return error


def _unknown_keys(
    doc: Doc, path: tuple[Any, ...], inst: dict[str, Any], schema: dict[str, Any], what: str
) -> list[InputError]:
    """One error for each key of a mapping that its schema does not know, each at its own line."""
    allowed = sorted(schema.get("properties", {}))
    extra = [k for k in inst if k not in schema.get("properties", {})] or ["?"]
    where = _path_text(path)
    out = []
    for key in extra:
        guess = closest(key, allowed)
        hint = f"did you mean '{guess}'? " if guess else ""
        out.append(
            doc.error(
                (*path, key),
                f"unknown key '{key}' in {what}" + (f" at {where}" if path else ""),
                f"{hint}valid keys here: {', '.join(allowed)}",
                key=True,
            )
        )
    return out


def _translate_all(doc: Doc, error: Any, what: str, root: dict[str, Any] | None = None) -> list[InputError]:
    """A schema violation as errors: one per unknown key of a mapping, else one."""
    deep = _deepest(error)
    if deep.validator == "additionalProperties" and isinstance(deep.instance, dict) and isinstance(deep.schema, dict):
        return _unknown_keys(doc, tuple(deep.absolute_path), deep.instance, deep.schema, what)
    return [_translate(doc, error, what, root)]


def _translate(doc: Doc, error: Any, what: str, root: dict[str, Any] | None = None) -> InputError:
    if error.validator == "anyOf" and all(
        isinstance(s, dict) and set(s) == {"required"} for s in error.validator_value
    ):
        path = tuple(error.absolute_path)
        keys = [k for s in error.validator_value for k in s["required"]]
        return doc.error(
            path,
            f"{_path_text(path)} needs one of: {', '.join(keys)}",
            error.schema.get("description") or f"add one of {', '.join(keys)}",
            key=bool(path),
        )
    error = _deepest(error)
    path = tuple(error.absolute_path)
    where = _path_text(path)
    v = error.validator
    inst = error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if v == "additionalProperties" and isinstance(inst, dict):
        return _unknown_keys(doc, path, inst, schema, what)[0]
    if v == "propertyNames":
        return doc.error(
            path,
            f"invalid key in {where}: {error.message}",
            "keys are lower-case words joined by '_' and dots, e.g. memory.weights_gb",
        )
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        about = schema.get("properties", {}).get(missing, {}).get("description")
        if about is None and not path and root:  # a conditional 'required' of the document itself
            about = root.get("properties", {}).get(missing, {}).get("description")
        return doc.error(
            path,
            f"missing required key '{missing}' in {where}",
            f"add '{missing}: ...' here" + (f" ({about})" if about else ""),
            key=bool(path),
        )

    if v == "type":
        want = error.validator_value
        human = " or ".join(str(_HUMAN.get(w, w)) for w in (want if isinstance(want, list) else [want]))
        desc = schema.get("description")
        return doc.error(
            path,
            f"{where} must be {human}, not {_type_name(inst)} ({inst!r})",
            f"write {human}" + (f": {desc}" if desc else ""),
        )
    if v == "enum":
        options = error.validator_value
        guess = closest(inst, options)
        hint = f"did you mean '{guess}'? " if guess else ""
        return doc.error(
            path,
            f"{where}: {inst!r} is not one of: {', '.join(map(str, options))}",
            f"{hint}use one of the listed values",
        )
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        sym = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[v]
        return doc.error(
            path,
            f"{where} must be {sym} {error.validator_value}, got {inst!r}",
            schema.get("description") or "give a value in range",
        )
    if v == "pattern":
        return doc.error(
            path,
            f"{where}: {inst!r} does not have the expected form",
            schema.get("description") or f"it must match {error.validator_value}",
        )
    if v in ("minItems", "minProperties", "minLength"):
        least = error.validator_value
        if least > 1:
            unit = {"minItems": "items", "minProperties": "keys", "minLength": "characters"}[v]
            return doc.error(
                path,
                f"{where} needs at least {least} {unit}, got {len(inst)}",
                schema.get("description") or f"give {least} or more",
            )
        return doc.error(path, f"{where} must not be empty", schema.get("description") or "give a value")
    if v in ("maxProperties",):
        return doc.error(path, f"{where} must hold one key only", "write each condition as its own list item")
    return doc.error(
        path, f"{where}: {error.message}", schema.get("description") or "see the JSON Schema for this file kind"
    )


_FAST: dict[str, Check | None] = {}  # the schema's content -> its fast check (None: jsonschema only)


@cache
def _engine_schemas() -> dict[str, dict[str, Any]]:
    schemas = {}
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        schemas[contents["$id"]] = contents
    return schemas


def fast_check(schema: dict[str, Any]) -> Check | None:
    """The compiled yes/no check for a schema, or None when it uses what ``fastcheck`` does not know."""
    key = _content_key(schema)
    if key not in _FAST:
        compiler = Compiler({**_engine_schemas(), **({schema["$id"]: schema} if "$id" in schema else {})})
        try:
            found: Check | None = compiler.compile(schema, schema.get("$id", ""))
        except (Unsupported, re.error):
            found = None
        _FAST[key] = found
    return _FAST[key]


def valid(data: Any, schema: dict[str, Any]) -> bool:
    """Whether ``data`` satisfies ``schema`` (fast when it can be)."""
    fast = fast_check(schema)
    if fast is not None:
        try:
            return fast(data)
        except Exception:  # pragma: no cover - any doubt goes to jsonschema
            pass
    return not any(True for _ in validator_for(schema).iter_errors(data))


def check(doc: Doc, schema: dict[str, Any], what: str, limit: int = 10) -> list[InputError]:
    """All schema violations of ``doc``, in file order."""
    if valid(doc.data, schema):
        return []
    errors = list(validator_for(schema).iter_errors(doc.data))
    # a misspelt key also makes the real one "missing": report only the misspelling
    typos = set()
    for e in errors:
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            allowed = e.schema.get("properties", {})
            for key in e.instance:
                if key not in allowed:
                    guess = closest(key, allowed)
                    if guess:
                        typos.add((tuple(e.absolute_path), guess))
    errors = [
        e
        for e in errors
        if not (e.validator == "required" and any((tuple(e.absolute_path), m) in typos for m in e.validator_value))
    ]
    out = []
    seen = set()
    for e in errors:
        for err in _translate_all(doc, e, what, schema):
            k = (err.line, err.col, err.message)
            if k not in seen:
                seen.add(k)
                out.append(err)
    out.sort(key=lambda e: (e.line or 0, e.col or 0, e.message))
    return out[:limit]
