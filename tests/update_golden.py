"""Regenerate the golden files by area, then review the diff.

    python tests/update_golden.py                  # every area
    python tests/update_golden.py --area examples  # one area (repeatable)

Areas: examples (each example's text and Markdown report and its JSON's conclusions in tests/golden/),
commands (explain, why-not and what-if answers in tests/golden/), golden (both), errors (the messages of tests/bad/:
broken workloads, rule and knowledge directories, lint findings), attacks (tests/attacks/expected/,
each case in a subprocess of its own), docs (docs/rules.md). It prints each file it changed with the
lines added and removed, and removes golden files that no case writes any more.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import (
    GOLDEN,
    ROOT,
    bad_rulebases,
    bad_workloads,
    command_cases,
    example_cases,
    golden_cases,
    golden_text,
    lint_cases,
    normalise,
    run_cli,
)


class Changes:
    """What an update wrote: each file whose content changed, with its lines added and removed."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, path: Path, text: str) -> None:
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == text:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self._record(path, old, text)

    def remove(self, path: Path) -> None:
        old = path.read_text(encoding="utf-8", errors="replace")
        path.unlink()
        self._record(path, old, None)

    def _record(self, path: Path, old: str | None, new: str | None) -> None:
        a, b = (old or "").splitlines(), (new or "").splitlines()
        added = removed = 0
        for line in difflib.unified_diff(a, b, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        status = "added" if old is None else "removed" if new is None else "changed"
        self.lines.append(f"  {status:8s} {path.relative_to(ROOT).as_posix()}  (+{added} -{removed} lines)")


def _reports(changes: Changes, cases: Iterable[tuple[str, list[str]]]) -> None:
    for name, argv in cases:
        code, out, err = run_cli(argv)
        assert code == 0, (name, err)
        changes.write(GOLDEN / name, golden_text(argv, out))


def examples(changes: Changes) -> None:
    _reports(changes, example_cases())


def commands(changes: Changes) -> None:
    _reports(changes, command_cases())


def stale(changes: Changes) -> None:
    """Golden files no case writes (e.g. a removed example, or the HTML pages no longer frozen)."""
    wanted = {name for name, _ in golden_cases()}
    for path in sorted(GOLDEN.iterdir()):
        if path.is_file() and path.name not in wanted:
            changes.remove(path)


def errors(changes: Changes) -> None:
    for _, argv, expected in bad_workloads():
        code, _, err = run_cli(argv)
        changes.write(expected, f"exit {code}\n{err}")
    with tempfile.TemporaryDirectory() as tmp:
        for _, argv, expected, root in bad_rulebases(Path(tmp)):
            code, _, err = run_cli(argv)
            changes.write(expected, f"exit {code}\n{normalise(err, root)}")
    for _, argv, expected in lint_cases():
        code, out, err = run_cli(argv)
        changes.write(expected, f"exit {code}\n{out}{err}")


def attacks(changes: Changes) -> None:
    """tests/attacks/expected/: each attack's exit code and message, each run in a subprocess (two at a time
    per core: a case mostly waits for its interpreter)."""
    from attacks import CASES, EXPECTED, expectation, run

    def one(case):
        with tempfile.TemporaryDirectory() as tmp:
            outcome = run(case.build(Path(tmp)), Path(tmp), case.env, case.stdout, case.append)
            return case, expectation(case, outcome, Path(tmp))

    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        results = list(pool.map(one, CASES))
    wanted = set()
    for case, text in results:
        wanted.add(f"{case.name}.txt")
        changes.write(EXPECTED / f"{case.name}.txt", text)
    for old in sorted(EXPECTED.glob("*.txt")):
        if old.name not in wanted:
            changes.remove(old)


def docs(changes: Changes) -> None:
    code, out, err = run_cli(["docs"])
    assert code == 0, err
    changes.write(ROOT / "docs" / "rules.md", out)


AREAS: dict[str, list[Callable[[Changes], None]]] = {
    "examples": [examples, stale],
    "commands": [commands, stale],
    "golden": [examples, commands, stale],
    "errors": [errors],
    "attacks": [attacks],
    "docs": [docs],
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--area", action="append", choices=sorted(AREAS), help="the area to regenerate (repeatable; default: all)"
    )
    args = p.parse_args(argv)
    chosen = args.area or ["golden", "errors", "attacks", "docs"]
    steps: list[Callable[[Changes], None]] = []
    for area in chosen:
        steps += [s for s in AREAS[area] if s not in steps]
    changes = Changes()
    for step in steps:
        step(changes)
    if changes.lines:
        print(f"{len(changes.lines)} file(s) changed ({', '.join(chosen)}); review them with git diff:")
        print("\n".join(changes.lines))
    else:
        print(f"no file changed ({', '.join(chosen)})")


if __name__ == "__main__":
    main()
