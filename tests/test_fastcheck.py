"""The fast schema check (engine/load/fastcheck.py) gives jsonschema's answer: on every shipped file,
on the broken-input corpus, and on generated documents."""

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpus import ROOT
from engine.load.schema import engine_schema, fast_check, validator_for
from engine.load.yamlsrc import load

SCHEMAS = [
    "rule",
    "base",
    "rule-test",
    "attributes",
    "knowledge",
    "constants",
    "import",
    "infer",
    "overlay",
    "guidance",
    "record",
]


def _kind(path):
    name = path.name
    if path.parts[-2:] == ("rules", "_attributes.yaml") or name == "_attributes.yaml":
        return "attributes"
    if name == "_overlay.yaml":
        return "overlay"
    if name == "_guidance.yaml":
        return "guidance"
    if name.endswith(".test.yaml"):
        return "rule-test"
    if name.endswith(".base.yaml"):
        return "base"
    if "knowledge" in path.parts:
        try:
            data = load(path).data
        except Exception:
            data = None
        if isinstance(data, dict) and "import" in data:
            return "import"
        if isinstance(data, dict) and "infer" in data:
            return "infer"
        return "constants" if name == "constants.yaml" else "knowledge"
    return "rule"


def _agree(schema, data):
    fast = fast_check(schema)
    assert fast is not None, "the check compiles every schema gpusizer ships"
    slow = not any(True for _ in validator_for(schema).iter_errors(data))
    assert fast(data) is slow, json.dumps(data, default=str)[:500]
    return slow


FILES = sorted(p for d in ("rules", "knowledge", "tests/bad", "tests/overlays") for p in (ROOT / d).rglob("*.yaml"))


def test_every_schema_compiles():
    for name in SCHEMAS:
        assert fast_check(engine_schema(name)) is not None, name
    workload = json.loads((ROOT / "knowledge" / "workload.schema.json").read_text())
    assert fast_check(workload) is not None


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_shipped_and_broken_files(path):
    from engine.errors import InputError

    try:
        doc = load(path)
    except InputError:
        return  # not YAML: nothing reaches a schema
    _agree(engine_schema(_kind(path)), doc.data)


def test_the_shipped_files_are_valid():
    shipped = [p for p in FILES if "tests" not in p.parts]
    assert shipped and all(_agree(engine_schema(_kind(p)), load(p).data) for p in shipped)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(["", "x", "eq", "gt", "ref", "number", "max", "a.b", "Bad Id", "gpu", "g", "1.0"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["id", "when", "then", "gt", "ref", "type", "x", "item", "as"]), inner, max_size=4
        ),
    ),
    max_leaves=8,
)


def _paths(data, prefix=()):
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated(draw):
    path = draw(st.sampled_from([p for p in FILES if "tests" not in p.parts]))
    data = copy.deepcopy(load(path).data)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(list(_paths(data))))
        if not where:
            continue
        parent = data
        for p in where[:-1]:
            parent = parent[p]
        action = draw(st.integers(0, 2))
        if action == 0:
            parent[where[-1]] = draw(json_values)
        elif action == 1 and isinstance(parent, dict):
            del parent[where[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "when", "unit", "combine"]))] = draw(json_values)
    return _kind(path), data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated())
def test_mutated_documents(case):
    kind, data = case
    _agree(engine_schema(kind), data)


@settings(max_examples=200, deadline=None)
@given(data=json_values)
def test_any_value_against_every_schema(data):
    for name in SCHEMAS:
        _agree(engine_schema(name), data)
