"""Regenerate the golden files: python tests/update_golden.py (then review the diff)."""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import GOLDEN, bad_rulebases, bad_workloads, golden_cases, lint_cases, normalise, run_cli


def write_attack_expectations() -> None:
    """tests/attacks/expected/: each attack's exit code and message (each run in a subprocess)."""
    from attacks import CASES, EXPECTED, expectation, run

    EXPECTED.mkdir(parents=True, exist_ok=True)
    for old in EXPECTED.glob("*.txt"):
        old.unlink()
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            outcome = run(case.build(Path(tmp)), Path(tmp), case.env, case.stdout, case.append)
            (EXPECTED / f"{case.name}.txt").write_text(expectation(case, outcome, Path(tmp)), encoding="utf-8")


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, argv in golden_cases():
        code, out, err = run_cli(argv)
        assert code == 0, (name, err)
        (GOLDEN / name).write_text(out, encoding="utf-8")
    for name, argv, expected in bad_workloads():
        code, out, err = run_cli(argv)
        expected.write_text(f"exit {code}\n{err}", encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv, expected, root in bad_rulebases(Path(tmp)):
            code, out, err = run_cli(argv)
            expected.write_text(f"exit {code}\n{normalise(err, root)}", encoding="utf-8")
    for name, argv, expected in lint_cases():
        code, out, err = run_cli(argv)
        expected.write_text(f"exit {code}\n{out}{err}", encoding="utf-8")
    write_attack_expectations()
    (GOLDEN.parent.parent / "docs").mkdir(exist_ok=True)
    code, out, err = run_cli(["docs", "-o", "docs/rules.md"])
    assert code == 0, err
    print("golden files written; review them with git diff")


if __name__ == "__main__":
    main()
