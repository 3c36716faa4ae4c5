"""The engine's layers: each subpackage imports only from the layers below it, and no module
imports another in a cycle. Imports inside functions count too (they are deferred, not exempt)."""

import ast
from pathlib import Path

import pytest

from corpus import ROOT

ENGINE = ROOT / "engine"
# top first; a module may import its own layer and any layer after it
LAYERS = [
    "cli",
    "serve",
    "sweep",
    "api",
    "authoring",
    "report",
    "explain",
    "run",
    "backends",
    "plan",
    "load",
    "lang",
    "base",
]
BASE = {"errors", "format"}
# the package's __init__ re-exports the API (Recommender, recommend); __main__ runs the CLI
EXEMPT = {"engine", "engine.__main__"}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2:
        return "api"
    head = parts[1]
    return "base" if head in BASE else head


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every engine module this file imports, resolved to absolute names."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("engine"):
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                out.add(candidate if _exists(candidate, root) else target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("engine")}
    return out


def _exists(module: str, root: Path) -> bool:
    rel = Path(*module.split("."))
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


MODULES = {_module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}
GRAPH = {m: {i for i in _imports(p) if i in MODULES and i != m} for m, p in MODULES.items()}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m not in EXEMPT))
def test_imports_go_downward(module):
    mine = LAYERS.index(_layer(module))
    upward = [i for i in sorted(GRAPH[module]) if i not in EXEMPT and LAYERS.index(_layer(i)) < mine]
    assert not upward, f"{module} ({_layer(module)}) imports from a layer above it: {upward}"


def test_no_import_cycles():
    import graphlib

    graph = {m: deps - EXEMPT for m, deps in GRAPH.items() if m not in EXEMPT}
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_only_the_durable_backend_knows_durable_rules():
    """The engine can change rule engines by changing one backend module."""
    speakers = []
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imports |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
        dialect = any(tok in text for tok in ('"$and"', '"$or"', '"$gt"', '"$neq"', "$not", "assert_facts("))
        if any(i.startswith("durable") for i in imports) or dialect:
            speakers.append(module)
    assert speakers == ["engine.backends.durable"]


def test_the_layer_check_can_fail(tmp_path):
    """An upward import is found (the checks above are not vacuous)."""
    (tmp_path / "engine" / "load").mkdir(parents=True)
    (tmp_path / "engine" / "report").mkdir()
    (tmp_path / "engine" / "load" / "x.py").write_text("def f():\n    from ..report.render import render\n")
    (tmp_path / "engine" / "report" / "render.py").write_text("")
    found = _imports(tmp_path / "engine" / "load" / "x.py", tmp_path)
    assert found == {"engine.report.render"}
    assert LAYERS.index(_layer("engine.report.render")) < LAYERS.index(_layer("engine.load.x"))
