"""A small, safe expression language for rule conclusions, and text templates built on it.

Rule files compute values with expressions such as ``ceil(size.total / s.capacity)``. They are
parsed with Python's ``ast`` module and interpreted from a whitelist of node types; nothing in an
expression can call arbitrary Python, import, or reach dunder attributes. Parsing also yields
every dotted name an expression reads, which the rule graph needs for stratification.

Evaluation is bounded: text and lists stop at ``MAX_LENGTH`` items, whole numbers at
``MAX_INT_BITS`` bits and real numbers at the finite ones, so a chain of ``let`` values that doubles
a string or squares a number fails with a named error instead of exhausting memory or time. Work
on text and lists (joining, comparing, searching, summing) is counted against a budget of
``MAX_STEPS`` characters or members, kept in the evaluation's ``env`` mapping: a rule firing
evaluates all its ``let`` and ``then`` values in one ``env``, so they share one budget.

A template is text with ``{expression}`` placeholders: ``"{gpu.model} is a GeForce card"``.
``{{`` and ``}}`` stand for braces. A template that is one placeholder alone gives that value as
it is (a number stays a number); otherwise each value is written by ``format.text``.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import threading
from collections.abc import Callable, Collection, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ..format import num
from ..format import text as as_text

Getter = Callable[[Any], Any]  # over an environment: a mapping, or a rule's slots (plan.resolve)
Resolver = Callable[[str], Getter]

MAX_LENGTH = 1_000_000  # characters of text or members of a list that one value may have
MAX_INT_BITS = 256
MAX_SOURCE = 10_000  # characters of one expression
MAX_DEPTH = 100  # nesting of one expression
MAX_STEPS = 2_000_000  # characters or list members that the expressions of one rule firing may touch

_budget = threading.local()


class ExprError(Exception):
    """A problem in an expression; ``col`` is 1-based within the expression."""

    def __init__(self, message: str, col: int | None = None, help: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.help = help


def _charge(n: int) -> None:
    left: list[int] = _budget.left  # set by every bound getter while it runs
    left[0] -= n
    if left[0] < 0:
        raise ExprError(
            f"the expressions work on more than {MAX_STEPS:,} characters or list members",
            help="the rule builds or searches very long text or lists; simplify its 'let' and 'then' values",
        )


def steps_left() -> int:
    """The steps the running budget (``Budget``) has left."""
    left: list[int] = _budget.left
    return left[0]


def charge(n: int) -> None:
    """Charge ``n`` steps to the running budget, as the evaluation that took them did (raises past it)."""
    _charge(n)


def _sized(x: Any) -> int:
    return len(x) if isinstance(x, (str, list, tuple)) else 0


def _num(x: Any, what: str) -> int | float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ExprError(f"{what} needs numbers, got {type(x).__name__} {x!r}")
    return x


def _round_up_to(x: Any, sizes: Any) -> Any:
    """Smallest size in ``sizes`` that is >= x (the largest size if none is)."""
    _num(x, "round_up_to")
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise ExprError("round_up_to needs a non-empty list of sizes")
    ordered = sorted(_num(s, "round_up_to") for s in sizes)
    for s in ordered:
        if s >= x:
            return s
    return ordered[-1]


def _next_pow2(x: Any) -> int:
    _num(x, "next_pow2")
    if x <= 1:
        return 1
    return 1 << math.ceil(math.log2(x) - 1e-12)


def _lcm(a: Any, b: Any) -> int:
    """The least common multiple of two positive whole numbers (a layout's GPUs and a node's, say)."""
    for v in (a, b):
        _num(v, "lcm")
        if v != int(v) or v < 1:
            raise ExprError(f"lcm() needs positive whole numbers, got {v!r}")
    return math.lcm(int(a), int(b))


def _ceil(x: Any, step: Any = None) -> Any:
    _num(x, "ceil")
    if step is None:
        return math.ceil(x - 1e-9 * max(1.0, abs(x)))
    _num(step, "ceil")
    if step <= 0:
        raise ExprError("ceil(x, step) needs a positive step")
    return math.ceil(x / step - 1e-9) * step


def _floor(x: Any, step: Any = None) -> Any:
    _num(x, "floor")
    if step is None:
        return math.floor(x + 1e-9 * max(1.0, abs(x)))
    _num(step, "floor")
    if step <= 0:
        raise ExprError("floor(x, step) needs a positive step")
    return math.floor(x / step + 1e-9) * step


def _round(x: Any, digits: Any = 0) -> Any:
    _num(x, "round")
    return round(x, int(digits)) if digits else round(x)


def _text(x: Any, digits: Any = 4) -> str:
    """A value written for people, as reports write it (numbers to ``digits`` significant digits)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return num(x, int(_num(digits, "text")))
    if isinstance(x, (bool, str, list, tuple, dict)):
        return as_text(x)
    raise ExprError(f"text() cannot format {type(x).__name__}")


def _clamp(x: Any, lo: Any, hi: Any) -> Any:
    return max(_num(lo, "clamp"), min(_num(x, "clamp"), _num(hi, "clamp")))


def _sum(items: Any) -> Any:
    if not isinstance(items, (list, tuple)):
        raise ExprError("sum() needs a list")
    values = [_num(i, "sum") for i in items]
    # correctly rounded, so that every Python gives the same result
    return sum(values) if all(isinstance(v, int) for v in values) else math.fsum(values)


def _len(items: Any) -> int:
    if not isinstance(items, (list, tuple, str)):
        raise ExprError("len() needs a list or text")
    return len(items)


def _count(items: Any, value: Any) -> int:
    """How many members of a list equal ``value``."""
    if not isinstance(items, (list, tuple)):
        raise ExprError("count() needs a list")
    return sum(1 for i in items if i == value)


def _minmax(fn: Callable[[Any], Any], name: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        vals = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
        if not vals:
            raise ExprError(f"{name}() of nothing")
        return fn(_num(v, name) for v in vals)

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ceil": _ceil,
    "floor": _floor,
    "round": _round,
    "abs": lambda x: abs(_num(x, "abs")),
    "min": _minmax(min, "min"),
    "max": _minmax(max, "max"),
    "clamp": _clamp,
    "round_up_to": _round_up_to,
    "next_pow2": _next_pow2,
    "lcm": _lcm,
    "log2": lambda x: math.log2(_num(x, "log2")),
    "sqrt": lambda x: math.sqrt(_num(x, "sqrt")),
    "sum": _sum,
    "len": _len,
    "count": _count,
    "text": _text,
}

# Functions that read a catalog by value, without a join: ``min_in('cpu', 'cores', 'family', pf.cpu_family)`` is the
# least ``cores`` of the ``cpu`` items whose ``family`` equals the value (null when none has it; items without the
# field are passed over). The catalog and both fields are named by literal text, checked when the rule is planned,
# and the catalog is read once then, so a call costs one look-up. A join (an ``item:`` condition) keeps every
# combination of items it could match in a backend's network; a look-up keeps nothing.
CATALOG_FUNCTIONS: dict[str, Callable[[list[Any]], Any]] = {"min_in": min, "max_in": max}

# Given (catalog, field, key field) by a function's call, the table of key value -> value of the call; raises
# ExprError when the catalog or a field is unknown.
CatalogTable = Callable[[str, str, str, Callable[[list[Any]], Any]], dict[Any, Any]]


def catalog_table(items: Any, field: str, key: str, pick: Callable[[list[Any]], Any]) -> dict[Any, Any]:
    """Key value -> ``pick`` of the field over the items with that key value (items lacking either are passed over)."""
    groups: dict[Any, list[Any]] = {}
    for item in items:
        k, v = item.get(key), item.get(field)
        if k is None or v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        groups.setdefault(k, []).append(v)
    return {k: pick(vs) for k, vs in groups.items()}


# YAML's spellings, so rule authors can write what they write elsewhere in the file
WORDS = {"true": True, "false": False, "null": None}

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


# the attribute of an expanded tree's node that marks it as a let's expression (lang.expand)
LET_MARK = "gpusizer_let"
# the names an expanded let's tree reads (engine.lang.expand), kept on the tree for names_of
NAMES_MARK = "gpusizer_names"


@dataclass(frozen=True, eq=False)
class LetMark:
    """A let's expression where planning put it in place of the let's name, in a condition's ref: the
    let it is and the item aliases it reads. Its value is the same wherever those items and the
    attributes are the same, which lets an evaluator keep it (``Expr.bind``'s ``let_hook``); one mark
    per let of a rule, so equal marks are the same let.
    """

    name: str
    items: tuple[str, ...]


LetHook = Callable[[LetMark, Getter], Getter]


@dataclass(frozen=True, eq=False)
class Expr:
    """A parsed, checked expression."""

    source: str
    names: frozenset[str]  # dotted names read, e.g. {"size.total", "s.capacity"}
    tree: ast.Expression
    # calls of names that are not built-in functions (named formulas), with their 1-based columns;
    # ``parse`` admits them only where its caller knows such names, and planning expands them
    calls: tuple[tuple[str, int], ...] = ()

    def bind(
        self,
        resolve: Resolver,
        tables: CatalogTable | None = None,
        *,
        budgeted: bool = True,
        let_hook: LetHook | None = None,
    ) -> Getter:
        """Compile to a closure; ``resolve(dotted)`` turns a name into a getter and ``tables`` reads
        the catalogs for the catalog functions (without it, calling one is an error). Evaluations in
        one ``env`` mapping share one budget of work (see the module's docstring); with
        ``budgeted=False`` the caller runs the getter inside a :class:`Budget` of its own.
        ``let_hook(mark, getter)`` may wrap the getter of each let expansion planning marked (a
        :class:`LetMark`), to keep its value where the caller knows it cannot change.
        """
        if self.calls:
            name, col = self.calls[0]
            raise ExprError(f"'{name}' is not expanded: a formula is called outside a rule", col)
        getter = _Compiler(resolve, tables, let_hook).compile(self.tree.body)
        return _budgeted(getter) if budgeted else getter

    @property
    def constant(self) -> bool:
        """The expression is a literal."""
        return isinstance(self.tree.body, ast.Constant)

    @functools.cached_property
    def heads(self) -> frozenset[str]:
        """The first part of each name read: the item aliases, lets and attributes' first words."""
        return frozenset(n.split(".")[0] for n in self.names)

    @functools.cached_property
    def reads_catalog(self) -> bool:
        """The expression calls a catalog function (only a rule's ``let`` and ``then`` have the catalogs)."""
        return any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in CATALOG_FUNCTIONS
            for n in ast.walk(self.tree)
        )


@dataclass(frozen=True, eq=False)
class Template:
    """Text with ``{expression}`` placeholders; ``{expression:unit}`` writes the value with its unit."""

    source: str
    parts: tuple[str | Expr, ...]
    units: frozenset[int] = frozenset()  # the indices of the parts written {expression:unit}

    @property
    def names(self) -> frozenset[str]:
        """Every dotted name the placeholders read."""
        return frozenset(n for p in self.parts if isinstance(p, Expr) for n in p.names)

    @property
    def heads(self) -> frozenset[str]:
        """The first part of each name the placeholders read."""
        return frozenset(h for p in self.parts if isinstance(p, Expr) for h in p.heads)

    @property
    def calls(self) -> tuple[tuple[str, int], ...]:
        """The formulas the placeholders call."""
        return tuple(c for p in self.parts if isinstance(p, Expr) for c in p.calls)

    @property
    def reads_catalog(self) -> bool:
        """A placeholder calls a catalog function."""
        return any(isinstance(p, Expr) and p.reads_catalog for p in self.parts)

    def bind(
        self,
        resolve: Resolver,
        units: Mapping[int, Getter] | None = None,
        tables: CatalogTable | None = None,
        *,
        budgeted: bool = True,
    ) -> Getter:
        """Compile to a closure; one placeholder alone gives its value, anything else text.
        ``units`` gives, for each part written ``{expression:unit}``, a getter of its unit's text;
        ``tables`` reads the catalogs for the catalog functions.
        """
        bound: list[str | Getter] = [
            p if isinstance(p, str) else p.bind(resolve, tables, budgeted=budgeted) for p in self.parts
        ]
        for k, unit in (units or {}).items():
            bound[k] = _with_unit(bound[k], unit)  # type: ignore[arg-type]
        if len(bound) == 1 and not isinstance(bound[0], str) and not self.units:
            return bound[0]  # one placeholder alone: the value itself
        if all(isinstance(b, str) for b in bound):
            literal = "".join(b for b in bound if isinstance(b, str))
            return lambda env: literal

        def render(env: Any) -> str:
            out = "".join(b if isinstance(b, str) else _text(b(env)) for b in bound)
            if len(out) > MAX_LENGTH:
                raise ExprError(f"text longer than {MAX_LENGTH:,} characters")
            _charge(len(out))
            return out

        return _budgeted(render) if budgeted else render


def _with_unit(value: Getter, unit: Getter) -> Getter:
    """A placeholder's text followed by its unit, as reports write a quantity (``12,196 GB``)."""

    def run(env: Any) -> str:
        shown = _text(value(env))
        u = unit(env)
        return f"{shown} {u}" if u and shown else shown

    return run


_BUDGET_KEY = "$steps"  # where an env mapping keeps the work its evaluations may still do


class Budget:
    """``with Budget():`` the getters bound with ``budgeted=False`` that run inside share one budget
    of work (a rule firing's lets and conclusions do), as the getters of one env mapping do.
    """

    __slots__ = ("prior",)

    def __enter__(self) -> None:
        self.prior = getattr(_budget, "left", None)
        _budget.left = [MAX_STEPS]

    def __exit__(self, *exc: object) -> None:
        _budget.left = self.prior


def _budgeted(inner: Getter) -> Getter:
    def run(env: dict[str, Any]) -> Any:
        if getattr(_budget, "left", None) is not None:  # inside another evaluation (a template's part)
            return inner(env)
        left = env.get(_BUDGET_KEY)
        if left is None:
            left = env[_BUDGET_KEY] = [MAX_STEPS]
        _budget.left = left
        try:
            return inner(env)
        finally:
            _budget.left = None

    return run


def parse_template(source: str, formulas: Collection[str] = ()) -> Template:
    """Parse text with {placeholders}; raises ExprError with the column of the fault. ``formulas``
    names the named formulas a placeholder may call.
    """
    parts: list[str | Expr] = []
    units: set[int] = set()  # the parts written {expr:unit}
    buf: list[str] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch == "{" and source.startswith("{{", i):
            buf.append("{")
            i += 2
            continue
        if ch == "}" and source.startswith("}}", i):
            buf.append("}")
            i += 2
            continue
        if ch == "}":
            raise ExprError("a '}' without its '{'", i + 1, "write '}}' for a literal brace")
        if ch != "{":
            buf.append(ch)
            i += 1
            continue
        start = i + 1
        j, quote = start, None
        while j < n:
            c = source[j]
            if quote:
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "}":
                break
            j += 1
        if j >= n:
            raise ExprError("a '{' without its '}'", i + 1, "close the placeholder, or write '{{' for a brace")
        if buf:
            parts.append("".join(buf))
            buf = []
        expr, unit = _placeholder(source, start, j, formulas)
        if unit:
            units.add(len(parts))
        parts.append(expr)
        i = j + 1
    if buf or not parts:
        parts.append("".join(buf))
    return Template(source, tuple(parts), frozenset(units))


def _placeholder(source: str, start: int, end: int, formulas: Collection[str]) -> tuple[Expr, bool]:
    """The expression of the placeholder at source[start:end], and whether it is written ``:unit``."""
    inner, spec = _spec(source[start:end])
    if spec is not None and spec.strip() != "unit":
        raise ExprError(
            f"in placeholder {{{source[start:end]}}}: unknown format ':{spec.strip()}'",
            start + len(inner) + 1,
            "the one format is ':unit' (the value with its declared unit: {size.total:unit})",
        )
    try:
        return parse(inner, formulas), spec is not None
    except ExprError as exc:
        raise ExprError(
            f"in placeholder {{{source[start:end]}}}: {exc.message}", start + (exc.col or 1), exc.help
        ) from None


def _spec(text: str) -> tuple[str, str | None]:
    """A placeholder's expression and its format (after a ':' outside quotes and brackets), if any."""
    quote, depth = None, 0
    for k, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ":" and depth == 0:
            return text[:k], text[k + 1 :]
    return text, None


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a name or attribute chain, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def parse(source: object, formulas: Collection[str] = ()) -> Expr:
    """Parse and check an expression; raises ExprError on anything not allowed. ``formulas``
    names the functions a rule may call besides the built-in ones (the named formulas).
    """
    parsed = _parse(source)
    for name, col in parsed.calls:
        if name not in formulas:
            also = f"; the formulas: {', '.join(sorted(formulas))}" if formulas else ""
            raise ExprError(
                f"'{name}' cannot be called: only the listed functions can",
                col,
                f"the functions are: {', '.join(sorted(FUNCTIONS))}{also}",
            )
    return parsed


def names_of(tree: ast.AST) -> frozenset[str]:
    """Every dotted name a checked tree reads (an expanded tree's, for one)."""
    return frozenset(_names(tree))


def _names(node: ast.AST) -> AbstractSet[str]:
    known = node.__dict__.get(NAMES_MARK)
    if known is not None:
        return known  # type: ignore[no-any-return]
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = dotted(node)
        if name is not None:
            return set() if name in WORDS else {name}
    if isinstance(node, ast.Call):  # the function's name is not read
        return set().union(*(_names(a) for a in node.args)) if node.args else set()
    out: set[str] = set()
    for child in ast.iter_child_nodes(node):
        out |= _names(child)
    return out


def _parse(source: object) -> Expr:
    if isinstance(source, bool):
        source = "true" if source else "false"
    elif not isinstance(source, str):
        source = repr(source)
    text = source.strip()
    hit = _PARSED.get(text)
    if hit is not None:
        return hit
    if not text:
        raise ExprError("empty expression", 1, "write a value or a formula")
    if len(text) > MAX_SOURCE:
        raise ExprError(
            f"an expression of {len(text):,} characters; at most {MAX_SOURCE:,}",
            1,
            "compute intermediate values with 'let', or split the rule",
        )
    calls: list[tuple[str, int]] = []
    try:
        tree = ast.parse(text, mode="eval")
        names: set[str] = set()
        _check(tree.body, names, 0, calls)
    except SyntaxError as exc:
        raise ExprError(
            f"cannot parse expression: {exc.msg}",
            exc.offset,
            "expressions use Python-like syntax: a + b * c, ceil(x), a if cond else b",
        ) from None
    except (RecursionError, MemoryError):
        raise ExprError(
            f"the expression nests deeper than {MAX_DEPTH} levels", 1, "compute intermediate values with 'let'"
        ) from None
    parsed = Expr(text, frozenset(names), tree, tuple(calls))
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[text] = parsed
    return parsed


# an Expr is immutable and holds nothing of the rule it came from, so one written in many rules
# ('g.id', 'count', 0: 2,657 expressions in the shipped rules, 856 different) is parsed once
_PARSED: dict[str, Expr] = {}
_PARSED_MAX = 4096  # a few MB at most; the shipped rules use 856


_ALLOWED = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Load,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.In,
    ast.NotIn,
    *tuple(_BINOPS),
    *tuple(_CMPOPS),
)


def _check(node: ast.AST, names: set[str], depth: int, calls: list[tuple[str, int]]) -> None:
    if depth > MAX_DEPTH:
        raise RecursionError
    col = getattr(node, "col_offset", None)
    col = col + 1 if col is not None else None
    if not isinstance(node, _ALLOWED):
        raise ExprError(
            f"'{type(node).__name__}' is not allowed in a rule expression",
            col,
            "use arithmetic, comparisons, 'and'/'or'/'not', 'x if c else y', "
            f"literals and the functions {', '.join(sorted(FUNCTIONS))}",
        )
    if isinstance(node, ast.Name) and node.id in WORDS:
        return
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = dotted(node)
        if name is None:
            raise ExprError(
                "only dotted names such as memory.weights_gb can be read",
                col,
                "read an attribute or a matched item field by its name",
            )
        for part in name.split("."):
            if part.startswith("_"):
                raise ExprError(
                    f"'{part}' starts with '_': private names cannot be read",
                    col,
                    "name an attribute or an item field; dunder access is forbidden",
                )
        names.add(name)
        return
    if isinstance(node, ast.Call):
        _check_call(node, names, depth, calls, col)
        return
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float, str, bool)) and node.value is not None:
            raise ExprError(f"literal {node.value!r} is not allowed", col)
        return
    for child in ast.iter_child_nodes(node):
        _check(child, names, depth + 1, calls)


def _check_call(node: ast.Call, names: set[str], depth: int, calls: list[tuple[str, int]], col: int | None) -> None:
    func = node.func
    if not isinstance(func, ast.Name) or func.id.startswith("_") or func.id in WORDS:
        fname = dotted(func) or ast.unparse(func)
        raise ExprError(
            f"'{fname}' cannot be called: only the listed functions can",
            col,
            f"the functions are: {', '.join(sorted((*FUNCTIONS, *CATALOG_FUNCTIONS)))}",
        )
    if func.id not in FUNCTIONS and func.id not in CATALOG_FUNCTIONS:
        calls.append((func.id, col or 1))
    if node.keywords:
        raise ExprError("keyword arguments are not supported", col, "pass arguments by position")
    for arg in _catalog_call_value(node, col) if func.id in CATALOG_FUNCTIONS else node.args:
        _check(arg, names, depth + 1, calls)


def _catalog_call_value(node: ast.Call, col: int | None) -> list[ast.expr]:
    """The value argument of a catalog function's call, whose catalog and fields must be literal text."""
    name = node.func.id if isinstance(node.func, ast.Name) else "?"
    args = node.args
    if len(args) != 4 or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args[:3]):
        raise ExprError(
            f"{name}() takes a catalog, a field, a key field (each as quoted text) and a value",
            col,
            f"e.g. {name}('cpu', 'cores', 'family', pf.cpu_family)",
        )
    return args[3:]


def _bounded(value: Any, what: str) -> Any:
    """The value, unless it is beyond what one expression may produce."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise ExprError(f"{what}: a whole number beyond {MAX_INT_BITS} bits")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ExprError(f"{what}: the result is not a finite number")
    elif isinstance(value, (str, list)) and len(value) > MAX_LENGTH:
        raise ExprError(f"{what}: a result longer than {MAX_LENGTH:,} items")
    return value


def _safe_pow(a: Any, b: Any) -> Any:
    _num(a, "**")
    _num(b, "**")
    if abs(b) > 64 or abs(a) > 1e100:
        raise ExprError("power too large")
    try:
        return _bounded(a**b, "'**'")
    except (OverflowError, ZeroDivisionError):
        raise ExprError("power out of range") from None


def _arith(op: Callable[[Any, Any], Any], sym: str) -> Callable[[Any, Any], Any]:
    what = f"'{sym}'"

    def run(a: Any, b: Any) -> Any:
        ta, tb = type(a), type(b)
        if not ((ta is int or ta is float) and (tb is int or tb is float)):  # two numbers: the common case
            if sym == "+" and isinstance(a, str) and isinstance(b, str):
                _charge(len(a) + len(b))
                return _bounded(a + b, what)
            if sym == "+" and isinstance(a, list) and isinstance(b, list):
                _charge(len(a) + len(b))
                return _bounded(a + b, what)
            _num(a, what)
            _num(b, what)
        try:
            return _bounded(op(a, b), what)
        except ZeroDivisionError:
            raise ExprError(f"division by zero in {what}") from None
        except OverflowError:
            raise ExprError(f"number too large in {what}") from None

    return run


_SYM = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}


_INF = math.inf
_INT_LIMIT = 1 << MAX_INT_BITS  # a whole number of more bits is refused (as _bounded does)


def _number_or_none(r: Any) -> Any:
    """``r`` when it is a number within bounds (the common case, checked without a call), else None."""
    t = type(r)
    if t is float:
        return r if -_INF < r < _INF else None
    if t is int:
        return r if -_INT_LIMIT < r < _INT_LIMIT else None
    return None


class _Compiler:
    """Turns a checked tree into nested closures, once: names are resolved to getters (slots of an
    environment, for a rule), literal sub-expressions that give a number are computed here, and
    the operators take a short path when both sides are numbers (the longer path, for text, lists
    and faults, is the one that defines their meaning: ``_arith``, ``_bounded``, ``_charge``).
    Evaluating is calling the closures: no source is generated or executed.
    """

    def __init__(self, resolve: Resolver, tables: CatalogTable | None = None, let_hook: LetHook | None = None) -> None:
        self.resolve = resolve
        self.tables = tables
        self.let_hook = let_hook
        self._literal: dict[int, bool] = {}  # id(node) -> literal(node), for the tree being compiled

    def literal(self, node: ast.AST) -> bool:
        """The tree reads no name (only literals and true/false/null) and builds no list: its value is
        known when compiled. Asked of each node once: operators are compiled after their operands, and
        walking each operator's whole subtree again made compiling a long expression quadratic.
        """
        known = self._literal.get(id(node))
        if known is None:
            if isinstance(node, ast.Name):
                known = node.id in WORDS
            elif isinstance(node, (ast.Attribute, ast.List, ast.Tuple)):
                known = False
            else:
                known = all(self.literal(child) for child in ast.iter_child_nodes(node))
            self._literal[id(node)] = known
        return known

    def compile(self, node: ast.AST) -> Getter:
        method: Callable[[ast.AST], Getter] = getattr(self, "c_" + type(node).__name__)
        getter = method(node)
        operator = isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call))
        if operator and self.literal(node):
            return _folded(getter)
        if self.let_hook is not None:
            mark = node.__dict__.get(LET_MARK)
            if mark is not None:
                return self.let_hook(mark, getter)
        return getter

    def c_Constant(self, node: Any) -> Getter:
        v = node.value
        return lambda env: v

    def c_Name(self, node: Any) -> Getter:
        if node.id in WORDS:
            v = WORDS[node.id]
            return lambda env: v
        return self.resolve(node.id)

    def c_Attribute(self, node: Any) -> Getter:
        name = dotted(node)
        assert name is not None  # parse() admits only dotted names
        return self.resolve(name)

    def c_List(self, node: Any) -> Getter:
        items = [self.compile(e) for e in node.elts]
        n = len(items)

        def run(env: Any) -> list[Any]:
            _charge(n)
            return [f(env) for f in items]

        return run

    c_Tuple = c_List

    def c_BinOp(self, node: Any) -> Getter:
        left, right = self.compile(node.left), self.compile(node.right)
        if isinstance(node.op, ast.Pow):
            return lambda env: _safe_pow(left(env), right(env))
        op = _BINOPS[type(node.op)]
        what = f"'{_SYM[type(node.op)]}'"
        slow = _arith(op, _SYM[type(node.op)])
        if isinstance(node.right, ast.Constant) and type(node.right.value) in (int, float):
            c = node.right.value

            def run_const(env: Any) -> Any:
                a = left(env)
                ta = type(a)
                if ta is float or ta is int:
                    try:
                        r = op(a, c)
                    except ZeroDivisionError:
                        raise ExprError(f"division by zero in {what}") from None
                    except OverflowError:
                        raise ExprError(f"number too large in {what}") from None
                    # _number_or_none(r), written out: this is the hottest path of a firing
                    tr = type(r)
                    if (tr is float and -_INF < r < _INF) or (tr is int and -_INT_LIMIT < r < _INT_LIMIT):
                        return r
                return slow(a, c)

            return run_const

        def run(env: Any) -> Any:
            a = left(env)
            b = right(env)
            ta, tb = type(a), type(b)
            if (ta is float or ta is int) and (tb is float or tb is int):
                try:
                    r = op(a, b)
                except ZeroDivisionError:
                    raise ExprError(f"division by zero in {what}") from None
                except OverflowError:
                    raise ExprError(f"number too large in {what}") from None
                tr = type(r)
                if (tr is float and -_INF < r < _INF) or (tr is int and -_INT_LIMIT < r < _INT_LIMIT):
                    return r
            return slow(a, b)

        return run

    def c_UnaryOp(self, node: Any) -> Getter:
        operand = self.compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
        if isinstance(node.op, ast.USub):
            return lambda env: -_num(operand(env), "'-'")
        return lambda env: +_num(operand(env), "'+'")

    def c_BoolOp(self, node: Any) -> Getter:
        parts = [self.compile(v) for v in node.values]
        if len(parts) == 2:
            a, b = parts
            if isinstance(node.op, ast.And):
                return lambda env: a(env) and b(env)
            return lambda env: a(env) or b(env)
        if isinstance(node.op, ast.And):

            def run(env: Any) -> Any:
                result = True
                for p in parts:
                    result = p(env)
                    if not result:
                        return result
                return result
        else:

            def run(env: Any) -> Any:
                result = False
                for p in parts:
                    result = p(env)
                    if result:
                        return result
                return result

        return run

    def c_Compare(self, node: Any) -> Getter:
        first = self.compile(node.left)
        rest = [(type(op), self.compile(c)) for op, c in zip(node.ops, node.comparators, strict=True)]
        if len(rest) == 1 and rest[0][0] in _CMPOPS:
            kind, second = rest[0]
            op = _CMPOPS[kind]

            def run_one(env: Any) -> bool:
                a = first(env)
                b = second(env)
                ta, tb = type(a), type(b)
                if (ta is float or ta is int) and (tb is float or tb is int):
                    return op(a, b)  # type: ignore[no-any-return]
                return _compare(kind, a, b)

            return run_one

        def run(env: Any) -> bool:
            a = first(env)
            for kind, getter in rest:
                b = getter(env)
                if not _compare(kind, a, b):
                    return False
                a = b
            return True

        return run

    def c_IfExp(self, node: Any) -> Getter:
        test, body, orelse = self.compile(node.test), self.compile(node.body), self.compile(node.orelse)
        return lambda env: body(env) if test(env) else orelse(env)

    def c_Call(self, node: Any) -> Getter:
        if node.func.id in CATALOG_FUNCTIONS:
            return self.catalog_call(node)
        fn = FUNCTIONS[node.func.id]
        args = [self.compile(a) for a in node.args]
        name = node.func.id
        what = f"{name}()"

        def call(values: list[Any]) -> Any:
            try:
                r = fn(*values)
            except ExprError:
                raise
            except (TypeError, ValueError, OverflowError) as exc:
                raise ExprError(f"{name}(): {exc}") from None
            if _number_or_none(r) is not None:
                return r
            return _bounded(r, what)

        def charged(values: list[Any]) -> Any:
            n = 0
            for v in values:
                t = type(v)
                if t is not float and t is not int and isinstance(v, (str, list, tuple)):
                    n += len(v)
            if n:
                _charge(n)
            return call(values)

        fast = _FAST_NUMERIC.get(name)
        if fast is not None and (len(args) == fast[1] or (fast[1] == 0 and len(args) >= 2)):
            return _numeric_call(fast[0], args, charged)
        if len(args) == 1:
            (a0,) = args

            def run1(env: Any) -> Any:
                v = a0(env)
                t = type(v)
                if t is not float and t is not int and isinstance(v, (str, list, tuple)):
                    _charge(len(v))
                return call([v])

            return run1

        return lambda env: charged([a(env) for a in args])

    def catalog_call(self, node: Any) -> Getter:
        name = node.func.id
        catalog, field, key = (a.value for a in node.args[:3])
        if self.tables is None:
            raise ExprError(f"{name}() reads a catalog, and none is loaded where this expression is evaluated")
        table = self.tables(catalog, field, key, CATALOG_FUNCTIONS[name])
        value = self.compile(node.args[3])

        def run(env: dict[str, Any]) -> Any:
            v = value(env)
            if isinstance(v, (list, dict)):
                raise ExprError(f"{name}() looks up one value, not a {type(v).__name__}")
            return table.get(v)

        return run


def _ceil1(x: Any) -> Any:
    return math.ceil(x - 1e-9 * max(1.0, abs(x)))


def _floor1(x: Any) -> Any:
    return math.floor(x + 1e-9 * max(1.0, abs(x)))


# Functions whose call on finite numbers (not true or false) has a short path that gives what the
# function gives them: the function without its checks of its arguments, which such arguments pass.
# The name maps to that path and the number of arguments it takes (0: two or more); any other call takes
# the long path, which defines the meaning (an argument that is text, a list, null, or not finite).
_FAST_NUMERIC: dict[str, tuple[Callable[..., Any], int]] = {
    "min": (min, 0),
    "max": (max, 0),
    "ceil": (_ceil1, 1),
    "floor": (_floor1, 1),
}


def _finite(v: Any) -> bool:
    """A number (not true or false) within the language's bounds: what the short paths take."""
    t = type(v)
    return (t is float and -_INF < v < _INF) or (t is int and -_INT_LIMIT < v < _INT_LIMIT)


def _numeric_call(short: Callable[..., Any], args: list[Getter], call: Callable[[list[Any]], Any]) -> Getter:
    """A call of a ``_FAST_NUMERIC`` function: its short path when every argument is a finite number and so
    is the result, otherwise ``call`` (the long path: it charges text and lists to the budget) on the
    same values. Numbers charge nothing.
    """
    if len(args) == 1:
        (a0,) = args

        def run1(env: Any) -> Any:
            v = a0(env)
            if _finite(v):
                r = short(v)
                if _finite(r):
                    return r
            return call([v])

        return run1
    if len(args) > 2:

        def run_n(env: Any) -> Any:
            values = [a(env) for a in args]
            for v in values:
                if not _finite(v):
                    return call(values)
            r = short(*values)
            if _finite(r):
                return r
            return call(values)

        return run_n
    a0, a1 = args

    def run2(env: Any) -> Any:
        v, w = a0(env), a1(env)
        if _finite(v) and _finite(w):
            r = short(v, w)
            if _finite(r):
                return r
        return call([v, w])

    return run2


def _compare(kind: Any, a: Any, b: Any) -> bool:
    """One comparison of a chain, as the language means it (the numbers' short path aside)."""
    _charge(_sized(a) + _sized(b))
    if kind is ast.In or kind is ast.NotIn:
        if not isinstance(b, (list, tuple, str)):
            raise ExprError("'in' needs a list or text on its right")
        return (a in b) if kind is ast.In else (a not in b)
    try:
        return bool(_CMPOPS[kind](a, b))
    except TypeError:
        raise ExprError(f"cannot compare {a!r} with {b!r}") from None


def _folded(getter: Getter) -> Getter:
    """A literal sub-expression computed once, when it gives a number (or true, false, null); one
    that fails (1 / 0) or gives text is left to fail or be built when evaluated, as written.
    """
    prior = getattr(_budget, "left", None)
    _budget.left = [MAX_STEPS]
    try:
        value = getter(None)
    except (ExprError, ArithmeticError, TypeError, ValueError):
        return getter
    finally:
        _budget.left = prior
    if value is None or isinstance(value, bool) or _number_or_none(value) is not None:
        return lambda env: value
    return getter
