"""The rule-authoring toolkit: validate, test with coverage, rules list/show, new rule, schema, docs."""

import functools
import json
import re
import shutil

import pytest

from corpus import ROOT, lint_cases, run_cli

LINT = list(lint_cases())


def test_shipped_rulebase_is_clean():
    code, out, err = run_cli(["validate"])
    assert code == 0, out + err
    assert out.strip().splitlines()[-1] == "0 error(s), 0 warning(s)", out


@pytest.mark.parametrize("name,argv,expected", LINT, ids=[c[0] for c in LINT])
def test_lint_finding(name, argv, expected):
    code, out, err = run_cli(argv)
    assert "Traceback" not in out + err
    assert f"exit {code}\n{out}{err}" == expected.read_text(encoding="utf-8")
    assert code == (1 if " error[" in out else 0)


def test_lint_corpus_covers_every_finding_kind():
    """Read from the expected reports, which test_lint_finding holds each case's output to (a finding is
    written ``error[code]`` or ``warning[code]``), rather than running the corpus a second time."""
    codes = set()
    for _, _, expected in LINT:
        codes |= set(re.findall(r"^[^\n]*?: (?:error|warning)\[([a-z-]+)\]", expected.read_text(), re.M))
    assert {
        "never-fires",
        "unknown-item",
        "unwritten-attribute",
        "unused-attribute",
        "prefer-conflict",
        "unsourced-number",
        "split-cases",
        "text-glue",
        "tests",
        "load",
        "absent-field",
        "long-line",
    } <= codes


@pytest.mark.parametrize(
    "source,glued",
    [
        ("'KV cache: ' + text(n) + ' requests'", True),
        ("text(n) + unit", True),
        ("name + ' x'", True),
        ("(['a'] if x else []) + ['b']", False),  # lists
        ("n + 1", False),
        ("text(n + 1)", False),
        ("KV cache: {n} requests", False),  # a template
        ("{'many: ' + text(n) if n > 1 else 'one'}", True),  # glue inside a placeholder
    ],
)
def test_text_glue_is_a_plus_with_text_on_one_side(source, glued):
    from engine.authoring.lint import _glued
    from engine.lang.expr import parse, parse_template

    value = parse_template(source) if "{" in source else parse(source)
    assert bool(list(_glued(value))) is glued


def test_validate_json_and_workload_files():
    code, out, err = run_cli(["validate", "tests/bad/workloads/unknown-key.yaml", "--format", "json"])
    assert code == 1
    (finding,) = [f for f in json.loads(out) if f["code"] == "workload"]
    assert finding["line"] == 4 and finding["message"].startswith("unknown key 'batch_sise'")


def test_validate_unreadable_input_is_exit_2():
    code, out, err = run_cli(["validate", "no/such/dir"])
    assert code == 2 and "no such file or directory" in err


@functools.cache
def _full_test_run() -> tuple[int, str, str]:
    """One run of every rule case and the shipped examples' expected conclusions, with coverage (each such
    run plays all 900-odd rule cases, some 10 s): the coverage and the examples' tests read it."""
    return run_cli(["test", "--coverage", "--min-coverage", "100", "--workloads", "examples"])


def test_rule_tests_reach_full_coverage():
    code, out, err = _full_test_run()
    assert code == 0, out + err
    assert "rule coverage: 100.0%" in out
    assert "never fired: none" in out and "never stayed silent: none" in out
    last = out.strip().splitlines()[-1]
    assert last.endswith(" passed, 0 failed")


def test_coverage_threshold_fails_the_run(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    test = next(rules.rglob("weights-memory.test.yaml"))
    # the silent case now gives what the rule needs, so it fires: the case fails and coverage drops
    test.write_text(
        test.read_text().replace(
            "given: {model.params: 7e9}", "given: {model.params: 7e9, memory.weight_bytes_per_param: 2}"
        )
    )
    # the weights-memory cases alone (-k): coverage is then over that rule
    code, out, err = run_cli(["test", str(rules), "-k", "weights-memory::", "--coverage", "--min-coverage", "100"])
    assert code == 1, out + err
    assert "rule coverage: 0.0% of 1 rules" in out
    assert "FAIL weights-memory::silent-without-bytes-per-param" in out
    assert "never stayed silent: weights-memory" in out
    assert "is below --min-coverage 100%" in out


def test_workload_cases(tmp_path):
    (tmp_path / "expected").mkdir()
    shutil.copy(ROOT / "examples" / "gpt2-finetune-personal.yaml", tmp_path)
    (tmp_path / "expected" / "gpt2-finetune-personal.yaml").write_text("expect: {task: fine-tuning, precision: fp32}\n")
    # -k workload:: runs the workload cases alone (the rule cases have their own tests)
    code, out, err = run_cli(["test", "--workloads", str(tmp_path), "-k", "workload::"])
    assert code == 0, out + err
    assert out.strip().splitlines()[-1] == "1 passed, 0 failed"
    (tmp_path / "expected" / "gpt2-finetune-personal.yaml").write_text("expect: {precision: bf16}\n")
    code, out, err = run_cli(["test", "--workloads", str(tmp_path), "-k", "workload::"])
    assert code == 1 and "precision: expected 'bf16', got 'fp32'" in out


def test_k_selects_cases_by_id_and_coverage_follows_it(tmp_path):
    """``gpusizer test -k TEXT``: the cases whose id holds TEXT (any of several), coverage over their rules."""
    code, out, err = run_cli(["test", "-k", "WEIGHTS-memory::", "-k", "headroom-upgrade::", "--coverage"])
    assert code == 0, out + err
    assert "rule coverage: 100.0% of 2 rules both fired and stayed silent" in out
    passed = int(out.strip().splitlines()[-1].split()[0])
    from engine.authoring.cases import load_cases
    from engine.plan.rulebase import load_rulebase

    ids = [c.id for c in load_cases(load_rulebase())]
    assert passed == sum(1 for i in ids if i.startswith(("weights-memory::", "headroom-upgrade::"))) > 2
    code, out, err = run_cli(["test", "-k", "no-such-case"])
    assert code == 1 and "no case id contains 'no-such-case'" in out


def test_rules_list_and_show():
    code, out, err = run_cli(["rules", "list", "--format", "json"])
    assert code == 0
    ids = [r["id"] for r in json.loads(out)]
    assert "weights-memory" in ids
    code, out, err = run_cli(["rules", "show", "weights-memory"])
    assert code == 0
    assert "模型参数内存" in out and "Feeds: " in out and "llama-70b-fp16-is-140-gb" in out
    code, out, err = run_cli(["rules", "show", "weights-memroy"])
    assert code == 2 and "did you mean 'weights-memory'" in err


def test_new_rule_scaffold_validates_and_passes(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "_overlay.yaml").write_text("name: site\n")
    code, out, err = run_cli(["new", "rule", "ram/ram-site-check", "--rules", str(site)])
    assert code == 0, err
    assert (site / "ram" / "ram-site-check.yaml").is_file() and (site / "ram" / "ram-site-check.test.yaml").is_file()
    code, out, err = run_cli(["validate", str(site), "--format", "json"])
    assert code == 0, out
    assert [f for f in json.loads(out) if f["file"].startswith("site/")] == []
    code, out, err = run_cli(["test", str(site), "-k", "ram-site-check::"])
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "2 passed, 0 failed"
    code, out, err = run_cli(["new", "rule", "ram/ram-site-check", "--rules", str(site)])
    assert code == 2 and "already exists" in err


@pytest.mark.parametrize("kind", ["rule", "rule-test", "attributes", "knowledge", "overlay", "workload"])
def test_schema_export_is_valid_json_schema(kind):
    import jsonschema

    code, out, err = run_cli(["schema", kind])
    assert code == 0
    jsonschema.validators.validator_for(json.loads(out)).check_schema(json.loads(out))


def test_generated_rule_docs_are_up_to_date():
    code, out, err = run_cli(["docs"])
    assert code == 0, err
    assert out == (ROOT / "docs" / "rules.md").read_text(encoding="utf-8"), (
        "docs/rules.md is stale: run python tests/update_golden.py"
    )


def test_pre_commit_hooks_run_real_commands():
    """Each hook's entry is a gpusizer command line that passes on the shipped rulebase."""
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"gpusizer-validate", "gpusizer-test"}
    for h in hooks:
        program, *argv = h["entry"].split()
        assert program == "gpusizer"
        code, out, err = run_cli(argv)
        assert code == 0, (h["id"], out + err)


def test_shipped_examples_keep_their_expected_conclusions():
    from corpus import EXAMPLES

    code, out, err = _full_test_run()
    assert code == 0, out + err
    expected = sorted((ROOT / "examples" / "expected").glob("*.yaml"))
    assert [p.name for p in expected] == [p.name for p in EXAMPLES]
