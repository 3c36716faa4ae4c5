"""Check the named formulas against the declared attributes and catalogs, before any rule calls one."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from ..errors import InputError, hint
from ..lang import expr as X
from ..lang.expand import Expander
from ..lang.ir import Attribute, Catalog, Formula


def check_formulas(
    formulas: Mapping[str, Formula], attributes: Mapping[str, Attribute], catalogs: Mapping[str, Catalog]
) -> list[InputError]:
    """What is wrong with the formulas: an item parameter of an unknown catalog, a name that is
    neither a parameter nor an attribute (a parameter hides an attribute of its name), an item
    field its catalog lacks, a call with the wrong number of arguments, a cycle of calls.
    """
    errors: list[InputError] = []
    for f in formulas.values():
        errors.extend(_one(f, formulas, attributes, catalogs))
    errors.extend(_cycles(formulas))
    if errors:
        return errors
    for f in formulas.values():  # expanded as a rule would call it: items passed on, values as values
        call = ast.Call(func=ast.Name(id=f.name, ctx=ast.Load()), args=[_name(p.name) for p in f.params], keywords=[])
        try:
            Expander(formulas, {p.name: p.item for p in f.params if p.item is not None}).tree(f.name, call)
        except X.ExprError as exc:
            errors.append(f.span.error(f"formula '{f.name}': {exc.message}", exc.help))
    return errors


def _name(name: str) -> ast.expr:
    return ast.Name(id=name, ctx=ast.Load())


def _one(
    f: Formula, formulas: Mapping[str, Formula], attributes: Mapping[str, Attribute], catalogs: Mapping[str, Catalog]
) -> list[InputError]:
    out: list[InputError] = []
    params = {p.name: p for p in f.params}
    for param in f.params:
        if param.item is not None and param.item not in catalogs:
            out.append(
                f.span.error(
                    f"formula '{f.name}': parameter '{param.name}' is an item of catalog '{param.item}', "
                    "which does not exist",
                    f"{hint(param.item, catalogs)}catalogs: {', '.join(sorted(catalogs))}",
                )
            )
    for name in sorted(f.value.names):
        head, _, rest = name.partition(".")
        p = params.get(head)
        if p is not None:
            if p.item is not None and not rest:
                continue  # an item passed on to another formula (any other use fails its expansion)
            if p.item is None and rest:
                out.append(f.span.error(f"formula '{f.name}': '{head}' is a value, it has no field '{rest}'"))
            elif p.item is not None and p.item in catalogs and not catalogs[p.item].has_field(rest):
                cat = catalogs[p.item]
                out.append(
                    f.span.error(
                        f"formula '{f.name}': catalog '{cat.name}' has no field '{rest}' ('{name}')",
                        f"{hint(rest, ['id', 'name', *cat.fields])}the fields are declared in {cat.file}",
                    )
                )
            continue
        if not _attribute(name, attributes):
            out.append(
                f.span.error(
                    f"formula '{f.name}': unknown name '{name}'",
                    f"{hint(name, [*params, *attributes])}a formula reads its parameters "
                    f"({', '.join(params)}), attributes and constants (const.NAME)",
                )
            )
    for node in ast.walk(f.value.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in formulas:
            callee = formulas[node.func.id]
            if len(node.args) != len(callee.params):
                out.append(
                    f.span.error(
                        f"formula '{f.name}' calls {callee.signature} with {len(node.args)} argument(s)",
                        f"{callee.name} takes {len(callee.params)}: {callee.description}",
                    )
                )
    return out


def _attribute(name: str, attributes: Mapping[str, Attribute]) -> bool:
    """The name is an attribute, or a field of a record (or scalar) attribute."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        attr = attributes.get(".".join(parts[:cut]))
        if attr is not None:
            return cut == len(parts) or attr.type in ("record", "scalar")
    return False


def _cycles(formulas: Mapping[str, Formula]) -> list[InputError]:
    calls = {n: {c for c, _ in f.value.calls if c in formulas} for n, f in formulas.items()}
    out: list[InputError] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for c in sorted(calls[n]):
            if state.get(c) == 1:
                cycle = [*path[path.index(c) :], c]
                out.append(
                    formulas[c].span.error(
                        f"formulas call each other in a cycle: {' -> '.join(cycle)}",
                        "a formula cannot depend, directly or through others, on itself",
                    )
                )
            elif c not in state:
                visit(c, [*path, c])
        state[n] = 2

    for n in sorted(formulas):
        if n not in state:
            visit(n, [n])
    return out


__all__ = ["check_formulas"]
