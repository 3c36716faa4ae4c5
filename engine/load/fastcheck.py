"""A fast yes/no check of a document against a JSON Schema, for the keywords gpusizer's schemas use.

``jsonschema`` explains *why* a document is invalid, which the error messages need, but it costs
about 5 ms for each rule file: 50 s for a rulebase of 10,000 rules. Almost every file is valid,
so each schema is compiled once into nested closures that answer only *whether* a document is
valid, in a fraction of that time; ``jsonschema`` runs only on a file that fails (for its
messages) and on a schema that uses a keyword this module does not know (for correctness).

The answer is the one JSON Schema 2020-12 gives (``tests/test_fastcheck.py`` holds it to
``jsonschema`` on every shipped file, the broken-input corpus and generated documents).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# keywords that only describe; they never change whether a document is valid
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",  # an annotation unless a format checker is asked for, and none is
    }
)


class Unsupported(Exception):
    """The schema uses a keyword (or a form of one) this module does not check."""


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "number":
        return isinstance(value, (int, float))
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    raise Unsupported(f"type {name!r}")


# types one isinstance decides (bool is not a number in JSON Schema, so those need _is_type)
_PLAIN_TYPES: dict[str, type] = {"object": dict, "array": list, "string": str, "boolean": bool}


def _all(checks: list[Check]) -> Check:
    """A check that every one of ``checks`` passes, in order, stopping at the first that fails."""

    def check(v: Any) -> bool:
        for c in checks:  # noqa: SIM110 - a loop, not a generator: this runs ~50,000 times a load
            if not c(v):
                return False
        return True

    return check


def _any(checks: list[Check]) -> Check:
    """A check that one of ``checks`` passes, tried in order, stopping at the first that does."""

    def check(v: Any) -> bool:
        for c in checks:  # noqa: SIM110 - as in _all
            if c(v):
                return True
        return False

    return check


def _key(value: Any) -> Any:
    """A hashable form of a JSON value under JSON Schema equality (1 == 1.0, true != 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _key(v)) for k, v in value.items()))
    return ("other", id(value))


class Compiler:
    """Compiles schemas (resolving ``$ref`` within a set of schemas by their ``$id``) into checks."""

    def __init__(self, schemas: Mapping[str, dict[str, Any]]) -> None:
        self.schemas = dict(schemas)  # $id -> schema
        self._refs: dict[str, Check] = {}

    def compile(self, schema: Any, base: str = "") -> Check:
        """A function telling whether a document satisfies ``schema``; Unsupported if it cannot."""
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise Unsupported("a schema that is not an object")
        base = schema.get("$id", base)
        checks: list[Check] = []
        for key, arg in schema.items():
            if key in _ANNOTATIONS or key.startswith("x-"):
                continue
            make = getattr(self, "_k_" + key.replace("$", "_"), None)
            if make is None:
                raise Unsupported(f"keyword {key!r}")
            checks.append(make(arg, schema, base))
        checks = [c for c in checks if c is not None]
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return _all(checks)

    # -- keywords -----------------------------------------------------------------------------------
    def _k_type(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        names = arg if isinstance(arg, list) else [arg]
        for n in names:
            _is_type(None, n)  # raises Unsupported for an unknown type name
        plain = tuple(_PLAIN_TYPES[n] for n in names if n in _PLAIN_TYPES)
        rest = tuple(n for n in names if n not in _PLAIN_TYPES)
        if not rest:  # one isinstance, the common case
            return lambda v: isinstance(v, plain)
        if rest == ("number",):  # a number is never a bool in JSON Schema
            return lambda v: isinstance(v, plain) or (isinstance(v, (int, float)) and not isinstance(v, bool))
        return lambda v: isinstance(v, plain) or any(_is_type(v, n) for n in rest)

    def _k_enum(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        allowed = {_key(a) for a in arg}
        return lambda v: _key(v) in allowed

    def _k_const(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        want = _key(arg)
        return lambda v: _key(v) == want

    def _k_pattern(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        rx = re.compile(arg)
        return lambda v: not isinstance(v, str) or rx.search(v) is not None

    def _k_minLength(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, str) or len(v) >= arg

    def _k_maxLength(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, str) or len(v) <= arg

    def _bound(self, arg: Any, ok: Callable[[Any, Any], bool]) -> Check:
        return lambda v: isinstance(v, bool) or not isinstance(v, (int, float)) or ok(v, arg)

    def _k_minimum(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return self._bound(arg, lambda v, a: v >= a)

    def _k_maximum(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return self._bound(arg, lambda v, a: v <= a)

    def _k_exclusiveMinimum(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return self._bound(arg, lambda v, a: v > a)

    def _k_exclusiveMaximum(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return self._bound(arg, lambda v, a: v < a)

    def _k_minItems(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, list) or len(v) >= arg

    def _k_maxItems(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, list) or len(v) <= arg

    def _k_uniqueItems(self, arg: Any, schema: dict[str, Any], base: str) -> Check | None:
        if not arg:
            return None
        return lambda v: not isinstance(v, list) or len({_key(x) for x in v}) == len(v)

    def _k_minProperties(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, dict) or len(v) >= arg

    def _k_maxProperties(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, dict) or len(v) <= arg

    def _k_required(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        keys = frozenset(arg)
        return lambda v: not isinstance(v, dict) or v.keys() >= keys

    def _k_items(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        if "prefixItems" in schema:
            raise Unsupported("prefixItems")
        item = self.compile(arg, base)
        return lambda v: not isinstance(v, list) or all(item(x) for x in v)

    def _k_properties(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        props = {k: self.compile(s, base) for k, s in arg.items()}

        def check(v: Any) -> bool:
            if isinstance(v, dict):
                for k, x in v.items():
                    c = props.get(k)
                    if c is not None and not c(x):
                        return False
            return True

        return check

    def _k_additionalProperties(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        if "patternProperties" in schema:
            raise Unsupported("patternProperties")
        known = frozenset(schema.get("properties", {}))
        extra = self.compile(arg, base)
        if arg is False:
            return lambda v: not isinstance(v, dict) or known.issuperset(v)
        return lambda v: not isinstance(v, dict) or all(k in known or extra(x) for k, x in v.items())

    def _k_propertyNames(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        name = self.compile(arg, base)
        return lambda v: not isinstance(v, dict) or all(name(k) for k in v)

    def _k_allOf(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return _all([self.compile(s, base) for s in arg])

    def _k_anyOf(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        return _any([self.compile(s, base) for s in arg])

    def _k_oneOf(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        parts = [self.compile(s, base) for s in arg]
        return lambda v: sum(1 for p in parts if p(v)) == 1

    def _k_not(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        inner = self.compile(arg, base)
        return lambda v: not inner(v)

    def _k_if(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        test = self.compile(arg, base)
        then = self.compile(schema.get("then", True), base)
        orelse = self.compile(schema.get("else", True), base)
        return lambda v: then(v) if test(v) else orelse(v)

    def _k_then(self, arg: Any, schema: dict[str, Any], base: str) -> Check | None:
        return None  # part of 'if'; alone it does nothing

    _k_else = _k_then

    def _k__ref(self, arg: Any, schema: dict[str, Any], base: str) -> Check:
        target, _, pointer = str(arg).partition("#")
        if target:
            root_id = next((i for i in self.schemas if i == target or i.endswith("/" + target)), None)
        else:
            root_id = base
        if root_id is None or root_id not in self.schemas:
            raise Unsupported(f"$ref {arg!r}")
        full = f"{root_id}#{pointer}"
        if full not in self._refs:
            node: Any = self.schemas[root_id]
            for part in [p for p in pointer.split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    raise Unsupported(f"$ref {arg!r}")
                node = node[part]
            checks: list[Check] = []  # filled below; a recursive reference calls it once it is
            self._refs[full] = lambda v: checks[0](v)
            checks.append(self.compile(node, root_id))
        return self._refs[full]


__all__ = ["Check", "Compiler", "Unsupported"]
