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
import math
import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..format import num
from ..format import text as as_text

Getter = Callable[[dict[str, Any]], Any]
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


@dataclass(frozen=True, eq=False)
class Expr:
    """A parsed, checked expression."""

    source: str
    names: frozenset[str]  # dotted names read, e.g. {"size.total", "s.capacity"}
    tree: ast.Expression

    def bind(self, resolve: Resolver, tables: CatalogTable | None = None) -> Getter:
        """Compile to a closure; ``resolve(dotted)`` turns a name into a getter and ``tables`` reads
        the catalogs for the catalog functions (without it, calling one is an error). Evaluations in
        one ``env`` mapping share one budget of work (see the module's docstring).
        """
        return _budgeted(_Compiler(resolve, tables).compile(self.tree.body))

    @property
    def constant(self) -> bool:
        """The expression is a literal."""
        return isinstance(self.tree.body, ast.Constant)

    @property
    def reads_catalog(self) -> bool:
        """The expression calls a catalog function (only a rule's ``let`` and ``then`` have the catalogs)."""
        return any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in CATALOG_FUNCTIONS
            for n in ast.walk(self.tree)
        )


@dataclass(frozen=True, eq=False)
class Template:
    """Text with ``{expression}`` placeholders."""

    source: str
    parts: tuple[str | Expr, ...]

    @property
    def names(self) -> frozenset[str]:
        """Every dotted name the placeholders read."""
        return frozenset(n for p in self.parts if isinstance(p, Expr) for n in p.names)

    @property
    def reads_catalog(self) -> bool:
        """A placeholder calls a catalog function."""
        return any(isinstance(p, Expr) and p.reads_catalog for p in self.parts)

    def bind(self, resolve: Resolver, tables: CatalogTable | None = None) -> Getter:
        """Compile to a closure; one placeholder alone gives its value, anything else text."""
        bound: list[str | Getter] = [p if isinstance(p, str) else p.bind(resolve, tables) for p in self.parts]
        if len(bound) == 1 and not isinstance(bound[0], str):
            return bound[0]  # one placeholder alone: the value itself
        if all(isinstance(b, str) for b in bound):
            literal = "".join(b for b in bound if isinstance(b, str))
            return lambda env: literal

        def render(env: dict[str, Any]) -> str:
            out = "".join(b if isinstance(b, str) else _text(b(env)) for b in bound)
            if len(out) > MAX_LENGTH:
                raise ExprError(f"text longer than {MAX_LENGTH:,} characters")
            _charge(len(out))
            return out

        return _budgeted(render)


_BUDGET_KEY = "$steps"  # where an env mapping keeps the work its evaluations may still do


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


def parse_template(source: str) -> Template:
    """Parse text with {placeholders}; raises ExprError with the column of the fault."""
    parts: list[str | Expr] = []
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
        try:
            parts.append(parse(source[start:j]))
        except ExprError as exc:
            raise ExprError(
                f"in placeholder {{{source[start:j]}}}: {exc.message}", start + (exc.col or 1), exc.help
            ) from None
        i = j + 1
    if buf or not parts:
        parts.append("".join(buf))
    return Template(source, tuple(parts))


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


def parse(source: object) -> Expr:
    """Parse and check an expression; raises ExprError on anything not allowed."""
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
    try:
        tree = ast.parse(text, mode="eval")
        names: set[str] = set()
        _check(tree.body, names, 0)
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
    parsed = Expr(text, frozenset(names), tree)
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


def _check(node: ast.AST, names: set[str], depth: int) -> None:
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
        if not isinstance(node.func, ast.Name) or node.func.id not in (*FUNCTIONS, *CATALOG_FUNCTIONS):
            fname = dotted(node.func) or ast.unparse(node.func)
            raise ExprError(
                f"'{fname}' cannot be called: only the listed functions can",
                col,
                f"the functions are: {', '.join(sorted((*FUNCTIONS, *CATALOG_FUNCTIONS)))}",
            )
        if node.keywords:
            raise ExprError("keyword arguments are not supported", col, "pass arguments by position")
        for arg in _catalog_call_value(node, col) if node.func.id in CATALOG_FUNCTIONS else node.args:
            _check(arg, names, depth + 1)
        return
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float, str, bool)) and node.value is not None:
            raise ExprError(f"literal {node.value!r} is not allowed", col)
        return
    for child in ast.iter_child_nodes(node):
        _check(child, names, depth + 1)


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


class _Compiler:
    def __init__(self, resolve: Resolver, tables: CatalogTable | None = None) -> None:
        self.resolve = resolve
        self.tables = tables

    def compile(self, node: ast.AST) -> Getter:
        method: Callable[[ast.AST], Getter] = getattr(self, "c_" + type(node).__name__)
        return method(node)

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

        def run(env: dict[str, Any]) -> list[Any]:
            _charge(len(items))
            return [f(env) for f in items]

        return run

    c_Tuple = c_List

    def c_BinOp(self, node: Any) -> Getter:
        left, right = self.compile(node.left), self.compile(node.right)
        fn: Callable[[Any, Any], Any]
        if isinstance(node.op, ast.Pow):
            fn = _safe_pow
        else:
            fn = _arith(_BINOPS[type(node.op)], _SYM[type(node.op)])
        return lambda env: fn(left(env), right(env))

    def c_UnaryOp(self, node: Any) -> Getter:
        operand = self.compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
        if isinstance(node.op, ast.USub):
            return lambda env: -_num(operand(env), "'-'")
        return lambda env: +_num(operand(env), "'+'")

    def c_BoolOp(self, node: Any) -> Getter:
        parts = [self.compile(v) for v in node.values]
        if isinstance(node.op, ast.And):

            def run(env: dict[str, Any]) -> Any:
                result = True
                for p in parts:
                    result = p(env)
                    if not result:
                        return result
                return result
        else:

            def run(env: dict[str, Any]) -> Any:
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

        def run(env: dict[str, Any]) -> bool:
            a = first(env)
            for op, getter in rest:
                b = getter(env)
                _charge(_sized(a) + _sized(b))
                if op is ast.In or op is ast.NotIn:
                    if not isinstance(b, (list, tuple, str)):
                        raise ExprError("'in' needs a list or text on its right")
                    ok = (a in b) if op is ast.In else (a not in b)
                else:
                    try:
                        ok = bool(_CMPOPS[op](a, b))
                    except TypeError:
                        raise ExprError(f"cannot compare {a!r} with {b!r}") from None
                if not ok:
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

        def run(env: dict[str, Any]) -> Any:
            values = [a(env) for a in args]
            _charge(sum(_sized(v) for v in values))
            try:
                return _bounded(fn(*values), f"{name}()")
            except ExprError:
                raise
            except (TypeError, ValueError, OverflowError) as exc:
                raise ExprError(f"{name}(): {exc}") from None

        return run

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
