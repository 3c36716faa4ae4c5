"""The Python API: ``recommend(path)`` or a reusable ``Recommender``.

A workload is given as a path (``str`` or ``os.PathLike``), a mapping, or a loaded ``Workload``;
YAML text goes through ``recommend_text``. A string is always a path, never guessed to be text.

The contract: whatever Python value a caller passes, ``recommend`` returns a ``Result`` or raises
a ``GpusizerError`` (an input error names the key and says what to give). A mapping's values are
converted to what a workload file holds (text, whole and real numbers, true/false, lists and
mappings): any ``numbers.Integral`` or ``numbers.Real`` (``Decimal``, ``Fraction``, a NumPy scalar)
becomes an int or a float; a value no file could hold (a set, bytes, a date, an object) is refused,
as are numbers beyond a float and nesting or size past a workload file's limits.
"""

from __future__ import annotations

import datetime
import math
import numbers
import os
import re
import weakref
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from .backends import Backend
from .errors import InputError, RuleError
from .explain.result import Result
from .load.limits import MAX_DEPTH, limits
from .load.workload import Workload
from .plan.rulebase import Rulebase, load_rulebase
from .run.session import SessionRunner

Source = str | os.PathLike[str] | Mapping[str, Any] | Workload

_MAX_FLOAT_BITS = 1024  # a whole number of more bits is beyond a float (1.8e308)


class Recommender:
    """A loaded, planned rulebase on a rule engine; reuse it for many workloads, then ``close()`` it
    (or use it as a context manager).
    """

    def __init__(
        self,
        rules: Sequence[Path | str] | Path | str | None = None,
        knowledge: Sequence[Path | str] | Path | str | None = None,
        rulebase: Rulebase | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.rulebase = rulebase or load_rulebase(_dirs(rules, "rules"), _dirs(knowledge, "knowledge"))
        self.runner = SessionRunner(self.rulebase, backend)
        # a Recommender dropped without close() still frees the rule engine's memory when it is
        # collected (not at interpreter exit, when the process's memory goes anyway)
        self._finalizer = weakref.finalize(self, self.runner.close)
        self._finalizer.atexit = False

    def __enter__(self) -> Recommender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the rule engine's resources."""
        self._finalizer()

    def load(self, workload: Source) -> Workload:
        """A path, a mapping or a Workload -> validated Workload."""
        rb = self.rulebase
        if isinstance(workload, Workload):
            return workload
        if isinstance(workload, Mapping):
            data = as_workload_data(workload)
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
            return rb.inputs.load(None, rb.catalogs, display="<workload>", text=text)
        if isinstance(workload, (str, os.PathLike)):
            try:
                path = Path(workload)
            except TypeError:  # an os.PathLike whose __fspath__ gives bytes
                raise InputError(
                    f"a workload path is text, not {type(os.fspath(workload)).__name__}", help="give a str or Path"
                ) from None
            return rb.inputs.load(path, rb.catalogs, display=os.fspath(workload))
        raise InputError(
            f"a workload is a path, a mapping or a Workload, not {type(workload).__name__}",
            help="for YAML text use recommend_text(text)",
        )

    def load_text(
        self, text: str, name: str = "<workload>", documents: Mapping[str, Mapping[str, str]] | None = None
    ) -> Workload:
        """YAML text -> validated Workload; ``name`` is what error messages call it; ``documents``
        (a decision record's) stand in for the files the workload's keys name.
        """
        if not isinstance(text, str):
            raise InputError(f"workload text is a str, not {type(text).__name__}", help="give the YAML as text")
        rb = self.rulebase
        return rb.inputs.load(None, rb.catalogs, display=str(name), text=text, documents=documents)

    def recommend(self, workload: Source) -> Result:
        """The recommendation for one workload: a path, a mapping or a Workload."""
        return self._run(self.load(workload))

    def recommend_text(
        self, text: str, name: str = "<workload>", documents: Mapping[str, Mapping[str, str]] | None = None
    ) -> Result:
        """The recommendation for a workload given as YAML text."""
        return self._run(self.load_text(text, name, documents))

    def _run(self, workload: Workload) -> Result:
        try:
            return Result(self.rulebase, self.runner.run(workload))
        except RuleError as exc:
            raise blame_the_workload(exc, self.rulebase, workload) from None


_default: dict[tuple[tuple[str, ...], tuple[str, ...]], Recommender] = {}


def recommend(
    workload: Source,
    rules: Sequence[Path | str] | Path | str | None = None,
    knowledge: Sequence[Path | str] | Path | str | None = None,
) -> Result:
    """Recommend a server for one workload (a path, a mapping or a Workload)."""
    r, k = _dirs(rules, "rules"), _dirs(knowledge, "knowledge")
    key = (tuple(map(str, r or ())), tuple(map(str, k or ())))
    rec = _default.get(key)
    if rec is None:
        rec = _default[key] = Recommender(r, k)
    return rec.recommend(workload)


def _dirs(value: object, what: str) -> list[Path] | None:
    """The directories a ``rules=`` or ``knowledge=`` argument names: one path, or a sequence of them."""
    if value is None:
        return None
    items = [value] if isinstance(value, (str, os.PathLike)) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, (str, os.PathLike)) for p in items):
        raise InputError(
            f"{what}= takes a directory or a list of directories, not {type(value).__name__}",
            help=f"e.g. {what}=['site-{what}/']",
        )
    try:
        return [Path(p) for p in items]
    except TypeError:
        raise InputError(f"{what}= takes text paths", help=f"e.g. {what}=['site-{what}/']") from None


# -- a mapping as a workload file would hold it ------------------------------------------------------------


def as_workload_data(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    """A workload mapping converted to what a workload file holds, or an InputError naming the key."""
    budget = [limits("workload").nodes]
    out = _convert(mapping, (), budget)
    assert isinstance(out, dict)
    return out


def _where(path: tuple[object, ...]) -> str:
    parts = [str(p)[:40] for p in path]
    if len(parts) > 8:
        parts = [*parts[:4], f"...({len(parts) - 6} more)...", *parts[-2:]]
    return ".".join(parts) or "the workload"


def _refuse(path: tuple[object, ...], what: str, help: str) -> InputError:
    return InputError(f"{_where(path)}: {what}", file="<workload>", help=help)


def _convert(value: Any, path: tuple[object, ...], budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _refuse(
            path,
            f"the workload has more than {limits('workload').nodes:,} values",
            "a workload is a few dozen keys; GPUSIZER_MAX_NODES raises the limit",
        )
    if len(path) > MAX_DEPTH:
        raise _refuse(
            path[:MAX_DEPTH],
            f"nested deeper than {MAX_DEPTH} levels (or a mapping that holds itself)",
            "a workload nests a few levels at most",
        )
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)  # the text of a str subclass (an enum member, a custom string)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = _key(k, path)
            out[key] = _convert(v, (*path, key), budget)
        return out
    if isinstance(value, (list, tuple)):
        return [_convert(v, (*path, i), budget) for i, v in enumerate(value)]
    if isinstance(value, numbers.Number):
        return _number(value, path)
    if isinstance(value, (set, frozenset)):
        raise _refuse(path, "a set has no order", "give a list")
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise _refuse(path, f"{type(value).__name__} is not text", "give a str (decode the bytes first)")
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        raise _refuse(path, f"a {type(value).__name__} is not a value gpusizer takes", "give a number or text")
    raise _refuse(
        path,
        f"a value of type {type(value).__name__} is not a workload value",
        "give text, a number, true or false, a list or a mapping, as a workload file would",
    )


def _key(k: Any, path: tuple[object, ...]) -> Any:
    if isinstance(k, str):
        return str.__str__(k)
    if k is None or isinstance(k, (bool, int, float)):  # as YAML would read it; the schema names it
        return _number(k, path) if isinstance(k, (int, float)) and not isinstance(k, bool) else k
    raise _refuse(path, f"a key of type {type(k).__name__}", "keys are text")


def _number(value: Any, path: tuple[object, ...]) -> int | float:
    """Any number type as an int or a float; one beyond a float, or not real, refused."""
    if isinstance(value, numbers.Integral):
        n = int(value)
        if n.bit_length() > _MAX_FLOAT_BITS:
            digits = int(n.bit_length() * math.log10(2)) + 1
            raise _refuse(
                path,
                f"a whole number of about {digits:,} digits is beyond the numbers gpusizer computes with (1.8e308)",
                "give a smaller number",
            )
        return n
    if isinstance(value, Decimal):
        if value.is_finite() and value.adjusted() > 308:  # before any conversion, which could take long
            raise _refuse(path, "a number beyond the numbers gpusizer computes with (1.8e308)", "give a smaller number")
        if value.is_finite() and value == value.to_integral_value():
            return _number(int(value), path)
        return _float(value, path)
    if isinstance(value, numbers.Rational):
        if value.denominator == 1:
            return _number(int(value.numerator), path)
        return _float(value, path)
    if isinstance(value, numbers.Real):
        return _float(value, path)
    raise _refuse(path, f"{value!r} is not a real number", "give a whole or real number")


def _float(value: Any, path: tuple[object, ...]) -> float:
    try:
        return float(value)  # NaN and infinities pass here and are refused as a file's would be
    except (OverflowError, ValueError):
        raise _refuse(
            path, "a number beyond the numbers gpusizer computes with (1.8e308)", "give a smaller number"
        ) from None


# -- a shipped rule that fails on the workload's values ------------------------------------------------------


def blame_the_workload(exc: RuleError, rb: Rulebase, workload: Workload) -> RuleError | InputError:
    """A shipped rule whose arithmetic failed on an extreme number of the workload (1e-300), blamed on
    the workload (the file the user can change), with the numbers it depended on; a rule of an
    overlay, or one that fails on ordinary numbers, keeps its own error.
    """
    rid = exc.first.rule
    rule = rb.rules.get(rid or "")
    if rule is None or rule.rule.overlay is not None or not _NUMERIC.search(exc.first.message):
        return exc
    suspects = _numbers_read(rb, rid or "", workload)
    if not suspects or not _extreme(suspects[0][1].value):
        return exc  # no number of the workload is out of every real range: the rule is at fault
    attr, iv = suspects[0]
    path = next((p for p, a in rb.inputs.attr_of.items() if a == attr), (attr,))
    listed = ", ".join(f"{'.'.join(p)} = {iv.value!r}" for p, iv in _with_paths(rb, suspects)[:6])
    return InputError(
        f"the workload's numbers make rule '{rid}' fail ({exc.first.message.removeprefix(f'rule {rid!r} failed ')}); "
        f"it depends on {listed}",
        file=workload.file,
        line=iv.line,
        snippet=_line(workload.text, iv.line),
        help=f"check {'.'.join(path)} and the other values named: a number far outside what it describes "
        "(1e-300 parameters, 1e300 tokens) cannot be sized; if they are what you mean, report this as a bug "
        f"in the rule ({exc.first.file})",
    )


# failures of arithmetic that extreme inputs cause (a conflict between rules, or a missing value, is not one)
_NUMERIC = re.compile(
    r"failed while firing: .*(not a finite number|division by zero|ZeroDivision|Overflow|overflow|beyond \d+ bits"
    r"|math domain)"
)


def _extreme(value: float) -> bool:
    """A number no workload describes: below 1e-30 or above 1e50 (but not zero)."""
    v = abs(float(value))
    return v != 0 and (v < 1e-30 or v > 1e50)


def _line(text: str, line: int | None) -> str | None:
    lines = text.splitlines()
    return lines[line - 1] if line is not None and 0 < line <= len(lines) else None


def _numbers_read(rb: Rulebase, rid: str, workload: Workload) -> list[tuple[str, Any]]:
    """The numbers the workload file gives that the rule depends on, the most extreme first."""
    seen: set[str] = set()
    todo = list(rb.rules[rid].reads)
    found = []
    while todo:
        attr = todo.pop()
        if attr in seen:
            continue
        seen.add(attr)
        iv = workload.inputs.get(attr)
        if iv is not None:
            v = iv.value
            if iv.origin == "workload" and isinstance(v, (int, float)) and not isinstance(v, bool):
                found.append((attr, iv))
            continue
        for writer in rb.writers.get(attr, ()):
            todo.extend(rb.rules[writer].reads)

    def extremity(item: tuple[str, Any]) -> tuple[float, int]:
        v = abs(float(item[1].value))
        return (-abs(math.log10(v)) if v > 0 else 0.0, item[1].line or 0)

    return sorted(found, key=extremity)


def _with_paths(rb: Rulebase, suspects: list[tuple[str, Any]]) -> list[tuple[tuple[str, ...], Any]]:
    paths = {a: p for p, a in rb.inputs.attr_of.items()}
    return [(paths.get(a, (a,)), iv) for a, iv in suspects]
