"""Expansion of named formulas and ``let`` names into the expressions that use them.

A formula call ``area(b, 2)`` stands for the formula's expression with each argument put in place
of its parameter (an item parameter ``box`` reads the fields of the item whose alias is given:
``box.width`` becomes ``b.width``). A condition's ref
that reads a ``let`` name stands for the let's expression. Planning expands both once, so the
backends, the evaluator, why-not and the stratification see plain expressions over attributes and
items: a formula or a let means exactly its expression, wherever it is used.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping
from typing import TypeVar

from .expr import LET_MARK, NAMES_MARK, WORDS, Expr, ExprError, LetMark, dotted, names_of
from .ir import LIST_FIELD, Formula

_N = TypeVar("_N", bound=ast.AST)

# the fewest nodes a let's expanded tree has for Expander to mark it (Expander._mark)
_MARKED_SIZE = 8


def clone(node: _N) -> _N:
    """A deep copy of an expression's tree: ``copy.deepcopy`` without its memo and dispatch, which
    planning spent a third of the rulebase's load time in. A node's attributes are other nodes,
    lists of them, or immutable constants, so these are all it copies.
    """
    cls = node.__class__
    new = cls.__new__(cls)
    d = new.__dict__
    for k, v in node.__dict__.items():
        if isinstance(v, ast.AST):
            d[k] = clone(v)
        elif v.__class__ is list:
            d[k] = [clone(x) if isinstance(x, ast.AST) else x for x in v]
        else:
            d[k] = v
    return new


class Expander:
    """Expands formula calls (and, for conditions, let names) in one rule's expressions.

    ``aliases`` maps each item alias in scope to its catalog (an item argument must name one of the
    parameter's catalog); ``lets`` maps each let name that may be expanded to its expression.
    """

    def __init__(
        self,
        formulas: Mapping[str, Formula],
        aliases: Mapping[str, str] | None = None,
        lets: Mapping[str, Expr] | None = None,
        members: frozenset[str] = frozenset(),
    ) -> None:
        self.formulas = formulas
        self.aliases = aliases
        self.lets = lets or {}
        self.members = members  # aliases of lists ranged over: the alias alone reads its member's value
        self._lets_done: dict[str, ast.expr] = {}
        self._expanding: set[str] = set()

    def needed(self, e: Expr) -> bool:
        """The expression calls a formula or reads a let this expander expands."""
        return bool(e.calls) or bool(e.names & self.members) or any(n.split(".")[0] in self.lets for n in e.names)

    def expr(self, e: Expr) -> Expr:
        """The expression with its formula calls (and let names) expanded; itself when it has none."""
        if not self.needed(e):
            return e
        return self.tree(e.source, e.tree.body)

    def tree(self, source: str, node: ast.expr) -> Expr:
        """A part of an expression (``node``, written as ``source``), expanded."""
        tree: ast.expr = _Substitute(self, {}, ()).visit(clone(node))
        return Expr(source, names_of(tree), ast.Expression(body=tree))

    def let(self, name: str, col: int) -> ast.expr:
        """A let's expression, expanded (the lets and formulas it reads too): one tree, shared by every
        expression that reads the let. Expanding never changes a tree it has not copied itself (``tree``
        and a formula's body start from a copy, and a visit does not enter the tree that replaces a
        name), and compiling only reads one.
        """
        done = self._lets_done.get(name)
        if done is None:
            if name in self._expanding:
                raise ExprError(f"let values read each other in a cycle through '{name}'", col)
            self._expanding.add(name)
            try:
                done = _Substitute(self, {}, ()).visit(clone(self.lets[name].tree.body))
            finally:
                self._expanding.discard(name)
            # the names it reads, kept on the tree: every expression that reads the let holds this tree, and
            # names_of would otherwise walk it again in each of them
            done.__dict__[NAMES_MARK] = names_of(done)
            self._mark(name, done)
            self._lets_done[name] = done
        return done

    def _mark(self, name: str, tree: ast.expr) -> None:
        """Mark a let's expanded tree (``expr.LetMark``) with the aliases it reads, so that an evaluator
        may compute it once for the items bound to them. Only a tree with some work in it: reading a
        value or two costs less than looking one up.
        """
        if self.aliases is None or next(itertools.islice(ast.walk(tree), _MARKED_SIZE - 1, None), None) is None:
            return  # fewer than _MARKED_SIZE nodes (counted no further than that)
        items = tuple(sorted({n.split(".")[0] for n in names_of(tree)} & set(self.aliases)))
        tree.__dict__[LET_MARK] = LetMark(name, items)


class _Arg:
    """What a parameter stands for: an expression, or (an item parameter) an alias."""

    __slots__ = ("alias", "tree")

    def __init__(self, tree: ast.expr | None, alias: str | None) -> None:
        self.tree, self.alias = tree, alias


class _Substitute(ast.NodeTransformer):
    def __init__(
        self, expander: Expander, params: Mapping[str, _Arg], stack: tuple[str, ...], *, formula: bool = False
    ) -> None:
        self.x = expander
        self.params = params
        self.stack = stack
        self.formula = formula  # inside a formula's body: its parameters, not the rule's lets

    def _name(self, node: ast.expr) -> ast.expr:
        name = dotted(node)
        if name is None or name in WORDS:
            return self.generic_visit(node)  # type: ignore[return-value]
        head, _, rest = name.partition(".")
        col = getattr(node, "col_offset", 0) + 1
        arg = self.params.get(head)
        if arg is not None:
            if arg.alias is not None:
                if not rest:
                    raise ExprError(f"'{head}' is an item; read one of its fields ({head}.id)", col)
                return ast.copy_location(_dotted(f"{arg.alias}.{rest}"), node)
            if rest:
                raise ExprError(f"'{head}' is a value, it has no field '{rest}'", col)
            assert arg.tree is not None
            return clone(arg.tree)
        if not rest and head in self.x.members and not self.formula:
            return ast.copy_location(_dotted(f"{head}.{LIST_FIELD}"), node)
        if not self.formula and head in self.x.lets:
            if rest:
                raise ExprError(
                    f"'{name}': a condition reads a let's value whole, not a field of it",
                    col,
                    f"compute the field in a let of its own ({head}_{rest.replace('.', '_')}: {name})",
                )
            return self.x.let(head, col)
        return node

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self._name(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        return self._name(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if not (isinstance(node.func, ast.Name) and node.func.id in self.x.formulas):
            node.args = [self.visit(a) for a in node.args]
            return node
        f = self.x.formulas[node.func.id]
        col = getattr(node, "col_offset", 0) + 1
        if f.name in self.stack:
            raise ExprError(f"formulas call each other in a cycle: {' -> '.join((*self.stack, f.name))}", col)
        if len(node.args) != len(f.params):
            raise ExprError(
                f"{f.signature} takes {len(f.params)} argument(s), not {len(node.args)}",
                col,
                f"{f.name}: {f.description}",
            )
        bound: dict[str, _Arg] = {}
        for p, arg in zip(f.params, node.args, strict=True):
            if p.item is None:
                bound[p.name] = _Arg(self.visit(arg), None)
            else:
                bound[p.name] = _Arg(None, self._alias(f, p.name, p.item, arg, col))
        body: ast.expr = _Substitute(self.x, bound, (*self.stack, f.name), formula=True).visit(clone(f.value.tree.body))
        return body

    def _alias(self, f: Formula, param: str, catalog: str, arg: ast.expr, col: int) -> str:
        """The alias an item argument names (through an item parameter passed on, inside a formula)."""
        alias = arg.id if isinstance(arg, ast.Name) else None
        outer = self.params.get(alias) if alias is not None else None
        if outer is not None:
            alias = outer.alias
        elif alias is not None and (self.formula or (self.x.aliases is not None and alias not in self.x.aliases)):
            alias = None
        if alias is None:
            raise ExprError(
                f"{f.signature}: '{param}' is a {catalog} item; give the alias of a joined {catalog} "
                f"(as: ...), not {ast.unparse(arg)!r}",
                col,
            )
        joined = self.x.aliases.get(alias) if self.x.aliases is not None else None
        if joined is not None and joined != catalog:
            raise ExprError(
                f"{f.signature}: '{param}' is a {catalog} item, and '{alias}' joins the {joined} catalog", col
            )
        return alias


def _dotted(name: str) -> ast.expr:
    parts = name.split(".")
    node: ast.expr = ast.Name(id=parts[0], ctx=ast.Load())
    for p in parts[1:]:
        node = ast.Attribute(value=node, attr=p, ctx=ast.Load())
    return node
