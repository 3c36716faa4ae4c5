"""Sweeps as jobs of gpusizer serve, driven over HTTP as a client drives them: start, poll, fetch,
cancel, delete; a bad specification at its line; too many cases; a case that crashes its worker;
recommendations answered while a job runs; the token; and the jobs' folders and their limits.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi", reason="gpusizer[serve] is not installed (the README's test command installs it)")
httpx = pytest.importorskip("httpx")

from serve_helpers import EXAMPLES, Server, make_pool  # noqa: E402

from corpus import run_cli  # noqa: E402
from engine.serve.app import Options  # noqa: E402
from engine.serve.sweeps import Limits  # noqa: E402

TOKEN = "s" * 40
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE = (EXAMPLES / "serving-qwen2.5-7b-32-users.yaml").read_text()
SPEC = """\
name: small
base: base.yaml
vary:
  model.name: [qwen2.5-7b, llama-3.1-8b]
  serving.concurrent_requests: [1, 64]
  market: [global, cn]
"""
SMALL = "name: small\ntask: inference\nmodel: {name: llama-2-7b}\nprecision: fp16\n"
MAX_CASES = 40
FINISHED = ("done", "cancelled", "failed")


@pytest.fixture(scope="module")
def server():
    """One request worker, sweep jobs one at a time on one process each, and a token (so that
    sweeps are held to it). The jobs' cases run through sweep_helpers.scripted: a case whose
    workload is named crash-me kills its process, and one with slow-me takes a second."""
    from sweep_helpers import scripted

    pool = make_pool(size=1)
    limits = Limits(running=1, workers=1, max_cases=MAX_CASES, keep=4, timeout=60)
    try:
        with Server(pool, Options(token=TOKEN, loopback_only=False, sweeps=limits, sweep_batch=scripted)) as s:
            yield s
    finally:
        pool.close()


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=300, headers=AUTH) as c:
        yield c


def error_shape(r, status):
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"code", "message", "diagnostics"}, body
    assert body["diagnostics"] and all(
        set(d) == {"message", "file", "line", "column", "help", "snippet"} for d in body["diagnostics"]
    )
    return body


def start(client, **body):
    r = client.post("/api/v1/sweep", json=body)
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == f"/api/v1/sweep/{job['id']}"
    assert job["status"] in ("queued", "running") and job["cases"]["done"] == 0
    return job


def wait(client, job, until=FINISHED, deadline=600):
    end = time.monotonic() + deadline
    while True:
        status = client.get(f"/api/v1/sweep/{job['id']}").json()
        if status["status"] in until:
            return status
        assert time.monotonic() < end, status
        time.sleep(0.3)


def batch_sizes(name, n):
    """A specification of n cases: batch sizes 1..n of a small workload named name."""
    values = ", ".join(str(i) for i in range(1, n + 1))
    return f"base: {{name: {name}, task: inference, model: {{name: llama-2-7b}}}}\nvary:\n  batch_size: [{values}]\n"


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


# -- a job, start to finish ----------------------------------------------------------------------------


def test_a_sweep_job_writes_what_gpusizer_sweep_writes(client, tmp_path):
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "spec.yaml").write_text(SPEC)
    code, _, err = run_cli(["sweep", str(tmp_path / "spec.yaml"), "-o", str(tmp_path / "out"), "--workers", "0"])
    assert code == 0, err

    job = start(client, spec=SPEC, files={"base.yaml": BASE})
    # the tables are written when the job has finished; asked for before, a 409 says so
    early = client.get(f"/api/v1/sweep/{job['id']}/summary.csv")
    if early.status_code != 200:
        assert error_shape(early, 409)["code"] == "not-finished"
    done = wait(client, job)
    assert done["status"] == "done", done
    assert done["cases"] == {"total": 8, "done": 8, "failed": 0} and done["statuses"] == {"ok": 8}
    assert done["rate"] > 0 and done["seconds"] > 0 and done["seconds_left"] is None
    for name in ("summary.csv", "pareto.csv"):
        got = client.get(f"/api/v1/sweep/{job['id']}/{name}")
        assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
        assert got.content == (tmp_path / "out" / name).read_bytes(), name
    lines = client.get(f"/api/v1/sweep/{job['id']}/results.jsonl").text.splitlines()
    assert sorted(json.loads(line)["case"] for line in lines) == [f"c000{i}" for i in range(1, 9)]
    page = client.get(f"/api/v1/sweep/{job['id']}/summary.html")
    assert page.status_code == 200 and '<table id="summary">' in page.text and "vegaEmbed" in page.text
    csp = page.headers["content-security-policy"]
    assert csp.startswith("sandbox allow-scripts;") and "default-src 'none'" in csp and "allow-same-origin" not in csp
    # the specification as a JSON object: the same table
    import yaml

    again = start(client, spec=yaml.safe_load(SPEC), files={"base.yaml": BASE})
    assert again["id"] != job["id"]
    wait(client, again)
    same = client.get(f"/api/v1/sweep/{again['id']}/summary.csv").content
    assert same == (tmp_path / "out" / "summary.csv").read_bytes()
    # the same text and documents: the same decision id; another base: another
    third = start(client, spec=SPEC, files={"base.yaml": BASE})
    other = start(client, spec=SPEC, files={"base.yaml": BASE.replace("32", "33")})
    assert third["decision_id"] == job["decision_id"] != other["decision_id"]
    for j in (third, other):  # deleted while queued or running
        assert client.delete(f"/api/v1/sweep/{j['id']}").json()["deleted"] is True
    listed = [j["id"] for j in client.get("/api/v1/sweep").json()["jobs"]]
    assert job["id"] in listed and again["id"] in listed
    for j in (job, again):
        gone = client.delete(f"/api/v1/sweep/{j['id']}")
        assert gone.status_code == 200 and gone.json()["deleted"] is True
        error_shape(client.get(f"/api/v1/sweep/{j['id']}"), 404)
        error_shape(client.get(f"/api/v1/sweep/{j['id']}/summary.csv"), 404)


def test_a_specification_sent_as_yaml_with_its_base_inline(client):
    spec = (
        "name: inline\n"
        "base: {name: chat, task: inference, model: {name: llama-2-7b}}\n"
        "vary:\n  precision: [fp16, int8]\n"
        "cases:\n  - {precision: fp16, batch_size: 4}\n"
    )
    r = client.post("/api/v1/sweep", content=spec, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 202, r.text
    done = wait(client, r.json())
    assert done["status"] == "done" and done["cases"]["total"] == 3
    table = rows(client.get(f"/api/v1/sweep/{done['id']}/summary.csv").text)
    assert [(r["precision"], r["batch_size"], r["status"]) for r in table] == [
        ("fp16", "", "ok"),
        ("int8", "", "ok"),
        ("fp16", "4", "ok"),
    ]
    client.delete(f"/api/v1/sweep/{done['id']}")


def test_a_config_json_attached_to_the_sweep_is_read_by_every_case(client):
    workload = (
        (EXAMPLES / "llama3.1-8b-lora-config.yaml")
        .read_text()
        .replace("configs/Llama-3.1-8B.config.json", "config.json")
    )
    config = (EXAMPLES / "configs" / "Llama-3.1-8B.config.json").read_text()
    spec = "name: attached\nbase: w.yaml\nvary:\n  batch_size: [1, 2]\n"
    done = wait(client, start(client, spec=spec, files={"w.yaml": workload, "config.json": config}))
    assert done["statuses"] == {"ok": 2}, client.get(f"/api/v1/sweep/{done['id']}/results.jsonl").text
    client.delete(f"/api/v1/sweep/{done['id']}")
    # without it, the base is refused at its line before anything runs
    body = error_shape(client.post("/api/v1/sweep", json={"spec": spec, "files": {"w.yaml": workload}}), 422)
    assert "not a document attached" in body["message"]


# -- refused before anything runs -------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, line, column, says",
    [
        ("base: base.yaml\nvary:\n  precison: [bf16]\n", 3, 3, "did you mean 'precision'"),
        ("base: base.yaml\nvary:\n  model.name: [qwen2.5-7b, qwen-9000]\n", 3, 28, "unknown model 'qwen-9000'"),
        ("base: base.yaml\nvary:\n  precision: bf16\n", 3, 14, "must be a list"),
        ('base: base.yaml\nvary:\n  precision: [bf16]\nwhere: "precision =="\n', 4, 8, "where:"),
        ("base: base.yaml\nvary:\n  precision: [bf16]\nextra: 1\n", 4, 1, "extra"),
        ("base: /etc/passwd\nvary:\n  precision: [bf16]\n", 1, 7, "no file is read from disk"),
        ("base: ../../examples/llama2-70b-chat.yaml\nvary:\n  precision: [bf16]\n", 1, 7, "no file is read"),
        ("- 1\n- 2\n", 1, 1, "must be a mapping"),
        ("base: base.yaml\nvary: {precision: [bf16, int8]}\nwhere: \"precision == 'x'\"\n", 3, 8, "no case"),
    ],
)
def test_a_bad_specification_is_refused_at_its_line(client, spec, line, column, says):
    body = error_shape(client.post("/api/v1/sweep", json={"spec": spec, "files": {"base.yaml": BASE}}), 422)
    where = [(d["file"], d["line"], d["column"]) for d in body["diagnostics"]]
    if line is not None:
        assert ("sweep.yaml", line, column) in where, body
    assert says in json.dumps(body), body
    assert all(d["help"] for d in body["diagnostics"]), body


@pytest.mark.parametrize(
    "body, ctype, status, says",
    [
        ('{"spec": "x", "spec": "y"}', "application/json", 400, "duplicate"),
        ('{"workload": "x"}', "application/json", 400, "unknown request field"),
        ('{"files": {}}', "application/json", 400, "no 'spec'"),
        ('{"spec": 5}', "application/json", 400, "'spec' must be YAML text or a JSON object"),
        ('{"spec": "x", "files": {"../base.yaml": "x"}}', "application/json", 400, "plain file name"),
        ("base: {name: x}\nvary: [\n", "application/yaml", 422, "YAML syntax"),
        ("!!python/object/apply:os.system ['true']\n", "application/yaml", 422, "python"),
        ("name: x", "text/plain", 415, "not read"),
    ],
)
def test_malformed_and_hostile_sweep_requests(client, body, ctype, status, says):
    got = error_shape(client.post("/api/v1/sweep", content=body, headers={"Content-Type": ctype}), status)
    assert says.lower() in json.dumps(got).lower()


def test_too_many_cases_are_refused_before_any_is_made(client):
    values = ", ".join(str(i) for i in range(1, 1001))
    spec = f"base: {{name: w}}\nvary:\n  batch_size: [{values}]\n  sequence_length: [{values}]\n"
    body = error_shape(client.post("/api/v1/sweep", json={"spec": spec}), 413)
    assert body["code"] == "too-large" and "1,000,000 combinations" in body["message"]
    d = body["diagnostics"][0]
    assert (d["file"], d["line"]) == ("sweep.yaml", 2) and "--sweep-max-cases" in d["help"]
    spec = batch_sizes("w", MAX_CASES + 1)
    assert error_shape(client.post("/api/v1/sweep", json={"spec": spec}), 413)["code"] == "too-large"


def test_sweeps_need_the_token(server):
    error_shape(httpx.post(f"{server.url}/api/v1/sweep", json={"spec": SPEC}), 401)
    error_shape(httpx.get(f"{server.url}/api/v1/sweep"), 401)
    error_shape(httpx.get(f"{server.url}/api/v1/sweep/0123456789abcdef/summary.csv"), 401)
    error_shape(httpx.delete(f"{server.url}/api/v1/sweep/0123456789abcdef"), 401)


def test_unknown_jobs_and_files(client):
    for path in ("0123456789abcdef", "../../etc", "x" * 500):
        error_shape(client.get(f"/api/v1/sweep/{path}"), 404)
    error_shape(client.get("/api/v1/sweep/0123456789abcdef/other.csv"), 404)
    error_shape(client.put("/api/v1/sweep"), 405)
    error_shape(client.get("/api/v1/sweep?x=1"), 400)


# -- faults and load ----------------------------------------------------------------------------------


def test_a_case_that_crashes_its_worker_is_an_error_row_and_the_job_completes(client):
    spec = (
        "name: crashing\n"
        "base: {name: w, task: inference, model: {name: llama-2-7b}}\n"
        "vary:\n  name: [first, crash-me, third]\n  precision: [fp16, int8]\n"
    )
    done = wait(client, start(client, spec=spec))
    assert done["status"] == "done", done
    assert done["cases"] == {"total": 6, "done": 6, "failed": 2} and done["statuses"] == {"crashed": 2, "ok": 4}
    table = rows(client.get(f"/api/v1/sweep/{done['id']}/summary.csv").text)
    crashed = [r for r in table if r["status"] == "crashed"]
    assert [r["name"] for r in crashed] == ["crash-me", "crash-me"]
    assert all("SIGSEGV" in r["error"] for r in crashed), [r["error"] for r in crashed]
    assert all(r["gpu.model"] for r in table if r["status"] == "ok")
    client.delete(f"/api/v1/sweep/{done['id']}")


def test_recommendations_are_answered_while_a_job_runs_and_cancel_stops_it(client, server):
    spec = (
        "name: long\n"
        "base: {name: slow-me, task: inference, model: {name: llama-2-7b}}\n"
        f"vary:\n  batch_size: [{', '.join(str(i) for i in range(1, MAX_CASES + 1))}]\n"
    )
    job = start(client, spec=spec)
    end = time.monotonic() + 300
    while client.get(f"/api/v1/sweep/{job['id']}").json()["cases"]["done"] < 1:  # its process is at work
        assert time.monotonic() < end
        time.sleep(0.3)
    texts = [SMALL, SMALL.replace("fp16", "int8"), (EXAMPLES / "llama2-70b-chat.yaml").read_text()]

    def ask(text):
        r = httpx.post(
            f"{server.url}/api/v1/recommend",
            content=text,
            headers={"Content-Type": "application/yaml", **AUTH},
            timeout=300,
        )
        return r.status_code, r.json()["result"]["conclusions"]["gpu.model"]["value"]

    with ThreadPoolExecutor(max_workers=6) as ex:
        answers = list(ex.map(ask, texts * 4))
    assert all(status == 200 for status, _ in answers)
    assert len(set(answers[0::3])) == 1  # the same workload, the same answer
    during = client.get(f"/api/v1/sweep/{job['id']}").json()
    assert during["status"] == "running" and during["cases"]["done"] < MAX_CASES, during
    # a second job waits for the first (one runs at a time here)
    queued = start(client, spec=spec.replace("name: long", "name: queued"))
    assert client.get(f"/api/v1/sweep/{queued['id']}").json()["status"] == "queued"
    # its tables are not there yet; its rows so far are
    error_shape(client.get(f"/api/v1/sweep/{job['id']}/pareto.csv"), 409)
    so_far = client.get(f"/api/v1/sweep/{job['id']}/results.jsonl").text
    assert all(json.loads(line)["status"] == "ok" for line in so_far.splitlines())

    r = client.post(f"/api/v1/sweep/{job['id']}/cancel")
    assert r.status_code == 202
    stopped = wait(client, job, deadline=120)
    assert stopped["status"] == "cancelled" and stopped["cases"]["done"] < MAX_CASES
    table = rows(client.get(f"/api/v1/sweep/{job['id']}/summary.csv").text)
    assert len(table) == MAX_CASES  # every case has its row: those not run say so
    statuses = [r["status"] for r in table]
    assert statuses.count("ok") == stopped["cases"]["done"]
    assert statuses.count("cancelled") == MAX_CASES - stopped["cases"]["done"]
    assert all("cancelled before this case ran" in r["error"] for r in table if r["status"] == "cancelled")
    # the queued job runs once the first has stopped; deleting it stops it
    wait(client, queued, until=("running", *FINISHED))
    assert client.delete(f"/api/v1/sweep/{queued['id']}").status_code == 200
    error_shape(client.get(f"/api/v1/sweep/{queued['id']}"), 404)
    client.delete(f"/api/v1/sweep/{job['id']}")


# -- the jobs' limits and folders, without HTTP ---------------------------------------------------------


def _checked(recommender, n):
    from engine.sweep.run import prepare
    from engine.sweep.spec import read_spec
    from engine.sweep.table import table_config

    spec = read_spec(batch_sizes("slow-me", n), "sweep.yaml", recommender, {}, max_cases=100)
    sweep = prepare(spec, recommender.rulebase, table_config())
    return {"decision_id": "0" * 32, "sweep": sweep.plain(), "files": {}}


def test_jobs_are_held_within_their_limits_and_their_folders_removed(recommender):
    from sweep_helpers import scripted

    from engine.load.resources import data_dir
    from engine.serve.sweeps import Jobs
    from engine.serve.work import Failure

    jobs = Jobs(
        [str(data_dir("rules"))],
        [str(data_dir("knowledge"))],
        recommender.rulebase.sha256,
        Limits(running=1, workers=1, keep=2, ttl=3600),
        fn=scripted,
    )
    try:
        a = jobs.start(_checked(recommender, 20))
        b = jobs.start(_checked(recommender, 20))
        root = a.folder.parent
        assert root.stat().st_mode & 0o077 == 0, "only the server's user may read the jobs' folders"
        with pytest.raises(Failure) as full:
            jobs.room()
        assert full.value.status == 429
        jobs.cancel(a)
        jobs.cancel(b)
        for j in (a, b):
            j.thread.join(120)
            assert j.status == "cancelled" and (j.folder / "summary.csv").exists()
        # held jobs are full, but finished ones make room: the oldest goes, with its folder
        c = jobs.start(_checked(recommender, 1))
        assert not a.folder.exists() and b.folder.exists()
        with pytest.raises(Failure):
            jobs.get(a.id)
        c.thread.join(120)
        assert c.status == "done" and [j["id"] for j in jobs.listing()] == [b.id, c.id]
    finally:
        jobs.close()
    assert not root.exists(), "stopping the server removes every job's folder"


def test_a_finished_job_is_kept_for_its_time_only(recommender):
    from sweep_helpers import scripted

    from engine.load.resources import data_dir
    from engine.serve.sweeps import Jobs

    jobs = Jobs(
        [str(data_dir("rules"))],
        [str(data_dir("knowledge"))],
        recommender.rulebase.sha256,
        Limits(ttl=0.5),
        fn=scripted,
    )
    try:
        job = jobs.start(_checked(recommender, 1))
        job.thread.join(120)
        assert job.status == "done" and [j["id"] for j in jobs.listing()] == [job.id]
        time.sleep(0.6)
        assert jobs.listing() == [] and not job.folder.exists()
    finally:
        jobs.close()


def test_stopping_the_server_stops_a_running_job(recommender):
    from sweep_helpers import scripted

    from engine.load.resources import data_dir
    from engine.serve.sweeps import Jobs

    jobs = Jobs(
        [str(data_dir("rules"))], [str(data_dir("knowledge"))], recommender.rulebase.sha256, Limits(), fn=scripted
    )
    job = jobs.start(_checked(recommender, 30))
    deadline = time.monotonic() + 120
    while job.status != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    root = job.folder.parent
    t = time.monotonic()
    closer = threading.Thread(target=jobs.close)
    closer.start()
    closer.join(60)
    assert not closer.is_alive() and time.monotonic() - t < 30
    assert not job.thread.is_alive() and not root.exists()
    shutil.rmtree(root, ignore_errors=True)
