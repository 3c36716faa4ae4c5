"""The attack corpus (tests/attacks.py): every hostile input gets its exact exit code and message,
in a subprocess of its own, so that a crash or a hang fails its case instead of the test run."""

import os
import re

import pytest
from attacks import CASES, EXAMPLE, EXPECTED, Case, expectation, readonly_dir, rules, run

from corpus import ROOT


def test_the_corpus_covers_every_kind_of_input():
    kinds = {c.kind for c in CASES}
    assert kinds == {"workload", "rules", "knowledge", "record", "output"}
    assert len(CASES) >= 80
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_attack(case: Case, tmp_path):
    argv = case.build(tmp_path)
    outcome = run(argv, tmp_path, case.env, case.stdout, case.append)
    assert outcome.code != "hang", f"{case.name} hangs"
    assert not str(outcome.code).startswith("crash"), f"{case.name}: {outcome.code}\n{outcome.err}"
    assert outcome.code in (0, 1, 2, 73), f"{case.name} exits {outcome.code}:\n{outcome.err}"
    assert "Traceback" not in outcome.err
    assert expectation(case, outcome, tmp_path) == (EXPECTED / f"{case.name}.txt").read_text(encoding="utf-8")


# cases whose ending depends on the process: its environment, limits, standard output as a file
# opened by the shell (truncated, appended to, /dev/full: the interpreter's own flush at exit)
FRESH = [
    "standard-output-full",
    "output-to-standard-output-appended-by-the-shell",
    "bad-limit-variable",
    "name-of-17-mib-with-raised-limits",
    "hf-cache-good",
    "billion-laughs",
    "record-intact-signed",
]


@pytest.mark.parametrize("name", FRESH)
def test_a_forked_case_ends_as_in_a_fresh_interpreter(name: str, tmp_path, monkeypatch):
    """The runner forks each case from a process with the rulebase loaded (tests/attack_zygote.py);
    these cases end byte for byte as they do in a fresh ``python -m engine``."""
    case = next(c for c in CASES if c.name == name)
    seen = []
    for fresh in ("0", "1"):
        monkeypatch.setenv("GPUSIZER_ATTACKS_FRESH", fresh)
        tmp = tmp_path / f"fresh-{fresh}"
        tmp.mkdir()
        outcome = run(case.build(tmp), tmp, case.env, case.stdout, case.append)
        seen.append((outcome.code, outcome.out, expectation(case, outcome, tmp)))
    assert seen[0] == seen[1]


def test_cases_run_from_several_threads_each_get_their_own_ending(tmp_path):
    """tests/update_golden.py runs the corpus on a pool of threads: each thread has a runner of its own."""
    from concurrent.futures import ThreadPoolExecutor

    cases = [c for c in CASES if c.kind in ("workload", "output")][:12]

    def one(case: Case) -> tuple[str, str]:
        tmp = tmp_path / case.name
        tmp.mkdir()
        outcome = run(case.build(tmp), tmp, case.env, case.stdout, case.append)
        return case.name, expectation(case, outcome, tmp)

    with ThreadPoolExecutor(max_workers=4) as pool:
        for name, text in pool.map(one, cases):
            assert text == (EXPECTED / f"{name}.txt").read_text(encoding="utf-8"), name


def test_a_case_past_its_time_is_a_hang_and_the_runner_goes_on(tmp_path):
    from attacks import _Zygote

    env = {k: v for k, v in os.environ.items() if k != "GPUSIZER_DEBUG"}
    req = {"argv": ["recommend", EXAMPLE], "env": env, "stdout": None, "append": False}
    assert _Zygote.run({**req, "timeout": 0}).code == "hang"
    done = _Zygote.run({**req, "timeout": 120})
    assert done.code == 0 and done.out.startswith("gpusizer: llama2-70b-chat")


def test_every_expectation_has_its_case():
    assert sorted(p.stem for p in EXPECTED.glob("*.txt")) == sorted(c.name for c in CASES)


def test_a_failing_record_still_delivers_the_report(tmp_path):
    """The report comes out whole even though the record cannot be written."""
    (tmp_path / "file").write_text("x")
    outcome = run(["recommend", EXAMPLE, "--record", str(tmp_path / "file" / "records")], tmp_path)
    plain = run(["recommend", EXAMPLE], tmp_path)
    assert outcome.code == 73 and plain.code == 0
    assert outcome.out == plain.out and outcome.out.startswith("gpusizer: llama2-70b-chat")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="permissions do not bind root")
def test_a_read_only_record_folder_is_exit_73_and_the_report_is_delivered(tmp_path):
    readonly_dir(tmp_path)
    outcome = run(["recommend", EXAMPLE, "--record", str(tmp_path / "ro")], tmp_path)
    assert outcome.code == 73 and "Permission denied" in outcome.err
    assert outcome.out.startswith("gpusizer: llama2-70b-chat")


def test_a_record_folder_that_refuses_writes_is_exit_73_and_the_report_is_delivered(tmp_path, monkeypatch):
    """The read-only case for every user, root included (whom file modes do not bind): the record's
    temporary file cannot be created, as in a read-only folder."""
    import errno
    import tempfile

    from corpus import run_cli

    records = tmp_path / "ro"
    real = tempfile.mkstemp

    def refuse(*args, dir=None, **kwargs):
        if dir is not None and os.fspath(dir).startswith(str(records)):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    code, out, err = run_cli(["recommend", EXAMPLE, "--record", str(records)])
    plain_code, plain, _ = run_cli(["recommend", EXAMPLE])
    assert (code, plain_code) == (73, 0)
    assert f"{records}/" in err and "Permission denied" in err and "is not writable by you" in err
    assert "Traceback" not in err and out == plain and out.startswith("gpusizer: llama2-70b-chat")
    assert list(records.iterdir()) == []  # no half record


def test_reports_link_only_web_and_relative_urls(tmp_path):
    urls = {
        "bad-js": "javascript:alert(1)",
        "bad-data": "data:text/html,<script>alert(1)</script>",
        "bad-tab": "java\tscript:alert(1)",
        "bad-host": "//evil.example/x",
        "good-web": "https://example.org/datasheet.pdf",
        "good-relative": "docs/site.html",
    }
    overlay = rules(  # one attribute each, so that every source is the binding one of its conclusion
        *[
            (
                rid,
                f"when:\n  - task: inference\nthen:\n  site.{rid.replace('-', '_')}: 1\n"
                f"source: {{doc: {rid}, url: {url!r}}}\n",
            )
            for rid, url in urls.items()
        ],
        attributes="attributes:\n"
        + "".join(
            f"  site.{rid.replace('-', '_')}:\n    type: number\n    description: A site figure.\n" for rid in urls
        ),
    )
    argv = overlay(tmp_path)
    html = run([*argv, "--format", "html"], tmp_path)
    assert html.code == 0, html.err
    links = re.findall(r'href="([^"]*)"', html.out)
    assert "https://example.org/datasheet.pdf" in links and "docs/site.html" in links
    assert not [u for u in links if u.startswith(("javascript", "data", "java", "//"))]
    assert "not a web link: javascript:alert(1)" in html.out
    assert "&lt;script&gt;" in html.out and "<script>" not in html.out


def test_markdown_escapes_the_workload_text(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(
        "name: '<img src=x onerror=alert(1)> [click](javascript:alert(1)) | `code` *bold*'\n"
        "task: inference\nmodel: {name: gpt2}\n"
    )
    md = run(["recommend", str(path), "--format", "markdown"], tmp_path)
    assert md.code == 0, md.err
    title = md.out.splitlines()[0]
    assert title == (r"# gpusizer: \<img src=x onerror=alert(1)\> \[click\](javascript:alert(1)) \| \`code\` \*bold\*")
    explain = run(["explain", str(path), "gpu.model", "--format", "markdown"], tmp_path)
    assert explain.out.splitlines()[0].endswith(
        r"\<img src=x onerror=alert(1)\> \[click\](javascript:alert(1)) \| \`code\` \*bold\*"
    )


def test_the_python_api_refuses_non_finite_numbers_in_a_mapping(recommender):
    from engine import InputError

    for bad in (float("nan"), float("inf")):
        with pytest.raises(InputError, match="not a finite number"):
            recommender.recommend(
                {"name": "x", "task": "inference", "model": {"name": "gpt2"}, "budget": {"amount": bad}}
            )


def test_the_corpus_runs_from_the_repository_root():
    assert (ROOT / EXAMPLE).is_file()
