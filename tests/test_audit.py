"""Audit: why-not (one test per kind of answer), what-if, decision records, rulebase diffs."""

import json
import shutil

import pytest

from corpus import ROOT, WHY_NOT, run_cli


@pytest.mark.parametrize("kind", sorted(WHY_NOT))
def test_why_not_answers_each_kind(kind):
    workload, query = WHY_NOT[kind]
    code, out, err = run_cli(["why-not", f"examples/{workload}.yaml", query, "--format", "json"])
    assert code == 0, err
    answer = json.loads(out)
    expected = "impossible" if kind.startswith("impossible") else kind
    assert answer["kind"] == expected
    assert answer["message"]


def test_why_not_excluded_names_the_rule_and_condition():
    code, out, err = run_cli(["why-not", "examples/hpc-fp64-bert.yaml", "gpu.model=rtx-4090-24gb", "--format", "json"])
    answer = json.loads(out)
    # FP64 work rules out consumer cards and cards without an FP64 rate, so two rules exclude the RTX 4090: both
    # are named (the guides' 40 GB training floor does not exclude it: the need is computed, and binds)
    assert {"rule": "gpu-exclude-consumer-for-fp64", "inputs": {"needs_fp64": True}} in answer["excluded_by"]
    assert "gpu-exclude-no-fp64" in answer["message"] and "gpu-exclude-consumer-for-fp64" in answer["message"]
    assert "gpu-exclude-below-min-vram" not in answer["message"]


def test_why_not_beaten_candidate_gives_the_margin():
    code, out, err = run_cli(
        ["why-not", "examples/llama2-70b-chat.yaml", "gpu.model=h100-sxm-80gb", "--format", "json"]
    )
    answer = json.loads(out)
    assert answer["margin"] == answer["candidate"]["cost"] - answer["winner"]["cost"] > 0


def test_why_not_rejects_a_bad_query():
    code, out, err = run_cli(["why-not", "examples/llama2-70b-chat.yaml", "gpu.modle=x"])
    assert code == 2 and "did you mean 'gpu.model'" in err
    code, out, err = run_cli(["why-not", "examples/llama2-70b-chat.yaml", "gpu.count=many"])
    assert code == 2 and "is not a number" in err


@pytest.mark.parametrize(
    "query",
    [
        "memory.vram_required_gb=nan",
        "memory.vram_required_gb=NaN",
        "memory.vram_required_gb=inf",
        "memory.vram_required_gb=-Infinity",
        "memory.vram_required_gb=1e999",
        "gpu.count=nan",
    ],
)
def test_why_not_refuses_a_value_that_is_not_a_finite_number(query):
    """As the API does: NaN and infinities are no value a conclusion can take."""
    code, out, err = run_cli(["why-not", "examples/llama2-70b-chat.yaml", query])
    assert code == 2, (out, err)
    assert out == "" and "is not a finite number" in err and "help: give a finite number" in err
    assert "Traceback" not in err


def test_what_if_reports_changes_with_rules():
    code, out, err = run_cli(["what-if", "examples/llama2-70b-chat.yaml", "--set", "batch_size=8", "--format", "json"])
    assert code == 0, err
    changes = {c["attribute"]: c for c in json.loads(out)}
    kv = changes["memory.kv_cache_gb"]
    assert kv["new"] == pytest.approx(8 * kv["old"]) and kv["rule"] == "kv-cache-inference"


def test_what_if_max_batch_is_exact():
    limit = 171.79869184
    code, out, err = run_cli(
        [
            "what-if",
            "examples/llama2-70b-chat.yaml",
            "--max",
            "batch_size",
            "--while",
            f"memory.vram_required_gb <= {limit}",
        ]
    )
    assert code == 0, err
    best = int(out.splitlines()[0].rsplit(": ", 1)[1])
    from engine import Recommender

    text = (ROOT / "examples" / "llama2-70b-chat.yaml").read_text()
    with Recommender() as rec:
        fits = rec.recommend_text(text.replace("batch_size: 1", f"batch_size: {best}"))
        over = rec.recommend_text(text.replace("batch_size: 1", f"batch_size: {best + 1}"))
    assert fits["memory.vram_required_gb"] <= limit < over["memory.vram_required_gb"]


def test_record_verify_same_changed_and_tampered(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    records = tmp_path / "records"
    code, out, err = run_cli(["recommend", "examples/llama2-70b-chat.yaml", "--record", str(records)])
    assert code == 0, err
    (rec_path,) = records.glob("*.json")
    rec = json.loads(rec_path.read_text())
    assert rec["created"] == "2026-01-01T00:00:00Z"
    assert rec["workload"]["text"] == (ROOT / "examples" / "llama2-70b-chat.yaml").read_text()
    assert {"sha256", "rules", "overlays"} <= set(rec["rulebase"]) and rec["firings"] and rec["conclusions"]
    assert "precision" not in rec["defaults"] and "attention" in rec["defaults"]

    code, out, err = run_cli(["audit", "verify", str(rec_path)])
    assert code == 0 and out.startswith("same decision"), out + err

    # edit one threshold in a copy of the rulebase: the SME RAM tier
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    tier = next(rules.rglob("ram-sme-tier.yaml"))
    text = tier.read_text()
    assert ": 128" in text
    tier.write_text(text.replace(": 128", ": 512"))
    code, out, err = run_cli(["audit", "verify", str(rec_path), "--rules", str(rules), "--format", "json"])
    assert code == 1, out + err
    report = json.loads(out)
    assert report["rules_edited"] == ["ram-sme-tier"] and report["responsible"] == ["ram-sme-tier"]
    ram = next(c for c in report["changes"] if c["attribute"] == "ram.system_gb")
    assert ram["new"] > ram["old"] and ram["unit"] == "GB"

    # one byte changed anywhere: tampered
    raw = rec_path.read_bytes()
    i = raw.index(b'"gpu.count": ') + len(b'"gpu.count": ')
    rec_path.write_bytes(raw[:i] + bytes([raw[i] ^ 1]) + raw[i + 1 :])
    code, out, err = run_cli(["audit", "verify", str(rec_path)])
    assert code == 2 and "changed after it was written" in err


def test_rulebase_diff_names_the_responsible_rule(tmp_path):
    rules = tmp_path / "rules-b"
    shutil.copytree(ROOT / "rules", rules)
    tier = next(rules.rglob("ram-sme-tier.yaml"))
    tier.write_text(tier.read_text().replace(": 128", ": 512"))
    code, out, err = run_cli(
        [
            "diff",
            "--rules-a",
            str(ROOT / "rules"),
            "--rules-b",
            str(rules),
            "examples/llama2-70b-chat.yaml",
            "examples/gpt2-finetune-personal.yaml",
            "--format",
            "json",
        ]
    )
    assert code == 1, err
    doc = json.loads(out)
    assert doc["rules_changed"] == ["ram-sme-tier"]
    llama, gpt2 = doc["workloads"]
    assert llama["responsible"] == ["ram-sme-tier"]
    assert "ram.system_gb" in [c["attribute"] for c in llama["changes"]]
    assert gpt2["changes"] == []


def test_one_text_form_of_a_change_for_what_if_diff_and_verify():
    from engine.explain.diff import Change, change_lines

    assert change_lines(Change("cost.total", 29566, 246067, "CNY", "cost-total", "USD")) == [
        "cost.total: 29,566 USD -> 246,067 CNY  (cost-total)"
    ]
    # a record: only the fields that changed, in the new value's order
    old = {"gpu": "a", "count": 4, "note": ""}
    new = {"gpu": "a", "count": 2, "note": "used"}
    assert change_lines({"attribute": "sel", "old": old, "new": new, "unit": None, "rule": None}) == [
        "sel: count 4 -> 2, note (none) -> used"
    ]
    # a list: what was removed and what was added; a value that appears is old (none)
    assert change_lines(Change("warnings", ["x", "y"], ["y", "z"])) == [
        "warnings: 1 removed, 1 added",
        "  - x",
        "  + z",
    ]
    assert change_lines(Change("warnings", ["x", "y"], ["y", "x"])) == ["warnings: the same members in another order"]
    assert change_lines(Change("ram.system_gb", None, 256, "GB")) == ["ram.system_gb: (none) -> 256 GB"]
