"""Shared by the golden tests and tests/update_golden.py: how each case is run."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

from engine.cli import recommender as _RECOMMENDER

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
BAD = ROOT / "tests" / "bad"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
FORMATS = {"text": "txt", "markdown": "md", "json": "json"}
EXPLAIN = [("llama2-70b-chat", "memory.vram_required_gb"), ("gpt2-finetune-personal", "ram.floor_gb")]


class _Shared:
    """The shipped rulebase's Recommender, shared by every in-process command of a test run: a
    command closes its Recommender when done, so this one's close() leaves it open."""

    def __init__(self, rec: Any) -> None:
        self._rec = rec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rec, name)

    def __enter__(self) -> _Shared:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def close(self) -> None:
        pass


_SHARED: dict[str, _Shared] = {}


def shared_recommender(args: Any) -> Any:
    """What ``engine.cli.recommender`` gives a command, loaded once per test process for the shipped
    rules and knowledge (loading and planning them takes most of a second) and the same GPUSIZER_*
    settings (limits are read while loading); a command with --rules or --knowledge overlays still
    loads its own, so that each broken overlay is read."""
    if not _SHARING[-1] or getattr(args, "rules", None) or getattr(args, "knowledge", None):
        return _RECOMMENDER(args)
    key = repr(sorted((k, v) for k, v in os.environ.items() if k.startswith("GPUSIZER_")))
    if key not in _SHARED:
        _SHARED[key] = _Shared(_RECOMMENDER(args))
    return _SHARED[key]


_SHARING = [True]


def _share_the_rulebase() -> None:
    """Point every CLI command module at shared_recommender (each imported the name itself)."""
    import importlib

    from engine import cli

    for module in set(cli.COMMANDS.values()):
        mod = importlib.import_module(f"engine.cli.{module}")
        if getattr(mod, "recommender", None) is _RECOMMENDER:
            mod.recommender = shared_recommender  # type: ignore[attr-defined]


def run_cli(argv: list[str], shared: bool = True) -> tuple[int, str, str]:
    """Run the CLI in-process from the repository root; exit code, stdout, stderr. Commands on the
    shipped rulebase share one loaded Recommender (shared_recommender); ``shared=False`` loads the
    rulebase as the command itself does, for a test that changes how loading goes (a patched
    backend). The CLI's own loading is also tested in subprocesses (the attack corpus, test_engine)."""
    from engine.cli import main

    _share_the_rulebase()
    _SHARING.append(shared)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse
                code = exc.code
    finally:
        os.chdir(cwd)
        _SHARING.pop()
    return code, out.getvalue(), err.getvalue()


def example_cases():
    """(golden file name, argv): each example's report as text, Markdown and JSON (its conclusions, golden_text)."""
    for ex in EXAMPLES:
        rel = ex.relative_to(ROOT).as_posix()
        for fmt, ext in FORMATS.items():
            yield f"{ex.stem}.{ext}", ["recommend", rel, "--format", fmt]


def command_cases():
    """(golden file name, argv): explain, why-not and what-if answers, compared byte for byte."""
    for stem, attr in EXPLAIN:
        for fmt, ext in FORMATS.items():
            yield f"{stem}.explain.{attr}.{ext}", ["explain", f"examples/{stem}.yaml", attr, "--format", fmt]
    llama = "examples/llama2-70b-chat.yaml"
    for name, (wl, query) in WHY_NOT.items():
        for fmt in ("text", "json"):
            yield f"why-not.{name}.{FORMATS[fmt]}", ["why-not", f"examples/{wl}.yaml", query, "--format", fmt]
    yield "what-if.set.txt", ["what-if", llama, "--set", "batch_size=8", "--set", "precision=int8"]
    yield "what-if.set.json", ["what-if", llama, "--set", "batch_size=8", "--format", "json"]
    yield "what-if.sweep.txt", ["what-if", llama, "--sweep", "batch_size=1,8,32"]
    yield "what-if.sweep.json", ["what-if", llama, "--sweep", "batch_size=1,8,32", "--format", "json"]
    yield (
        "what-if.max.txt",
        [
            "what-if",
            llama,
            "--max",
            "batch_size",
            "--while",
            "memory.vram_required_gb <= 171.79869184",
            "--show",
            "memory.vram_required_gb",
            "--show",
            "memory.kv_cache_gb",
        ],
    )


def golden_text(argv: list[str], out: str) -> str:
    """What a golden file holds for a command's output: the output itself, but for the JSON of
    ``recommend`` and ``explain`` the conclusions alone (each value, its unit and the rule that set
    it; an explanation's tree of them), so that a change to a rule shows in the goldens where it
    changes a conclusion, and nowhere else (the full documents carry the rulebase's hash, every
    candidate and every source; tests/test_golden.py checks their structure on every example)."""
    if "json" not in argv or argv[0] not in ("recommend", "explain"):
        return out
    doc = json.loads(out)
    if argv[0] == "recommend":
        doc = {
            "workload": doc["workload"],
            "inputs": {k: {"value": v["value"], "origin": v["origin"]} for k, v in doc["inputs"].items()},
            "constants": {k: v["value"] for k, v in doc["constants"].items()},
            "conclusions": {
                k: {"value": v["value"], "unit": v["unit"], "rule": v["rule"], "note": v["note"]}
                for k, v in doc["conclusions"].items()
            },
        }
    else:
        doc = _derivation(doc)
    return json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def _derivation(step: dict[str, Any]) -> dict[str, Any]:
    """An explanation's tree: each step's value, unit, origin and rule, what it beat counted."""
    out = {k: step[k] for k in ("attribute", "value", "unit", "origin") if k in step}
    if step.get("origin") == "rule":
        out.update(rule=step["rule"], beaten=len(step["beaten"]))
    out["premises"] = [_derivation(p) for p in step.get("premises", [])]
    return out


def golden_cases():
    """Every byte-compared golden file of tests/golden/ and the command that writes it. HTML reports and
    derivation graphs are not frozen: tests/test_golden.py checks their structure (sections, escaping,
    a self-contained page, well-formed SVG and dot) on every example instead."""
    yield from example_cases()
    yield from command_cases()


def html_cases():
    """(example stem, argv) of each example's HTML report (checked structurally, not byte for byte)."""
    for ex in EXAMPLES:
        yield ex.stem, ["recommend", ex.relative_to(ROOT).as_posix(), "--format", "html", "--layout", "python"]


# one why-not question per kind of answer
WHY_NOT = {
    "is-value": ("llama2-70b-chat", "os.swappiness=10"),
    "beaten-candidate": ("llama2-70b-chat", "gpu.model=h100-sxm-80gb"),
    "excluded": ("hpc-fp64-bert", "gpu.model=rtx-4090-24gb"),
    "failed-condition": ("llama2-70b-chat", "scenario.effective=personal"),
    "impossible-item": ("llama2-70b-chat", "gpu.model=tpu-v5"),
    "impossible-enum": ("llama2-70b-chat", "scenario.effective=enterprise"),
    "overridden": ("gpt2-finetune-personal", "ram.base_gb=32"),
    "not-produced": ("llama2-70b-chat", "os.swappiness=5"),
}


def bad_workloads():
    for path in sorted((BAD / "workloads").glob("*.yaml")):
        yield path.stem, ["recommend", path.relative_to(ROOT).as_posix()], path.with_suffix(".expected")


def _overlay(case: Path, shipped: Path, tmp: Path) -> Path:
    target = tmp / shipped.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(shipped, target)
    for f in case.rglob("*.yaml"):
        dest = target / f.relative_to(case)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)
    return target


def bad_rulebase(name: str, tmp: Path):
    """(name, argv, expected file, root) for one broken rule or knowledge directory, e.g. 'rules/dunder'."""
    kind, case_name = name.split("/")
    case = BAD / kind / case_name
    target = _overlay(case, ROOT / kind, tmp / f"{kind}-{case.name}")
    return (
        name,
        ["recommend", "examples/llama2-70b-chat.yaml", f"--{kind}", str(target)],
        case / "expected.txt",
        str(target.parent),
    )


def bad_rulebases(tmp: Path):
    """(name, argv, expected file, root) for each broken rule or knowledge directory."""
    for kind in ("rules", "knowledge"):
        for case in sorted(p for p in (BAD / kind).iterdir() if p.is_dir()):
            yield bad_rulebase(f"{kind}/{case.name}", tmp)


def normalise(text: str, tmp: str | None) -> str:
    return text.replace(tmp + os.sep, "") if tmp else text


def lint_cases():
    """(name, argv, expected file) for each broken overlay in tests/bad/lint/."""
    for case in sorted(p for p in (BAD / "lint").iterdir() if p.is_dir()):
        yield case.name, ["validate", case.relative_to(ROOT).as_posix()], case / "expected.txt"
