"""gpusizer serve's API, tested as clients use it: HTTP against a running server on 127.0.0.1.

Malformed, oversized, hostile and concurrent requests; a worker that dies mid-request; the token
and the Host check. Every failure must come in the one error shape with a fitting status.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

pytest.importorskip("fastapi", reason="gpusizer[serve] is not installed (the README's test command installs it)")
httpx = pytest.importorskip("httpx")

from serve_helpers import EXAMPLES, Server, make_pool  # noqa: E402

from corpus import ROOT, run_cli  # noqa: E402
from engine.serve.app import Options  # noqa: E402
from engine.serve.work import MAX_SWEEP, encode_link  # noqa: E402

LLAMA = (EXAMPLES / "llama2-70b-chat.yaml").read_text()
SMALL = "name: small\ntask: inference\nmodel: {name: llama-2-7b}\nprecision: fp16\n"
YAML = {"Content-Type": "application/yaml"}


@pytest.fixture(scope="module")
def pool():
    p = make_pool(size=2)
    yield p
    p.close()


@pytest.fixture(scope="module")
def server(pool):
    with Server(pool, Options()) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=120) as c:
        yield c


@pytest.fixture(scope="module")
def expected(recommender):
    """What the Python API answers for a workload text (the document the CLI writes)."""
    from engine.report.document import document

    cache = {}

    def doc(text, files=None):
        key = (text, json.dumps(files or {}, sort_keys=True))
        if key not in cache:
            rb = recommender.rulebase
            w = rb.inputs.load(None, rb.catalogs, display="workload.yaml", text=text, attached=files or {})
            cache[key] = json.loads(json.dumps(document(recommender.recommend(w))))
        return cache[key]

    return doc


def error_shape(r, status):
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"code", "message", "diagnostics"}, body
    assert isinstance(body["message"], str) and body["message"]
    assert body["diagnostics"] and all(
        set(d) == {"message", "file", "line", "column", "help", "snippet"} for d in body["diagnostics"]
    )
    return body


# -- the loader reads documents attached to a request, never a path -----------------------------------


def test_attached_config_is_read_from_the_request_not_from_disk(recommender):
    from engine.errors import InputError
    from engine.report.document import document

    rb = recommender.rulebase
    example = EXAMPLES / "qwen3-30b-a3b-config-serving.yaml"
    text = example.read_text().replace("configs/Qwen3-30B-A3B.config.json", "config.json")
    config = (EXAMPLES / "configs" / "Qwen3-30B-A3B.config.json").read_text()
    w = rb.inputs.load(None, rb.catalogs, display="workload.yaml", text=text, attached={"config.json": config})
    assert document(recommender.recommend(w))["conclusions"] == document(recommender.recommend(example))["conclusions"]
    for bad, says in [
        (text, "not a document attached to the request"),
        (
            text.replace("config: config.json", f"config: {EXAMPLES / 'configs' / 'Qwen3-30B-A3B.config.json'}"),
            "no file is read",
        ),
        (text.replace("config: config.json", "hf: Qwen/Qwen3-30B-A3B"), "local cache, which is not read here"),
    ]:
        with pytest.raises(InputError, match=says):
            rb.inputs.load(None, rb.catalogs, display="workload.yaml", text=bad, attached={})


# -- answers -----------------------------------------------------------------------------------------


def test_health_ready_rulebase_and_catalogs(client, recommender):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["workers"] == 2
    rb = client.get("/api/v1/rulebase").json()
    from engine import __version__

    assert rb["rules"] == len(recommender.rulebase.rules) and rb["sha256"] == recommender.rulebase.sha256
    assert rb["gpusizer"] == __version__
    cats = client.get("/api/v1/catalogs").json()["catalogs"]
    assert cats["gpu"]["items"] == len(recommender.rulebase.catalogs["gpu"].items)
    gpus = client.get("/api/v1/catalogs/gpu").json()["items"]
    assert {"id", "name"} <= set(gpus[0]) and len(gpus) == cats["gpu"]["items"]
    error_shape(client.get("/api/v1/catalogs/gpus"), 404)
    schema = client.get("/api/v1/workload-schema").json()
    assert "task" in schema["properties"]


@pytest.mark.parametrize(
    "example",
    ["llama2-70b-chat", "gpt2-finetune-personal", "owned-rtx3090-llama3-8b-lora", "serving-qwen2.5-7b-32-users"],
)
def test_recommend_answers_the_cli_document(client, expected, example):
    text = (EXAMPLES / f"{example}.yaml").read_text()
    r = client.post("/api/v1/recommend", content=text, headers=YAML)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"decision_id", "result"} and len(body["decision_id"]) == 32
    assert body["result"] == expected(text)
    # the same workload as a JSON object gives the same conclusions
    import yaml

    r2 = client.post("/api/v1/recommend", json={"workload": yaml.safe_load(text)})
    assert r2.json()["result"]["conclusions"] == body["result"]["conclusions"]


def test_decision_ids_name_the_decision(client):
    a = client.post("/api/v1/recommend", content=SMALL, headers=YAML).json()["decision_id"]
    b = client.post("/api/v1/recommend", json={"workload": SMALL}).json()["decision_id"]
    c = client.post("/api/v1/recommend", content=SMALL.replace("fp16", "int8"), headers=YAML).json()["decision_id"]
    assert a == b != c


def test_config_json_is_attached(client, expected):
    text = (
        (EXAMPLES / "llama3.1-8b-lora-config.yaml")
        .read_text()
        .replace("configs/Llama-3.1-8B.config.json", "config.json")
    )
    config = (EXAMPLES / "configs" / "Llama-3.1-8B.config.json").read_text()
    r = client.post("/api/v1/recommend", json={"workload": text, "files": {"config.json": config}})
    assert r.status_code == 200, r.text
    assert r.json()["result"] == expected(text, {"config.json": config})
    # without the attachment, and with paths or the cache, it is refused at the key's line
    body = error_shape(client.post("/api/v1/recommend", json={"workload": text}), 422)
    assert body["diagnostics"][0]["line"] == 7 and "not a document attached" in body["message"]
    for value in ("/etc/passwd", "../../etc/passwd", str(EXAMPLES / "configs" / "Llama-3.1-8B.config.json")):
        body = error_shape(client.post("/api/v1/recommend", json={"workload": text.replace("config.json", value)}), 422)
        assert "no file is read from disk" in body["message"]
    hf = text.replace("config: config.json", "hf: meta-llama/Llama-3.1-8B")
    body = error_shape(client.post("/api/v1/recommend", json={"workload": hf}), 422)
    assert "not read here" in body["message"]


def test_report_formats(client):
    r = client.post("/api/v1/recommend?format=text", content=LLAMA, headers=YAML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert len(r.headers["Gpusizer-Decision-Id"]) == 32
    code, out, _ = run_cli(["recommend", "examples/llama2-70b-chat.yaml"])
    assert r.text == out
    r = client.post("/api/v1/recommend", json={"workload": LLAMA, "format": "html"})
    assert r.headers["content-type"].startswith("text/html") and "<svg" in r.text


def test_explain_why_not_and_what_if_answer_the_cli_json(client):
    llama = "examples/llama2-70b-chat.yaml"
    r = client.post("/api/v1/explain", json={"workload": LLAMA, "attribute": "ram.base_gb"})
    _, out, _ = run_cli(["explain", llama, "ram.base_gb", "--format", "json"])
    got, want = r.json()["result"], json.loads(out)
    assert json.dumps(got).replace("workload.yaml", llama) == json.dumps(want)
    r = client.post("/api/v1/why-not", json={"workload": LLAMA, "query": "gpu.model=h100-sxm-80gb"})
    _, out, _ = run_cli(["why-not", llama, "gpu.model=h100-sxm-80gb", "--format", "json"])
    assert r.json()["result"] == json.loads(out)
    r = client.post("/api/v1/what-if?set=batch_size%3D8", content=LLAMA, headers=YAML)
    _, out, _ = run_cli(["what-if", llama, "--set", "batch_size=8", "--format", "json"])
    assert r.json()["result"] == json.loads(out)
    r = client.post("/api/v1/what-if", json={"workload": LLAMA, "sweep": {"batch_size": [1, 8, 32]}})
    _, out, _ = run_cli(["what-if", llama, "--sweep", "batch_size=1,8,32", "--format", "json"])
    assert r.json()["result"] == json.loads(out)
    r = client.post(
        "/api/v1/what-if", json={"workload": SMALL, "max": "batch_size", "while": "memory.vram_required_gb <= 80"}
    )
    largest = r.json()["result"]
    assert largest["largest"] >= 1 and largest["at"] and largest["beyond"]


# -- failures, each in the one shape -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, ctype, status, says",
    [
        ("{not json", "application/json", 400, "not valid JSON"),
        ("[1, 2]", "application/json", 400, "must be a JSON object"),
        ('{"workload": "x", "workload": "y"}', "application/json", 400, "duplicate"),
        ('{"workload": NaN}', "application/json", 400, "not valid JSON"),
        ('{"workload": 5}', "application/json", 400, "YAML text or a JSON object"),
        ('{"workloads": "x"}', "application/json", 400, "unknown request field"),
        ('{"files": {}}', "application/json", 400, "no 'workload'"),
        ('{"workload": "x", "files": {"../etc/passwd": "{}"}}', "application/json", 400, "plain file name"),
        ('{"workload": "x", "files": {"a.json": 5}}', "application/json", 400, "must be text"),
        ('{"workload": "x", "format": "pdf"}', "application/json", 400, "not one of"),
        ("[" * 5000 + "]" * 5000, "application/json", 400, "nests deeper"),
        ("name: x", "text/plain", 415, "not read"),
        ("workload=x", "application/x-www-form-urlencoded", 415, "not read"),
        ("name: x\ntask: inference\nmodel: {name: llama-2-7b}\nbogus: 1\n", "application/yaml", 422, "bogus"),
        ("name: x\ntask: [\n", "application/yaml", 422, "YAML syntax"),
        ("!!python/object/apply:os.system ['true']\n", "application/yaml", 422, "python"),
        ("a: &a [*a, *a]\n", "application/yaml", 422, ""),
    ],
)
def test_malformed_and_hostile_requests(client, body, ctype, status, says):
    got = error_shape(client.post("/api/v1/recommend", content=body, headers={"Content-Type": ctype}), status)
    assert says.lower() in json.dumps(got).lower()


def test_invalid_workload_errors_give_line_column_and_help(client):
    text = "name: x\ntask: inference\nmodel: {name: llama-2-7c}\n"
    body = error_shape(client.post("/api/v1/recommend", content=text, headers=YAML), 422)
    d = body["diagnostics"][0]
    assert (d["file"], d["line"], d["column"]) == ("workload.yaml", 3, 15) and "llama-2-7b" in d["help"]
    body = error_shape(client.post("/api/v1/explain", json={"workload": SMALL, "attribute": "ram.sytem_gb"}), 422)
    assert "ram.system_gb" in body["diagnostics"][0]["help"]
    error_shape(client.post("/api/v1/explain", json={"workload": SMALL}), 400)
    error_shape(client.post("/api/v1/why-not", json={"workload": SMALL, "query": "memory.vram_required_gb=nan"}), 400)


def test_bad_utf8_and_unknown_routes(client):
    error_shape(client.post("/api/v1/recommend", content=b"name: \xff\n", headers=YAML), 400)
    error_shape(client.get("/api/v1/nothing"), 404)
    error_shape(client.get("/api/v1/recommend"), 405)
    error_shape(client.get("/api/v1/rulebase?x=1"), 400)


def test_billion_laughs_is_refused_quickly(client):
    lol = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)
    )
    t = time.monotonic()
    body = error_shape(client.post("/api/v1/recommend", content=lol, headers=YAML), 422)
    assert "nodes" in body["message"] and time.monotonic() - t < 20


def test_oversized_requests(client, server):
    limit = Options().max_body
    big = "name: x\n" + "# " + "x" * (limit + 10) + "\n"
    body = error_shape(client.post("/api/v1/recommend", content=big, headers=YAML), 413)
    assert "at most" in body["message"]

    def chunks():  # no Content-Length: the size is counted as it arrives
        for _ in range(limit // 65536 + 2):
            yield b"#" * 65536

    error_shape(client.post("/api/v1/recommend", content=chunks(), headers=YAML), 413)
    many = {"workload": SMALL, "files": {f"f{i}.json": "{}" for i in range(20)}}
    error_shape(client.post("/api/v1/recommend", json=many), 413)
    error_shape(
        client.post("/api/v1/what-if", json={"workload": SMALL, "sweep": {"batch_size": list(range(1, 100))}}), 413
    )
    # a link that unpacks to far more than a workload may be
    import base64
    import zlib

    bomb = base64.urlsafe_b64encode(zlib.compress(b'{"w": "' + b" " * (8 << 20) + b'"}', 9)).decode().rstrip("=")
    error_shape(client.get(f"/?w={bomb}"), 413)
    error_shape(client.get("/?w=not-a-link"), 400)


def test_host_header_must_name_this_machine(client):
    body = error_shape(client.get("/api/v1/rulebase", headers={"Host": "evil.example:8000"}), 400)
    assert body["code"] == "bad-host"
    assert client.get("/api/v1/rulebase", headers={"Host": "localhost:8000"}).status_code == 200


def test_openapi_document_and_docs_are_served_from_here(client):
    spec = client.get("/api/v1/openapi.json").json()
    for op in ("recommend", "explain", "why-not", "what-if"):
        post = spec["paths"][f"/api/v1/{op}"]["post"]
        assert "application/yaml" in post["requestBody"]["content"] and "422" in post["responses"]
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200 and "/api/v1/recommend" in docs.text
    assert "cdn" not in docs.text.lower() and "<script" not in docs.text
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404


# -- the page's own answers ------------------------------------------------------------------------------


def test_page_link_downloads_and_record(client, tmp_path):
    page = client.get("/")
    assert page.status_code == 200 and 'id="yaml"' in page.text and 'id="recommendation"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert not any(f'src="{p}' in page.text for p in ("http:", "https:", "//"))
    link = encode_link(LLAMA, {})
    # the card the example is expected to get (examples/expected/, checked by gpusizer test --workloads)
    card = yaml.safe_load((EXAMPLES / "expected" / "llama2-70b-chat.yaml").read_text())["expect"]["gpu.model"]
    shared = client.get(f"/?w={link}")
    assert "llama2-70b-chat" in shared.text and card in shared.text
    y = client.get(f"/ui/download/yaml?w={link}")
    assert y.text == LLAMA and 'filename="llama2-70b-chat.yaml"' in y.headers["content-disposition"]
    j = client.get(f"/ui/download/json?w={link}")
    assert json.loads(j.text)["conclusions"]["gpu.model"]["value"] == card
    h = client.get(f"/ui/download/html?w={link}")
    assert h.text.startswith("<!DOCTYPE html>")
    rec = client.get(f"/ui/download/record?w={link}")
    path = tmp_path / "record.json"
    path.write_text(rec.text)
    code, out, err = run_cli(["audit", "verify", str(path)])
    assert code == 0, err
    error_shape(client.get(f"/ui/download/pdf?w={link}"), 404)


def test_page_result_shows_errors_with_their_lines(client):
    r = client.post(
        "/ui/result", data={"workload": "name: x\ntask: inferenc\nmodel: {name: llama-2-7b}\n", "files": "{}"}
    )
    assert r.status_code == 200 and 'id="diagnostics"' in r.text
    assert "&#34;line&#34;: 2" in r.text or '"line": 2' in r.text.replace("&#34;", '"')


def test_form_edits_keep_the_rest_of_the_text(client):
    text = "name: x   # mine\ntask: inference\nmodel: {name: llama-2-7b}\n"
    r = client.post("/ui/edit", data={"workload": text, "files": "{}", "key": "model.name", "value": "llama-2-13b"})
    assert r.json()["workload"] == text.replace("7b", "13b")
    r = client.post("/ui/edit", data={"workload": text, "files": "{}", "key": "budget.amount", "value": "5000"})
    assert r.json()["workload"] == text + "budget:\n  amount: 5000\n"
    r = client.post("/ui/edit", data={"workload": text, "files": "{}", "key": "gpu.count", "value": "4"})
    assert "count: 4" in r.json()["workload"]
    error_shape(client.post("/ui/edit", data={"workload": text, "files": "{}", "key": "nope", "value": "1"}), 400)


def test_set_key_cases():
    from engine.serve.edit import set_key

    base = "name: x   # keep\nmodel: {name: a-b}\nbudget:\n  amount: 3000  # money\n  currency: USD\n"
    assert set_key(base, ("model", "name"), "c-d", "w") == base.replace("a-b", "c-d")
    assert set_key(base, ("budget", "amount"), 10, "w") == base.replace("3000", "10")
    assert (
        set_key(base, ("budget", "currency"), None, "w")
        == "name: x   # keep\nmodel: {name: a-b}\nbudget:\n  amount: 3000  # money\n"
    )
    assert set_key(base, ("model", "params"), "7B", "w").splitlines()[1] == "model: {params: 7B, name: a-b}"
    assert 'name: "a: b"   # keep' in set_key(base, ("name",), "a: b", "w")


# -- many at once, none wrong, none lost -----------------------------------------------------------------


def test_concurrent_requests_each_get_their_own_answer(client, server, expected, capsys):
    texts = [
        (EXAMPLES / f"{n}.yaml").read_text()
        for n in ("llama2-70b-chat", "gpt2-finetune-personal", "mixtral-8x7b-serving")
    ]
    texts += [SMALL, SMALL.replace("fp16", "int8"), SMALL.replace("llama-2-7b", "llama-2-13b")]
    want = {t: expected(t)["conclusions"] for t in texts}
    jobs = [texts[i % len(texts)] for i in range(96)]

    def ask(text):
        r = httpx.post(f"{server.url}/api/v1/recommend", content=text, headers=YAML, timeout=300)
        return text, r.status_code, (r.json().get("result") or {}).get("conclusions")

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=24) as ex:
        answers = list(ex.map(ask, jobs))
    took = time.monotonic() - start
    assert len(answers) == len(jobs)
    wrong = [t[:20] for t, status, got in answers if status != 200 or got != want[t]]
    assert not wrong, f"{len(wrong)} of {len(jobs)} answers were wrong or missing"
    with capsys.disabled():
        print(f"\n{len(jobs)} requests, 24 at once, 2 workers: {took:.1f} s, all {len(jobs)} answered correctly")


def taken(pool, url, body):
    """Post a what-if from another thread and return once a worker has taken it (or it was answered, or a
    minute passed): the thread, and the dict its response goes in, under "r"."""
    out = {}

    def call():
        out["r"] = httpx.post(f"{url}/api/v1/what-if", json=body, timeout=300)

    t = threading.Thread(target=call)
    t.start()
    deadline = time.monotonic() + 60
    while not pool.answering and "r" not in out and time.monotonic() < deadline:
        time.sleep(0.01)
    return t, out


def test_a_worker_that_dies_costs_one_request(pool, server):
    """A worker ended mid-request (as a crash in durable-rules' C code would end it): that request
    gets a 500 in the error shape, the others are answered, and a replacement worker starts."""
    # the search takes a second or more even on a fast machine: it is killed well inside that
    slow = {"workload": LLAMA, "max": "batch_size", "while": "memory.vram_required_gb <= 100000"}
    t, out = taken(pool, server.url, slow)
    assert pool.answering, f"no worker was seen answering the request (answered first: {'r' in out})"
    (busy,) = pool.answering
    os.kill(busy, signal.SIGKILL)
    t.join(120)
    body = error_shape(out["r"], 500)
    assert body["code"] == "worker-crashed" and "SIGKILL" in body["message"]
    ok = httpx.post(f"{server.url}/api/v1/recommend", content=SMALL, headers=YAML, timeout=300)
    assert ok.status_code == 200
    deadline = time.monotonic() + 120
    while pool.alive < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert pool.alive == 2 and pool.replaced >= 1


# -- limits and the token, on a one-worker pool -----------------------------------------------------------


@pytest.fixture(scope="module")
def small_pool():
    p = make_pool(size=1, timeout=2.0, queue=0)
    yield p
    p.close()


def test_timeout_and_busy():
    """A request that runs past the pool's timeout is stopped with a 503, one that finds every worker
    answering and no room to wait gets a 429, and the replacement worker answers the next one.

    The timeout is a small fraction of what the slow request takes (64 full recommendations, seconds
    on any machine), so the test does not depend on how fast the machine is: the worker is seen to
    take the request before the second one is sent."""
    timeout = 0.3
    pool = make_pool(size=1, timeout=timeout, queue=0)
    try:
        values = ",".join(str(8 * (i + 1)) for i in range(MAX_SWEEP))
        slow = {"workload": LLAMA, "sweep": f"batch_size={values}"}
        with Server(pool, Options(timeout=timeout)) as s:
            t, out = taken(pool, s.url, slow)
            busy = httpx.post(f"{s.url}/api/v1/recommend", json={"workload": SMALL}, timeout=300)
            t.join(120)
            assert error_shape(busy, 429)["code"] == "busy"
            body = error_shape(out["r"], 503)
            assert body["code"] == "timeout" and f"{timeout:g} s" in body["message"]
            # the replacement worker answers once it is ready and back among the idle ones (a moment after
            # it counts as alive: until then a request still finds no worker, a 429)
            deadline = time.monotonic() + 120
            while True:
                ok = httpx.get(f"{s.url}/api/v1/catalogs", timeout=300)
                if ok.status_code != 429 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert ok.status_code == 200, ok.text
            assert pool.alive == 1 and pool.replaced == 1
    finally:
        pool.close()


def test_token(small_pool):
    token = "t" * 40
    with Server(small_pool, Options(token=token, loopback_only=False)) as s:
        error_shape(httpx.post(f"{s.url}/api/v1/recommend", json={"workload": SMALL}), 401)
        wrong = {"Authorization": "Bearer " + "u" * 40}
        error_shape(httpx.post(f"{s.url}/api/v1/recommend", json={"workload": SMALL}, headers=wrong), 401)
        right = {"Authorization": f"Bearer {token}"}
        assert (
            httpx.post(f"{s.url}/api/v1/recommend", json={"workload": SMALL}, headers=right, timeout=300).status_code
            == 200
        )
        assert httpx.get(f"{s.url}/healthz").status_code == 200  # health checks need none
        page = httpx.get(f"{s.url}/")
        assert page.status_code == 303 and page.headers["location"].startswith("/login")
        with httpx.Client(base_url=s.url, timeout=300) as browser:
            assert browser.post("/login", data={"token": "nope", "next": "/"}).status_code == 401
            assert browser.post("/login", data={"token": token, "next": "/"}).status_code == 303
            assert browser.get("/").status_code == 200
            error_shape(browser.post("/api/v1/recommend", json={"workload": SMALL}), 401)  # the API: the header only


# -- the command --------------------------------------------------------------------------------------------


def test_serve_command_refuses_to_listen_elsewhere_without_a_token(tmp_path):
    code, _, err = run_cli(["serve", "--host", "0.0.0.0"])
    assert code == 2 and "--token-file" in err
    token = tmp_path / "token"
    token.write_text("x" * 40)
    token.chmod(0o644)
    code, _, err = run_cli(["serve", "--host", "0.0.0.0", "--token-file", str(token)])
    assert code == 2 and "readable by others" in err
    token.chmod(0o600)
    token.write_text("short")
    code, _, err = run_cli(["serve", "--host", "0.0.0.0", "--token-file", str(token)])
    assert code == 2 and "at least 32" in err


def test_serve_command_starts_and_answers(tmp_path):
    from serve_helpers import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", "--port", str(port), "--workers", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "gpusizer serve did not start"
            time.sleep(0.5)
        r = httpx.post(f"http://127.0.0.1:{port}/api/v1/recommend", content=SMALL, headers=YAML, timeout=300)
        assert r.status_code == 200 and r.json()["result"]["workload"]["name"] == "small"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
