"""Reports and error messages compared in full with the committed files.

After an intended change: python tests/update_golden.py, then review the diff.
"""

import pytest

from corpus import BAD, GOLDEN, bad_rulebase, bad_workloads, golden_cases, normalise, run_cli

GOLDEN_CASES = list(golden_cases())
BAD_WORKLOADS = list(bad_workloads())


@pytest.mark.parametrize("name,argv", GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_report_matches_golden(name, argv):
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert err == ""
    assert out == (GOLDEN / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name,argv,expected", BAD_WORKLOADS, ids=[c[0] for c in BAD_WORKLOADS])
def test_bad_workload_message(name, argv, expected):
    code, out, err = run_cli(argv)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert f"exit {code}\n{err}" == expected.read_text(encoding="utf-8")


BAD_RULEBASES = sorted(
    p.relative_to(BAD).as_posix() for kind in ("rules", "knowledge") for p in (BAD / kind).iterdir() if p.is_dir()
)


def test_the_bad_rulebase_corpus_is_not_empty():
    assert len(BAD_RULEBASES) >= 12


@pytest.mark.parametrize("case", BAD_RULEBASES)
def test_bad_rulebase_message(case, tmp_path):
    name, argv, expected, root = bad_rulebase(case, tmp_path)
    code, out, err = run_cli(argv)
    assert code == 2
    assert "Traceback" not in err
    assert f"exit {code}\n{normalise(err, root)}" == expected.read_text(encoding="utf-8")


def test_batch_keeps_good_results_and_fails_overall(tmp_path):
    """A bad file in a batch is reported; the good ones are still written; exit code 2."""
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        [
            "recommend",
            "examples/llama2-70b-chat.yaml",
            "tests/bad/workloads/unknown-key.yaml",
            "examples/gpt2-finetune-personal.yaml",
            "-o",
            str(out),
        ]
    )
    assert code == 2
    assert "unknown key 'batch_sise'" in err
    assert sorted(p.name for p in out.iterdir()) == ["gpt2-finetune-personal.txt", "llama2-70b-chat.txt"]
    assert (out / "llama2-70b-chat.txt").read_text() == (GOLDEN / "llama2-70b-chat.txt").read_text()


def test_json_batch_is_one_array():
    import json

    code, out, err = run_cli(
        ["recommend", "examples/llama2-70b-chat.yaml", "examples/hpc-fp64-bert.yaml", "--format", "json"]
    )
    assert code == 0, err
    docs = json.loads(out)
    assert [d["workload"]["name"] for d in docs] == ["llama2-70b-chat", "hpc-fp64-bert"]


def test_explain_unknown_attribute_suggests_the_closest():
    code, out, err = run_cli(["explain", "examples/llama2-70b-chat.yaml", "ram.system_g"])
    assert code == 2
    assert "unknown attribute 'ram.system_g'" in err and "did you mean 'ram.system_gb'" in err


def test_explain_depth_cuts_the_tree():
    code, full, _ = run_cli(["explain", "examples/llama2-70b-chat.yaml", "gpu.model"])
    code2, cut, _ = run_cli(["explain", "examples/llama2-70b-chat.yaml", "gpu.model", "--depth", "1"])
    assert code == code2 == 0
    assert "precision = fp16" in full and "precision = fp16" not in cut
    assert "..." in cut


def test_missing_file_is_a_clean_error():
    code, out, err = run_cli(["recommend", "examples/no-such-file.yaml"])
    assert code == 2
    assert err.startswith("examples/no-such-file.yaml: error: file not found")
