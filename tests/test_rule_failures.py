"""A rule that fails while it runs: a bug in gpusizer (exit 70) when the shipped rules fail on the shipped
catalogs, the user's input (exit 2) when the rule or the catalog value that broke it is their own overlay."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import run_cli
from engine import GpusizerError, Recommender, RuleBug

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = """name: fails
task: inference
model: {name: qwen2.5-7b}
precision: bf16
serving: {engine: vllm, concurrent_requests: 8, prompt_tokens: 1000, output_tokens: 200}
gpu: {model: h100-sxm-80gb, count: 4}
"""
BROKEN = """id: serving-broken-example
summary: A rule that divides by a catalog field the card does not give.
when:
  - serving.plan: {exists: true}
  - item: gpu
    as: g
    where:
      id: {ref: serving.plan.gpu}
then:
  warnings: "{1 / g.fp64_tflops_missing}"
source:
  - doc: tests/test_rule_failures.py
"""


@pytest.fixture
def workload(tmp_path: Path) -> Path:
    w = tmp_path / "w.yaml"
    w.write_text(WORKLOAD)
    return w


def test_a_value_in_the_users_knowledge_overlay_is_their_input_error(tmp_path: Path) -> None:
    """An overlay that gives the L40S NVLink but no NVLink bandwidth once broke the shipped serving plan on two of
    them; the catalog now declares that NVLink needs its bandwidth (required_when), so loading refuses the overlay:
    exit 2, naming the overlay's file, the item and the missing field, never a bug in gpusizer."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "gpus.yaml").write_text("catalog: gpu\nitems:\n  - id: l40s-48gb\n    nvlink: true\n")
    two = tmp_path / "two.yaml"
    two.write_text(WORKLOAD.replace("{model: h100-sxm-80gb, count: 4}", "{model: l40s-48gb, count: 2}"))
    code, _, err = run_cli(["recommend", str(two), "--knowledge", str(site)])
    assert code == 2, err
    assert "site/gpus.yaml:3" in err and "l40s-48gb" in err and "nvlink_bandwidth_gbs" in err
    assert "a bug in gpusizer" not in err
    with pytest.raises(GpusizerError) as exc:
        with Recommender(knowledge=[ROOT / "knowledge", site]) as r:
            r.recommend(two)
    assert not isinstance(exc.value, RuleBug)


def test_a_broken_rule_of_the_users_rules_overlay_is_their_input_error(tmp_path: Path, workload: Path) -> None:
    site = tmp_path / "site-rules"
    site.mkdir()
    (site / "serving-broken-example.yaml").write_text(BROKEN.replace("g.fp64_tflops_missing", "(g.price - g.price)"))
    code, _, err = run_cli(["recommend", str(workload), "--rules", str(site)])
    assert code == 2, err
    assert "serving-broken-example" in err and "a bug in gpusizer" not in err


def test_a_shipped_rule_failing_on_the_shipped_catalogs_is_a_bug_in_gpusizer(tmp_path: Path, workload: Path) -> None:
    """The same rule among the rules gpusizer is run with (not laid over them): exit 70, the rule named."""
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules, ignore=shutil.ignore_patterns("*.test.yaml"))
    (rules / "serving" / "serving-broken-example.yaml").write_text(
        BROKEN.replace("g.fp64_tflops_missing", "(g.price - g.price)")
    )
    with Recommender(rules=[rules]) as r, pytest.raises(RuleBug) as exc:
        r.recommend(workload)
    assert exc.value.exit_code == 70
    assert "serving-broken-example" in str(exc.value) and "a bug in gpusizer" in str(exc.value)
