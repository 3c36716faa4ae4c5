"""A sweep specification: a base workload, keys to vary, explicit cases, a condition; and its cases.

.. code-block:: yaml

    name: my-sweep
    base: ../a-workload.yaml       # a workload file (relative to this file) or a mapping
    vary:                          # dotted workload keys, each with a list of values
      some.key: [a, b]
      other: [1, 2, 3]
    cases:                         # explicit cases after the combinations
      - {some.key: c, other: 4}
    where: "not (some.key == 'b' and other > 2)"   # keeps a case only where it holds

(``examples/sweeps/`` has a real one.)

Everything is checked before any case runs, and every problem is an input error at its line in
the specification: the document against ``sweep.schema.json``, each key against the workload
schema (with the closest key), ``where`` against the expression language and the keys, and the
values by validating real workloads: the first combination, then each value of each key in turn
with the other keys at their first values, then each explicit case. A combination that is still
invalid (two values that do not go together) is a case of its own with status ``invalid``.

A case's identity (``key``) is a SHA-256 over its whole workload, the rulebase's SHA-256 and the
attributes it records, so a changed rulebase, base or column list computes a case again.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import GpusizerError, InputError, Problems, hint
from ..lang import expr as X
from ..lang.ir import Span
from ..load.schema import check, engine_schema
from ..load.yamlsrc import Doc, load, parse

# the identity of a case changes with this number when what a row holds changes meaning
ROW_FORMAT = 1
MAX_CASES_VAR = "GPUSIZER_MAX_CASES"
MAX_CASES = 1_000_000  # combinations one specification may make (each is kept as a row)


@dataclass(frozen=True)
class Case:
    """One workload of a sweep: its id, the values laid over the base, and its identity."""

    id: str
    vary: tuple[tuple[str, Any], ...]  # (dotted key, value), in the specification's order
    key: str  # sha256 of the workload, the rulebase and the recorded attributes


@dataclass(frozen=True)
class Spec:
    """A checked sweep specification."""

    file: str
    name: str
    description: str
    base: Mapping[str, Any]  # the base workload (relative import paths made relative to the spec)
    keys: tuple[str, ...]  # varied keys, in order
    values: Mapping[str, tuple[Any, ...]]
    explicit: tuple[Mapping[str, Any], ...]
    where: str | None
    columns: tuple[str, ...]  # the specification's own extra columns
    display: str  # what a case's workload is called in messages: SPEC#ID
    where_span: Span | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)  # dotted key -> the workload schema's default
    attached: Mapping[str, str] | None = None  # documents sent with it (a server's request); None: files

    @property
    def label_keys(self) -> tuple[str, ...]:
        """The keys that tell cases apart: the varied ones, then those only explicit cases give."""
        out = list(self.keys)
        for case in self.explicit:
            out += [k for k in case if k not in out]
        return tuple(out)

    def workload(self, case: Case) -> dict[str, Any]:
        """The case's workload mapping: the base with the case's values laid over it."""
        return overlay(self.base, case.vary)

    def case_display(self, case: Case) -> str:
        """What messages call the case's workload (relative paths in it resolve beside the spec)."""
        return f"{self.display}#{case.id}"


def set_field(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """Set a dotted key in a workload mapping, making the mappings on the way."""
    node = doc
    parts = dotted.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[parts[-1]] = copy.deepcopy(value)


def overlay(base: Mapping[str, Any], values: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The base with each dotted key set to its value."""
    out = copy.deepcopy(dict(base))
    for k, v in values:
        set_field(out, k, v)
    return out


def get_field(doc: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    """(present, value) of a dotted key in a workload mapping."""
    node: Any = doc
    for p in dotted.split("."):
        if not isinstance(node, Mapping) or p not in node:
            return False, None
        node = node[p]
    return True, node


def canonical_json(value: Any) -> str:
    """One text for equal values: sorted keys, no spaces, non-JSON values as text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def case_key(workload: Mapping[str, Any], rulebase_sha: str, fields: tuple[str, ...]) -> str:
    """A case's identity: its workload, the rulebase and what a row records."""
    text = canonical_json({"format": ROW_FORMAT, "workload": workload, "rulebase": rulebase_sha, "fields": fields})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- reading -----------------------------------------------------------------------------------


class TooManyCases(InputError):
    """A specification makes more combinations than the limit (a server answers it as too large)."""


def load_spec(path: str | os.PathLike[str], rec: Any) -> Spec:
    """Read and check a sweep specification file against the recommender's workload schema."""
    file = os.fspath(path)
    doc = load(file, file, "workload")
    return _checked(doc, rec, Path(file).parent, None, _max_cases())


def read_spec(text: str, display: str, rec: Any, attached: Mapping[str, str], *, max_cases: int) -> Spec:
    """Check a sweep specification given as text with its documents (a server's request).

    No file is read: ``base:`` is a mapping or names an attached workload, and every workload
    (the base, each case) reads its imports from ``attached`` only.
    """
    return _checked(parse(text, display, "workload"), rec, None, dict(attached), max_cases)


def _checked(doc: Doc, rec: Any, spec_dir: Path | None, attached: dict[str, str] | None, limit: int) -> Spec:
    file = doc.file
    if not isinstance(doc.data, dict):
        raise InputError(
            "a sweep specification must be a mapping with 'base:' and 'vary:' (or 'cases:')",
            file=file,
            line=1,
            col=1,
            help="see examples/sweeps/ for one",
        )
    errors = check(doc, engine_schema("sweep"), "the sweep")
    if errors:
        raise Problems(errors)
    data = doc.data
    base = _base(doc, spec_dir, rec) if spec_dir is not None else _attached_base(doc, attached or {})
    paths = _workload_paths(rec)
    problems: list[GpusizerError] = []
    values: dict[str, tuple[Any, ...]] = {}
    for key, options in (data.get("vary") or {}).items():
        bad = _unknown_key(doc, ("vary", key), key, paths, key_position=True)
        if bad:
            problems.append(bad)
            continue
        values[key] = tuple(options)
    explicit: list[dict[str, Any]] = []
    for i, case in enumerate(data.get("cases") or ()):
        for key in case:
            bad = _unknown_key(doc, ("cases", i, key), key, paths, key_position=True)
            if bad:
                problems.append(bad)
        explicit.append(dict(case))
    count = math.prod(len(v) for v in values.values()) if values else 0
    if count + len(explicit) > limit:
        what = f"{count:,} combinations" + (f" and {len(explicit):,} cases" if explicit else "")
        problems.append(
            doc.error(
                ("vary",) if values else ("cases",),
                f"{'vary' if values else 'cases'}: {what}, more than the {limit:,} a sweep may have",
                "vary fewer keys or values, or split the sweep"
                + (f"; {MAX_CASES_VAR} raises the limit" if spec_dir is not None else ""),
                key=True,
                cls=TooManyCases,
            )
        )
    where = data.get("where")
    if where is not None:
        problems += _check_where(doc, where, paths)
    columns = tuple(data.get("columns") or ())
    for i, name in enumerate(columns):
        if name not in rec.rulebase.attributes:
            problems.append(
                doc.error(
                    ("columns", i),
                    f"columns: unknown attribute '{name}'",
                    f"{hint(name, rec.rulebase.attributes)}name an attribute of 'gpusizer rules list'",
                )
            )
    if len(problems) == 1 and isinstance(problems[0], TooManyCases):
        raise problems[0]
    if problems:
        raise Problems(problems)
    spec = Spec(
        file=file,
        name=str(data.get("name") or Path(file).stem),
        description=str(data.get("description") or ""),
        base=base,
        keys=tuple(values),
        values=values,
        explicit=tuple(explicit),
        where=where,
        columns=columns,
        display=file,
        where_span=doc.span(("where",)) if where is not None else None,
        defaults={".".join(p): n["default"] for p, n in rec.rulebase.inputs.leaves.items() if "default" in n},
        attached=attached,
    )
    _check_values(doc, spec, rec)
    return spec


def _max_cases() -> int:
    raw = os.environ.get(MAX_CASES_VAR, "").strip()
    try:
        return int(raw) if raw else MAX_CASES
    except ValueError:
        raise InputError(
            f"{MAX_CASES_VAR}={raw!r} is not a whole number", help=f"unset it, or give a number such as {MAX_CASES}"
        ) from None


def _attached_base(doc: Doc, attached: Mapping[str, str]) -> dict[str, Any]:
    """The base workload of a specification sent to a server: a mapping, or an attached document."""
    raw = doc.data["base"]
    if isinstance(raw, dict):
        return dict(raw)
    if raw not in attached:
        given = ", ".join(sorted(attached)) or "none"
        raise doc.error(
            ("base",),
            f"base: {raw!r} is not a document attached to the request (attached: {given}); "
            "no file is read from disk here",
            "give the workload itself as a mapping under 'base:', or attach it to the request "
            "and name it by the name it was attached under",
        )
    base_doc = parse(attached[raw], raw, "workload")
    if not isinstance(base_doc.data, dict):
        raise doc.error(("base",), f"base: '{raw}' is not a workload mapping", "attach a workload")
    return dict(base_doc.data)


def _base(doc: Doc, spec_dir: Path, rec: Any) -> dict[str, Any]:
    """The base workload; a file's relative import paths (the schema's ``x-import`` path keys)
    re-aimed from the specification's folder, where a case's workload is read from.
    """
    raw = doc.data["base"]
    if isinstance(raw, dict):
        return dict(raw)
    target = Path(raw).expanduser()
    target = target if target.is_absolute() else spec_dir / target
    try:
        base_doc = load(target, target.as_posix(), "workload")
    except InputError as exc:
        if not target.exists():
            raise doc.error(
                ("base",),
                f"base: the workload file '{raw}' does not exist (looked for {target.as_posix()})",
                "name a workload file relative to this specification, or give the workload as a mapping",
            ) from None
        raise exc
    if not isinstance(base_doc.data, dict):
        raise doc.error(("base",), f"base: '{raw}' is not a workload mapping", "name a workload file")
    data = dict(base_doc.data)
    for opath, node in rec.rulebase.inputs.objects.items():
        key = (node.get("x-import") or {}).get("path")
        if not key:
            continue
        present, value = get_field(data, ".".join((*opath, key)))
        if present and isinstance(value, str) and not Path(value).expanduser().is_absolute():
            moved = os.path.relpath(target.parent / value, spec_dir) if spec_dir != target.parent else value
            set_field(data, ".".join((*opath, key)), Path(moved).as_posix())
    return data


def _workload_paths(rec: Any) -> set[str]:
    """Every dotted key a workload may have: its leaves and the mappings above them."""
    schema = rec.rulebase.inputs
    out = {".".join(p) for p in schema.leaves} | {".".join(p) for p in schema.objects if p}
    return out


def _unknown_key(doc: Doc, path: tuple[str | int, ...], key: str, paths: set[str], *, key_position: bool) -> Any:
    if key in paths:
        return None
    return doc.error(
        path,
        f"'{key}' is not a workload key",
        f"{hint(key, paths)}vary dotted keys of the workload; 'gpusizer schema workload' lists them",
        key=key_position,
    )


_WHERE_HELP = "write a condition such as: where: \"key != 'value' and other > 2\""


def _check_where(doc: Doc, where: str, paths: set[str]) -> list[InputError]:
    try:
        expr = X.parse(where)
    except X.ExprError as exc:
        return [doc.error(("where",), f"where: {exc.message}", exc.help or _WHERE_HELP)]
    out = []
    for name in sorted(expr.names):
        if name not in paths:
            out.append(
                doc.error(
                    ("where",),
                    f"where: '{name}' is not a workload key",
                    f"{hint(name, paths)}'where' reads the case's dotted workload keys",
                )
            )
    return out


def where_holds(spec: Spec, workload: Mapping[str, Any], case_id: str) -> bool:
    """Does the specification's ``where`` hold for a case's workload? (True without one.)"""
    if spec.where is None:
        return True
    expr = _parsed(spec.where)

    def resolve(name: str) -> X.Getter:
        def get(env: dict[str, Any]) -> Any:
            present, value = get_field(workload, name)
            if present:
                return value
            if name in spec.defaults:  # a key the case leaves out has its default, as in the workload
                return spec.defaults[name]
            raise X.ExprError(f"'{name}' has no value in case {case_id}")

        return get

    try:
        return bool(expr.bind(resolve)({}))
    except X.ExprError as exc:
        span = spec.where_span or Span(spec.file)
        raise span.error(
            f"where: {exc.message}",
            exc.help
            or "give the key a value in 'base:', or test it only where it has one "
            "(a key the base leaves out has no value in 'where')",
        ) from None


_PARSED: dict[str, X.Expr] = {}


def _parsed(source: str) -> X.Expr:
    e = _PARSED.get(source)
    if e is None:
        e = _PARSED[source] = X.parse(source)
    return e


# -- values: checked by validating real workloads -----------------------------------------------


def _validate(rec: Any, spec: Spec, values: tuple[tuple[str, Any], ...], label: str) -> GpusizerError | None:
    text = yaml.safe_dump(overlay(spec.base, values), sort_keys=False, allow_unicode=True)
    rb = rec.rulebase
    try:
        rb.inputs.load(None, rb.catalogs, display=f"{spec.display}#{label}", text=text, attached=spec.attached)
    except GpusizerError as exc:
        return exc
    return None


def _first_problem(exc: GpusizerError) -> GpusizerError:
    if isinstance(exc, Problems) and exc.errors:
        return exc.errors[0]
    return exc


def _blame(doc: Doc, path: tuple[str | int, ...], exc: GpusizerError, what: str) -> InputError:
    first = _first_problem(exc)
    return doc.error(path, f"{what}: {first.message}", first.help)


def _check_values(doc: Doc, spec: Spec, rec: Any) -> None:
    """The first combination, each value of each key beside the others' first values, each explicit case."""
    problems: list[InputError] = []
    first = tuple((k, spec.values[k][0]) for k in spec.keys)
    if spec.keys:
        exc = _validate(rec, spec, first, "first")
        if exc is not None:
            shown = ", ".join(f"{k}={_show(v)}" for k, v in first) or "the base alone"
            err = _first_problem(exc)
            raise Problems(
                [
                    doc.error(
                        ("base",),
                        f"the first case ({shown}) is not a valid workload: {err.message}",
                        f"{err.help or 'fix the base or the first value of each key'} "
                        f"(the workload was checked as {err.file or spec.display}"
                        f"{':' + str(err.line) if err.line else ''})",
                    )
                ]
            )
        for i, key in enumerate(spec.keys):
            for j, value in enumerate(spec.values[key]):
                if j == 0:
                    continue
                values = (*first[:i], (key, value), *first[i + 1 :])
                exc = _validate(rec, spec, values, f"{key}={value}")
                if exc is not None:
                    problems.append(_blame(doc, ("vary", key, j), exc, f"{key} = {_show(value)}"))
    for n, case in enumerate(spec.explicit):
        exc = _validate(rec, spec, tuple(case.items()), f"cases[{n}]")
        if exc is not None:
            problems.append(_blame(doc, ("cases", n), exc, f"cases[{n}]"))
    if problems:
        raise Problems(problems)


def _show(value: Any) -> str:
    return canonical_json(value) if not isinstance(value, str) else value


# -- the cases ---------------------------------------------------------------------------------


def combinations(spec: Spec) -> Iterator[tuple[tuple[str, Any], ...]]:
    """Every combination of the varied values (the last key fastest), then each explicit case."""
    if spec.keys:
        for combo in itertools.product(*(spec.values[k] for k in spec.keys)):
            yield tuple(zip(spec.keys, combo, strict=True))
    for case in spec.explicit:
        yield tuple(case.items())


def cases(spec: Spec, rulebase_sha: str, fields: tuple[str, ...]) -> list[Case]:
    """The cases that ``where`` keeps, numbered in order, each with its identity."""
    kept: list[tuple[tuple[str, Any], ...]] = []
    keys: list[str] = []
    for n, values in enumerate(combinations(spec), start=1):
        workload = overlay(spec.base, values)
        if not where_holds(spec, workload, f"#{n}"):
            continue
        kept.append(values)
        keys.append(case_key(workload, rulebase_sha, fields))
    width = max(4, len(str(len(kept))))
    return [Case(f"c{i:0{width}d}", values, key) for i, (values, key) in enumerate(zip(kept, keys, strict=True), 1)]
