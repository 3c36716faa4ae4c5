"""gpusizer serve's API fuzzed from its own OpenAPI document (schemathesis), against a running server.

Every operation gets requests that fit its document and requests that do not (wrong types,
missing and extra fields, odd strings and numbers in every parameter and body). Every answer must
be a success or the one error shape, with a status the document lists, the content type it names,
and never a 500: nothing here crashes a worker on purpose.

A deterministic run of a few examples per operation keeps to the default test run's time;
GPUSIZER_FUZZ_EXAMPLES=N runs N per operation, with a random seed, for a longer search.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("fastapi", reason="gpusizer[serve] is not installed (the README's test command installs it)")
schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the test extra")

from serve_helpers import Server, make_pool  # noqa: E402

from engine.serve.app import Options  # noqa: E402
from engine.serve.sweeps import Limits  # noqa: E402

EXAMPLES = int(os.environ.get("GPUSIZER_FUZZ_EXAMPLES", "0") or 0)


@pytest.fixture(scope="module")
def fuzzed_server():
    pool = make_pool(size=2, timeout=30.0)
    try:
        limits = Limits(running=1, workers=1, max_cases=16, keep=4, timeout=30.0)
        with Server(pool, Options(timeout=30.0, sweeps=limits)) as s:
            yield s
    finally:
        pool.close()


@pytest.fixture(scope="module")
def api_schema(fuzzed_server):
    schema = schemathesis.openapi.from_url(f"{fuzzed_server.url}/api/v1/openapi.json")
    schema.config.update(base_url=fuzzed_server.url, request_timeout=120)
    return schema


def _error_shape(response):
    body = response.json()
    assert set(body) == {"code", "message", "diagnostics"}, body
    assert isinstance(body["code"], str) and body["code"] and isinstance(body["message"], str) and body["message"]
    assert body["diagnostics"], body
    for d in body["diagnostics"]:
        assert set(d) == {"message", "file", "line", "column", "help", "snippet"}, d


def test_every_answer_is_a_success_or_the_one_error_shape(api_schema, capsys):
    """Each operation of the document, with requests that fit it and requests that do not.

    (Cases are drawn with Hypothesis from schemathesis' strategies rather than through its pytest
    plugin, whose fixture loader does not run on pytest 9.)
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.checks import (
        content_type_conformance,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    # the checks that hold here: no 5xx but the documented 503s, the status codes, content types and
    # bodies the document lists (whether a workload is valid is the rules' to say: a request that
    # fits the document may still get a 422, so positive_data_acceptance does not apply)
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    calls: dict[str, int] = {}

    def check(case):
        response = case.call()
        label = f"{case.operation.method.upper()} {case.operation.path}"
        calls[label] = calls.get(label, 0) + 1
        assert response.status_code != 500, (label, response.text[:2000])
        if response.status_code >= 400:
            _error_shape(response)
        case.validate_response(response, checks=checks)

    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 20
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run = settings(
                max_examples=EXAMPLES or 6,
                derandomize=not EXAMPLES,
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            )(given(case=operation.as_strategy(mode))(check))
            try:
                run()
            except Unsatisfiable:  # no request breaks a document that asks for nothing (GET /healthz)
                assert mode == GenerationMode.NEGATIVE, operation.label
    with capsys.disabled():
        print(f"\nfuzzed {len(operations)} operations with {sum(calls.values())} requests")
