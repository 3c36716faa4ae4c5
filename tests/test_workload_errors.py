"""Every schema error of a workload in one run, each with its file:line:col and a help line; exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import run_cli


def test_three_typos_are_reported_in_one_run(tmp_path: Path) -> None:
    w = tmp_path / "typos.yaml"
    w.write_text(
        "name: typos\ntask: inference\nmodel: {name: llama-3-8b}\n"
        "precison: bf16\nbatch_sise: 4\nsequence_lenght: 1024\n"
    )
    code, out, err = run_cli(["recommend", str(w)])
    assert code == 2 and out == ""
    for line, key, fix in (
        (4, "precison", "precision"),
        (5, "batch_sise", "batch_size"),
        (6, "sequence_lenght", "sequence_length"),
    ):
        assert f"{w}:{line}:1: error: unknown key '{key}' in the workload" in err
        assert f"help: did you mean '{fix}'?" in err


def test_errors_of_several_kinds_and_depths_come_together(tmp_path: Path) -> None:
    w = tmp_path / "mixed.yaml"
    w.write_text(
        "name: mixed\ntask: inference\nmodel: {name: llama-3-8b}\nprecision: bf61\nbatch_size: four\n"
        "serving:\n  engnie: vllm\n  concurrent_request: 3\n"
    )
    code, _, err = run_cli(["recommend", str(w)])
    assert code == 2
    assert err.count(": error: ") == 4, err
    assert f"{w}:4:" in err and "'bf61' is not one of" in err
    assert f"{w}:5:" in err and "batch_size must be a whole number" in err
    assert f"{w}:7:3: error: unknown key 'engnie'" in err and f"{w}:8:3: error: unknown key 'concurrent_request'" in err
    assert err.count("help: ") == 4
