"""gpusizer sweep: the specification and its errors, the cases, the tables, resuming, the backends,
crashes and hangs, recommend --summary, and the conclusions-only path against the full one."""

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from corpus import EXAMPLES, ROOT, run_cli

SERVING = ROOT / "examples" / "serving-qwen2.5-7b-32-users.yaml"

SMALL = """\
name: small
base: {base}
vary:
  model.name: [qwen2.5-7b, llama-3.1-8b]
  serving.concurrent_requests: [1, 64]
  market: [global, cn]
"""


def _spec(tmp_path, text, name="spec.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _small(tmp_path):
    shutil.copy(SERVING, tmp_path / "base.yaml")
    return _spec(tmp_path, SMALL.format(base="base.yaml"))


def _sweep(*argv):
    return run_cli(["sweep", *map(str, argv)])


def _csv(path):
    return list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"))))


# -- the specification --------------------------------------------------------------------------


def test_the_shipped_spec_checks_and_has_90_cases(recommender):
    from engine.sweep import spec as S

    spec = S.load_spec(ROOT / "examples" / "sweeps" / "open-models.yaml", recommender)
    cases = S.cases(spec, recommender.rulebase.sha256, ("gpu.model",))
    assert len(cases) == 5 * 3 * 3 * 2
    assert [c.id for c in cases[:2]] == ["c0001", "c0002"]
    assert len({c.key for c in cases}) == len(cases)


def test_the_shipped_vision_sweep_has_a_speed_and_a_front_for_every_case(tmp_path):
    """examples/sweeps/vision-models.yaml: every case gets the images a second it gets and its days (the China
    market's 16-GPU cases get H20 nodes, which the catalog gives no fp32 rate), and each model's front is on that
    measure; gpu.count, varied, is the GPUs asked for beside those chosen."""
    out = tmp_path / "out"
    code, _, err = _sweep(ROOT / "examples" / "sweeps" / "vision-models.yaml", "-o", out, "--workers", "0")
    assert code == 0, err
    rows = _csv(out / "summary.csv")
    assert len(rows) == 3 * 4 * 2
    assert all(
        r["status"] == "ok" and float(r["perf.images_per_s"]) > 0 and float(r["perf.vision_train_days"]) > 0
        for r in rows
    ), [r for r in rows if not r.get("perf.images_per_s")]
    assert {r["gpu.model"] for r in rows if r["gpu.count (given)"] == "16" and r["market"] == "cn"} == {"h20-96gb"}
    assert all(r["gpu.count (given)"] == r["gpu.count"] for r in rows)
    front = _csv(out / "pareto.csv")
    assert {r["throughput_attribute"] for r in front} == {"perf.images_per_s"}
    assert {(r["model.name"], r["price.currency"]) for r in front} == {
        (m, c) for m in ("resnet-50", "convnext-tiny", "vit-b-16") for c in ("USD", "CNY")
    }


@pytest.mark.parametrize(
    "text, where, message",
    [
        ("vary:\n  precison: [bf16]\n", "spec.yaml:3:3", "'precison' is not a workload key"),
        ("vary:\n  model.name: [qwen2.5-7b, qwen-9000]\n", "spec.yaml:3:28", "unknown model 'qwen-9000'"),
        ("vary:\n  serving.concurrent_requests: [1, -5]\n", "spec.yaml:3:36", "must be >= 1, got -5"),
        ("vary:\n  precision: [bf16, fp99]\n", "spec.yaml:3:21", "fp99"),
        ("vary:\n  precision: bf16\n", "spec.yaml:3:14", "must be a list"),
        ("vary:\n  precision: [bf16]\nwhere: \"precison == 'x'\"\n", "spec.yaml:4:8", "did you mean 'precision'"),
        ('vary:\n  precision: [bf16]\nwhere: "precision =="\n', "spec.yaml:4:8", "where:"),
        ("vary:\n  precision: [bf16]\ncolumns: [gpu.modle]\n", "spec.yaml:4:11", "did you mean 'gpu.model'"),
        ("vary:\n  precision: [bf16]\ncases:\n  - {precision: int3}\n", "spec.yaml:5:5", "cases[0]"),
        ("vary:\n  precision: [bf16]\nextra: 1\n", "spec.yaml:4:1", "extra"),
    ],
)
def test_a_bad_spec_is_an_input_error_at_its_line_before_anything_runs(tmp_path, text, where, message):
    shutil.copy(SERVING, tmp_path / "base.yaml")
    spec = _spec(tmp_path, "base: base.yaml\n" + text)
    code, _, err = _sweep(spec, "-o", tmp_path / "out", "--workers", "0")
    assert code == 2, err
    assert f"{where}:" in err.replace(str(tmp_path) + "/", ""), err
    assert message in err
    assert "help:" in err
    assert not (tmp_path / "out").exists()


def test_a_spec_with_too_many_combinations_is_refused_before_any_is_made(tmp_path, monkeypatch):
    values = ", ".join(str(i) for i in range(1, 1001))
    spec = _spec(
        tmp_path,
        f"base: {{name: w}}\nvary:\n  batch_size: [{values}]\n  sequence_length: [{values}]\n  epochs: [{values}]\n",
    )
    code, _, err = _sweep(spec, "-o", tmp_path / "out")
    assert code == 2 and "1,000,000,000 combinations" in err and "GPUSIZER_MAX_CASES" in err
    monkeypatch.setenv("GPUSIZER_MAX_CASES", "lots")
    code, _, err = _sweep(spec, "-o", tmp_path / "out")
    assert code == 2 and "not a whole number" in err


def test_a_missing_base_file_names_where_it_looked(tmp_path):
    spec = _spec(tmp_path, "base: nowhere.yaml\nvary:\n  precision: [bf16]\n")
    code, _, err = _sweep(spec, "-o", tmp_path / "out")
    assert code == 2
    assert "spec.yaml:1:7" in err and "nowhere.yaml" in err


def test_a_spec_that_is_not_a_mapping_is_an_input_error(tmp_path):
    spec = _spec(tmp_path, "- 1\n- 2\n")
    code, _, err = _sweep(spec, "-o", tmp_path / "out")
    assert code == 2 and "must be a mapping" in err


def test_where_keeps_combinations_and_cases_are_added(recommender, tmp_path):
    from engine.sweep import spec as S

    base = {"name": "w", "task": "inference", "model": {"name": "qwen2.5-7b"}, "precision": "bf16"}
    text = (
        f"base: {json.dumps(base)}\n"
        "vary:\n  precision: [bf16, int8, awq-int4]\n  market: [global, cn]\n"
        "where: \"not (market == 'cn' and precision == 'int8')\"\n"
        "cases:\n  - {model.name: llama-3.1-8b, batch_size: 4}\n"
    )
    spec = S.load_spec(_spec(tmp_path, text), recommender)
    cases = S.cases(spec, "sha", ())
    assert len(cases) == 3 * 2 - 1 + 1
    assert ("precision", "int8") in cases[2].vary and ("market", "global") in cases[2].vary
    assert dict(cases[-1].vary) == {"model.name": "llama-3.1-8b", "batch_size": 4}
    assert spec.label_keys == ("precision", "market", "model.name", "batch_size")
    assert spec.workload(cases[-1])["model"] == {"name": "llama-3.1-8b"}


def test_a_case_key_follows_its_workload_the_rulebase_and_the_columns(recommender, tmp_path):
    from engine.sweep import spec as S

    spec = S.load_spec(_small(tmp_path), recommender)
    a = S.cases(spec, "sha-a", ("x",))
    assert [c.key for c in a] == [c.key for c in S.cases(spec, "sha-a", ("x",))]
    assert not {c.key for c in a} & {c.key for c in S.cases(spec, "sha-b", ("x",))}
    assert not {c.key for c in a} & {c.key for c in S.cases(spec, "sha-a", ("x", "y"))}


def test_the_schema_compiles_for_the_fast_check_and_is_printed():
    from engine.load.schema import engine_schema, fast_check

    assert fast_check(engine_schema("sweep")) is not None
    code, out, _ = run_cli(["schema", "sweep"])
    assert code == 0 and json.loads(out)["title"] == "gpusizer sweep specification"


# -- running and the tables ---------------------------------------------------------------------


def test_a_sweep_writes_its_four_files_and_reruns_nothing(tmp_path):
    spec = _small(tmp_path)
    out = tmp_path / "out"
    code, _, err = _sweep(spec, "-o", out, "--workers", "0")
    assert code == 0, err
    assert re.search(r"sweep: 8 case\(s\), 0 failed, 0 reused; ran 8 in [0-9.]+ s", err)
    rows = _csv(out / "summary.csv")
    assert [r["case"] for r in rows] == [f"c000{i}" for i in range(1, 9)]
    header = list(rows[0])
    assert header[:6] == ["case", "model.name", "serving.concurrent_requests", "market", "status", "gpu.model"]
    for col in ("gpu.count", "nodes", "memory.vram_required_gb", "cost.total", "price.currency"):
        assert col in header
    assert {r["status"] for r in rows} == {"ok"}
    assert {r["price.currency"] for r in rows} == {"USD", "CNY"}
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 8
    row = json.loads(lines[0])
    assert {"case", "vary", "status", "values", "units", "error", "seconds", "key"} <= set(row)
    html = (out / "summary.html").read_text()
    assert '<table id="summary">' in html and "vegaEmbed" in html
    before = (out / "summary.csv").read_bytes()
    code, _, err = _sweep(spec, "-o", out, "--workers", "0")
    assert code == 0 and "8 reused; ran 0" in err
    assert (out / "summary.csv").read_bytes() == before


def test_resuming_keeps_finished_cases_and_runs_only_new_or_changed_ones(tmp_path):
    spec = _small(tmp_path)
    out = tmp_path / "out"
    assert _sweep(spec, "-o", out, "--workers", "0")[0] == 0
    full = (out / "summary.csv").read_bytes()
    # a run stopped while writing: a torn last line, and a crashed case, both run again
    lines = (out / "results.jsonl").read_text().splitlines()
    crashed = json.loads(lines[1])
    crashed["status"] = "crashed"
    (out / "results.jsonl").write_text("\n".join([lines[0], json.dumps(crashed), *lines[2:6], lines[6][:40]]) + "\n")
    code, _, err = _sweep(spec, "-o", out, "--workers", "0")
    assert code == 0 and "5 reused; ran 3" in err, err
    assert (out / "summary.csv").read_bytes() == full
    assert len((out / "results.jsonl").read_text().splitlines()) == 8
    # one more value: the old cases are renumbered and kept, the new ones run
    spec.write_text(spec.read_text().replace("[1, 64]", "[1, 16, 64]"))
    code, _, err = _sweep(spec, "-o", out, "--workers", "0")
    assert code == 0 and "12 case(s), 0 failed, 8 reused; ran 4" in err, err


def test_every_worker_count_gives_the_same_summary_csv(tmp_path):
    """In process, and a pool of one and of two workers (Dask: the next test)."""
    spec = _small(tmp_path)
    runs = {"inline": ["--workers", "0"], "pool-1": ["--workers", "1"], "pool-2": ["--workers", "2"]}
    out = {}
    for name, argv in runs.items():
        code, _, err = _sweep(spec, "-o", tmp_path / name, *argv)
        assert code == 0, (name, err)
        out[name] = (tmp_path / name / "summary.csv").read_bytes()
        assert (tmp_path / name / "pareto.csv").read_bytes() == (tmp_path / "inline" / "pareto.csv").read_bytes()
    assert len(set(out.values())) == 1, list(out)


def test_both_rule_engine_backends_give_the_same_summary_csv(tmp_path, monkeypatch):
    """GPUSIZER_BACKEND=python, which the README offers for a large sweep (the faster backend), writes the
    summary durable-rules writes, byte for byte."""
    spec = _small(tmp_path)
    out = {}
    for backend in ("durable", "python"):
        monkeypatch.setenv("GPUSIZER_BACKEND", backend)
        code, _, err = _sweep(spec, "-o", tmp_path / backend, "--workers", "0")
        assert code == 0, (backend, err)
        out[backend] = (tmp_path / backend / "summary.csv").read_bytes()
    assert out["durable"] == out["python"] and out["python"].count(b"\n") > 4
    from engine.sweep import worker

    assert {rec.runner.backend.name for rec in worker._LOADED.values()} >= {"durable", "python"}


def test_dask_on_a_local_cluster_of_two_workers_gives_the_same_summary_csv(tmp_path):
    pytest.importorskip("distributed", reason="the dask extra is not installed (pip install -e '.[test,serve,dask]')")
    spec = _small(tmp_path)
    assert _sweep(spec, "-o", tmp_path / "a", "--workers", "0")[0] == 0
    code, _, err = _sweep(spec, "-o", tmp_path / "b", "--backend", "dask", "--workers", "2")
    assert code == 0, err
    assert "(dask)" in err
    for name in ("summary.csv", "pareto.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_without_dask_the_dask_backend_says_how_to_install_it(tmp_path, monkeypatch):
    import engine.sweep.execute as E

    monkeypatch.setattr(E, "dask_missing", lambda: "not here")
    code, _, err = _sweep(_small(tmp_path), "-o", tmp_path / "out", "--backend", "dask")
    assert code == 2 and "pip install 'gpusizer[dask]'" in err


def _tasks(recommender, tmp_path, n=None):
    from engine.sweep import spec as S
    from engine.sweep.table import table_config
    from engine.sweep.worker import Config, Task

    spec = S.load_spec(_small(tmp_path), recommender)
    fields = table_config().fields()
    cases = S.cases(spec, recommender.rulebase.sha256, fields)[:n]
    config = Config((), (), recommender.rulebase.sha256, fields)
    import yaml

    tasks = [Task(c.id, c.key, yaml.safe_dump(spec.workload(c)), spec.case_display(c)) for c in cases]
    return config, tasks


def test_a_case_that_crashes_its_worker_is_an_error_row_and_the_others_finish(recommender, tmp_path):
    from sweep_helpers import CRASH, crashing

    from engine.sweep.execute import run_local

    config, tasks = _tasks(recommender, tmp_path, 5)
    rows = {r["case"]: r for r in run_local(config, tasks, 2, total=len(tasks), timeout=60, fn=crashing)}
    assert sorted(rows) == [t.case for t in tasks], rows
    assert rows[CRASH]["status"] == "crashed", rows
    assert "SIGSEGV" in rows[CRASH]["error"], rows
    assert all(r["status"] == "ok" for c, r in rows.items() if c != CRASH), rows


def test_a_crash_is_named_when_the_pool_reaps_the_dead_process_first():
    # a broken pool's own thread joins its processes while the case's own wait joins them too: the wait that
    # loses the race finds no child, returns at once, and the exit code appears a moment later, set by the
    # other thread (a crash row once said "it ended abruptly" in a full parallel test run for this)
    import threading
    import time

    from engine.sweep.execute import _death

    class Reaped:
        exitcode = None

        def join(self, timeout=None):
            return None  # its child was reaped by the other thread: nothing to wait for

    dead = Reaped()
    threading.Timer(0.3, setattr, (dead, "exitcode", -11)).start()
    t = time.monotonic()
    assert _death([dead], patience=10) == "killed by SIGSEGV"
    assert time.monotonic() - t < 5
    assert _death([Reaped()], patience=0.2) == "it ended abruptly"  # never set: unnamed, after the patience


def test_a_case_that_hangs_is_stopped_at_the_timeout_and_the_others_finish(recommender, tmp_path):
    from sweep_helpers import HANG, hanging

    from engine.sweep.execute import run_local

    config, tasks = _tasks(recommender, tmp_path, 4)
    rows = {r["case"]: r for r in run_local(config, tasks, 2, total=len(tasks), timeout=5, fn=hanging)}
    assert sorted(rows) == [t.case for t in tasks], rows
    assert rows[HANG]["status"] == "timeout" and "longer than 5 s" in rows[HANG]["error"], rows
    assert all(r["status"] == "ok" for c, r in rows.items() if c != HANG), rows


@pytest.mark.slow  # a local cluster's start and a 5-second hang: about 16 s
def test_on_dask_a_case_that_hangs_is_stopped_at_the_timeout_and_the_others_finish(recommender, tmp_path):
    pytest.importorskip("distributed", reason="the dask extra is not installed (pip install -e '.[test,serve,dask]')")
    from sweep_helpers import HANG, hanging

    from engine.sweep.execute import run_dask

    config, tasks = _tasks(recommender, tmp_path, 4)
    rows = {r["case"]: r for r in run_dask(config, tasks, 2, total=len(tasks), scheduler=None, timeout=5, fn=hanging)}
    assert sorted(rows) == [t.case for t in tasks]
    assert rows[HANG]["status"] == "timeout" and "longer than 5 s" in rows[HANG]["error"]
    assert all(r["status"] == "ok" for c, r in rows.items() if c != HANG), rows


def test_an_invalid_combination_is_a_row_and_costs_the_others_nothing(tmp_path):
    # each value is valid beside the others' first values; 16 key/value heads and 8 heads are not
    base = {"name": "w", "task": "inference", "model": {"name": "llama-3.1-8b"}, "precision": "bf16"}
    text = f"base: {json.dumps(base)}\nvary:\n  model.kv_heads: [8, 16]\n  model.attention_heads: [32, 8]\n"
    spec = _spec(tmp_path, text)
    code, _, err = _sweep(spec, "-o", tmp_path / "out", "--workers", "0")
    assert code == 2, err
    rows = _csv(tmp_path / "out" / "summary.csv")
    assert [r["status"] for r in rows] == ["ok", "ok", "ok", "invalid"]
    assert "model.kv_heads = 16 is more than model.attention_heads = 8" in rows[3]["error"]
    assert "spec.yaml#c0004" in rows[3]["error"]


def test_cpu_count_follows_the_affinity():
    import os

    from engine.sweep.execute import cpu_count

    assert 1 <= cpu_count() <= (os.cpu_count() or 1)


# -- the front and the page ---------------------------------------------------------------------


def _row(case, cost, thr, model="m", currency="USD", status="ok"):
    return {
        "case": case,
        "status": status,
        "vary": {"k": case},
        "values": {
            "model.name": model,
            "price.currency": currency,
            "cost.total": cost,
            "perf.output_tokens_per_s": thr,
        },
    }


def test_the_front_keeps_the_cases_no_other_beats_on_both_cost_and_throughput():
    from engine.sweep.table import front, table_config

    config = table_config()
    rows = [
        _row("c1", 100, 10),
        _row("c2", 200, 30),
        _row("c3", 150, 5),  # beaten by c1
        _row("c4", 100, 8),  # same cost as c1, less throughput: beaten
        _row("c5", 300, 30),  # same throughput as c2, dearer: beaten
        _row("c6", 200, 30),  # equal to c2: kept with it
        _row("c7", 50, 1, currency="CNY"),  # another currency: its own group
        _row("c8", 10, 100, status="invalid"),  # failed cases never count
        _row("c9", 400, 50, model="other"),
    ]
    got = [(g, r["case"]) for g, r in front(config, rows)]
    t = "perf.output_tokens_per_s"
    assert got == [
        (("m", "CNY", t), "c7"),
        (("m", "USD", t), "c1"),
        (("m", "USD", t), "c2"),
        (("m", "USD", t), "c6"),
        (("other", "USD", t), "c9"),
    ]


def test_the_front_compares_cases_only_on_one_measure():
    from engine.sweep.table import front, table_config

    config = table_config()
    served = _row("s1", 100, 500)
    trained = _row("t1", 200, 50)  # dearer and fewer tokens/s, but training tokens: a front of its own
    trained["values"]["perf.train_tokens_per_s"] = trained["values"].pop("perf.output_tokens_per_s")
    images = _row("v1", 300, 9000)
    images["values"]["perf.images_per_s"] = images["values"].pop("perf.output_tokens_per_s")
    got = [(g, r["case"]) for g, r in front(config, [served, trained, images])]
    assert got == [
        (("m", "USD", "perf.images_per_s"), "v1"),
        (("m", "USD", "perf.output_tokens_per_s"), "s1"),
        (("m", "USD", "perf.train_tokens_per_s"), "t1"),
    ]


def test_an_interrupted_sweep_says_what_it_kept_and_the_next_run_goes_on(tmp_path, monkeypatch):
    from engine.sweep import run as R

    real = R.run_cases

    def interrupted(sweep, worker, todo, stream, **kw):
        for i, row in enumerate(real(sweep, worker, todo, stream, **kw)):
            yield row
            if i == 1:
                raise KeyboardInterrupt  # Ctrl-C after the second case's row

    monkeypatch.setattr(R, "run_cases", interrupted)
    out = tmp_path / "out"
    code, _, err = _sweep(str(_small(tmp_path)), "-o", str(out), "--workers", "0")
    assert code == 130, err
    assert re.search(
        r"sweep: interrupted; 2 of \d+ case\(s\) have their rows in .*results\.jsonl \(2 from this run\); "
        r"run the same command again",
        err,
    ), err
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    assert not (out / "summary.csv").exists()
    monkeypatch.setattr(R, "run_cases", real)
    code, _, err = _sweep(str(_small(tmp_path)), "-o", str(out), "--workers", "0")
    assert code == 0 and " 2 reused" in err, err


def test_the_tables_name_each_column_once_where_a_varied_key_is_also_a_column_or_group():
    import csv
    import io

    from engine.sweep.table import pareto_csv, summary_csv, table_config

    config = table_config()
    rows = [_row("c1", 100, 10), _row("c2", 200, 30), _row("c3", 150, 5, model="other")]
    for r in rows:
        r["vary"] = {"model.name": r["values"]["model.name"], "gpu.count": "auto"}
        r["values"]["gpu.count"] = 2
    columns = ["gpu.model", "gpu.count", "model.name", "cost.total", "perf.output_tokens_per_s"]
    labels = ["model.name", "gpu.count"]

    def table(text):
        out = list(csv.reader(io.StringIO(text)))
        assert len(out[0]) == len(set(out[0])), out[0]
        return out

    # model.name sets the attribute model.name: shown once, as the group; gpu.count sets the GPUs asked for
    # (request.gpu_count), beside the GPUs chosen: both, the one given named so
    pareto = table(pareto_csv(config, rows, labels, columns, same=["model.name"]))
    assert pareto[0][:5] == ["model.name", "price.currency", "case", "gpu.count (given)", "cost.total"]
    assert "gpu.count" in pareto[0]
    assert [r[:4] for r in pareto[1:]] == [
        ["m", "USD", "c1", "auto"],
        ["m", "USD", "c2", "auto"],
        ["other", "USD", "c3", "auto"],
    ]
    summary = table(summary_csv(rows, labels, columns, same=["model.name"]))
    assert summary[0] == [
        "case",
        "model.name",
        "gpu.count (given)",
        "status",
        "gpu.count",
        "cost.total",
        "perf.output_tokens_per_s",
        "error",
    ]
    assert summary[1] == ["c1", "m", "auto", "ok", "2", "100", "10", ""]
    # without the rulebase's word that a key is its own attribute, a name both have is kept twice, renamed
    assert table(summary_csv(rows, labels, columns))[0][1:3] == ["model.name (given)", "gpu.count (given)"]


def test_a_sweep_knows_which_varied_keys_are_their_own_attribute(recommender, tmp_path):
    from engine.sweep import spec as S
    from engine.sweep.run import prepare
    from engine.sweep.table import table_config

    spec = S.load_spec(ROOT / "examples" / "sweeps" / "open-models.yaml", recommender)
    assert prepare(spec, recommender.rulebase, table_config()).same == (
        "model.name",
        "precision",
        "serving.concurrent_requests",
        "market",
    )
    text = "name: t\nbase: {name: t, task: inference, model: {name: llama-3.1-8b}}\nvary:\n  gpu.count: [auto, 2]\n"
    pinned = prepare(S.load_spec(_spec(tmp_path, text), recommender), recommender.rulebase, table_config())
    assert pinned.same == ()  # gpu.count sets request.gpu_count: the GPUs chosen are another column


def test_cells_are_exact_and_the_same_on_every_run():
    from engine.sweep.table import cell

    assert cell(0.1 + 0.2) == "0.30000000000000004"
    assert cell(2.0) == "2" and cell(True) == "true" and cell(None) == ""
    assert cell(["a", 1]) == "a;1" and cell({"b": 1, "a": 2}) == '{"a":2,"b":1}'


def test_the_page_is_self_contained_and_keeps_its_plot_data(tmp_path):
    from engine.sweep.table import plot_specs, summary_html, table_config

    config = table_config()
    rows = [_row(f"c{i}", 100 * i, 10 * i) for i in range(1, 4)]
    for r in rows:
        r["values"].update(
            {
                "sequence_length": 2048 * int(r["case"][1:]),
                "memory.vram_required_gb": 20.0,
                "precision": "bf16",
                "gpu.count": 1,
                "serving.concurrent_requests": 1,
            }
        )
    rows.append(_row("c9", 1, 1, model="</script><script>alert(1)</script>"))
    html = summary_html(config, rows, ["k"], config.columns, title="t & <b>")
    outside = re.sub(r"<script[^>]*>.*?</script>", "", html, flags=re.S)
    assert "<script" not in outside and not re.search(r"(src|href)=", outside), "nothing is loaded from elsewhere"
    assert "http" not in outside
    assert "<script>alert(1)" not in html and "t &amp; &lt;b&gt;" in html
    specs = plot_specs(config, rows)
    pareto = specs[0].get("spec", specs[0])
    assert pareto["layer"][0]["mark"]["type"] == "point" and specs[0]["facet"]["title"] == "price.currency"
    assert {p["case"] for p in specs[0]["data"]["values"] if p["front"]} == {"c1", "c2", "c3", "c9"}
    assert html.count('type="application/json"') == len(specs)


# -- recommend --summary and progress -----------------------------------------------------------


def test_recommend_summary_is_the_same_table_for_a_list_of_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntask: inference\nmodel: {name: llama-9}\n")
    csv_path = tmp_path / "s.csv"
    files = ["examples/llama2-70b-chat.yaml", str(bad), "examples/gpt2-finetune-personal.yaml"]
    code, out, err = run_cli(["recommend", *files, "--summary", str(csv_path)])
    assert code == 2
    assert out.count("gpusizer: ") == 2
    rows = _csv(csv_path)
    assert [r["file"] for r in rows] == files
    assert [r["status"] for r in rows] == ["ok", "invalid", "ok"]
    assert rows[0]["gpu.model"] and rows[0]["cost.total"]
    assert "llama-9" in rows[1]["error"]


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_the_progress_bar_draws_on_a_terminal_only():
    from engine.sweep.progress import Progress, duration

    quiet = io.StringIO()
    p = Progress(10, quiet)
    p.update(5)
    assert quiet.getvalue() == ""
    tty = _Tty()
    p = Progress(4, tty)
    p.update(4, failed=1)
    assert re.search(r"\[#+\] 4/4 100% [0-9.]+ cases/s, 0s left, 1 failed", tty.getvalue())
    assert duration(3725) == "1h02m" and duration(65) == "1m05s" and duration(4) == "4s"


# -- the conclusions-only path ------------------------------------------------------------------


def _generated(n, stride=1):
    """n workloads over the product below; a stride above 1 spreads a few over every model."""
    import itertools

    models = [
        "llama-2-7b",
        "llama-3-70b",
        "mixtral-8x7b",
        "qwen2.5-7b",
        "gpt2",
        "bert-base-uncased",
        "qwen3-30b-a3b",
        "gemma-3-27b",
        "gpt-oss-20b",
    ]
    combos = itertools.product(
        models,
        ["inference", "training", "fine-tuning"],
        ["fp16", "bf16", "int8", "fp32"],
        [1, 8],
        [512, 4096],
        ["global", "cn"],
    )
    combos = list(combos)
    out = []
    for i in range(n):
        model, task, prec, batch, seq, market = combos[(i * stride) % len(combos)]
        w = {
            "name": f"g{i}",
            "task": task,
            "model": {"name": model},
            "precision": prec,
            "batch_size": batch,
            "sequence_length": seq,
            "market": market,
            "dataset": {"size_gb": (i % 4) * 50},
        }
        if task == "inference" and i % 3 == 0:
            w["serving"] = {
                "concurrent_requests": [1, 16, 128][i % 3 * 0 + i % 2],
                "prompt_tokens": 1000,
                "output_tokens": 200,
            }
        out.append(w)
    return out


@pytest.mark.parametrize(
    ("generated", "stride", "least"), [(36, 24, 45), pytest.param(300, 1, 250, marks=pytest.mark.slow)]
)
def test_the_conclusions_only_path_gives_the_full_paths_conclusions(recommender, generated, stride, least):
    """Every example and 36 generated workloads over every model (the first 300 of the product in the slow
    tier): the values a sweep records are the report's."""
    from engine.report.document import document
    from engine.sweep.table import table_config
    from engine.sweep.worker import failed, values_row

    fields = table_config().fields()
    sources = [*EXAMPLES, *_generated(generated, stride)]
    compared = 0
    for source in sources:
        try:
            workload = recommender.load(source)
        except Exception:
            continue
        try:
            fast = values_row(recommender.rulebase, recommender.runner.run(workload).values, fields)
        except Exception as exc:
            fast = failed(exc)
        try:
            result = recommender.recommend(workload)
            doc = document(result)
        except Exception as exc:
            assert fast["status"] != "ok" and failed(exc)["error"] == fast["error"]
            continue
        assert fast["status"] == "ok"
        full = {k: v["value"] for k, v in doc["conclusions"].items()}
        full.update({k: v["value"] for k, v in doc["inputs"].items()})
        for k, v in fast["values"].items():
            if k in full:
                assert v == full[k], (source, k)
        assert {k for k in fields if k in result.values} == set(fast["values"])
        compared += 1
    assert compared > least


def test_the_bundled_scripts_are_the_ones_their_readme_names():
    import hashlib

    js = ROOT / "engine" / "sweep" / "js"
    table = (js / "README.md").read_text()
    for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        digest = hashlib.sha256((js / name).read_bytes()).hexdigest()
        assert re.search(rf"`{re.escape(name)}` .*\| {digest} \|", table), name
        licence = js / f"LICENSE.{name.removesuffix('.min.js')}"
        assert "Redistribution and use in source and binary forms" in licence.read_text()


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    not _chromium() and not __import__("os").environ.get("CI"),
    reason="headless Chromium is not installed (CI installs it)",
)
def test_the_summary_page_draws_its_plots_offline_in_a_browser(tmp_path):
    import subprocess

    assert _chromium(), "CI must install Debian's chromium package"
    spec = _small(tmp_path)
    out = tmp_path / "out"
    assert _sweep(spec, "-o", out, "--workers", "0")[0] == 0
    page = out / "summary.html"
    dom = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout
    assert not re.search(r'id="plot-\d+"[^>]*>This plot could not be drawn', text), text[-3000:]
    drawn = re.findall(r'<div class="plot[^"]*" id="plot-\d+"[^>]*>.*?<svg', text, flags=re.S)
    assert len(drawn) == text.count('type="application/json"') >= 2, "every plot is drawn as SVG"
