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
    "formulas",
    "import",
    "infer",
    "overlay",
    "guidance",
    "record",
    "json-schema-subset",
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
        if isinstance(data, dict) and "formulas" in data:
            return "formulas"
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


# -- the quick check of a workload schema: the subset of JSON Schema never says yes where the
# meta-schema of JSON Schema 2020-12 says no ------------------------------------------------------

WORKLOAD_SCHEMA = json.loads((ROOT / "knowledge" / "workload.schema.json").read_text())
SUBSET = engine_schema("json-schema-subset")
KEYWORDS = SUBSET["$defs"]["schema"]["propertyNames"]["anyOf"][0]["enum"] + ["$ref", "$defs", "x-unit", "bogus"]
keyword_values = st.one_of(
    json_values,
    st.sampled_from(
        ["(", "[a-", "^x-", "a{2,1}", "string", "integer", "https://json-schema.org/draft/2020-12/schema"]
        + ["http://example.com/a#frag", "not a uri", "https://gpusizer.invalid/schemas/w.json", "#/$defs/x"]
    ),
    st.lists(st.sampled_from(["string", "number", "object", "strin", "a", "a"]), max_size=3),
    st.sampled_from([-1, 0, 0.5, 2.0, -0.0, 1e300, True]),
    st.dictionaries(st.sampled_from(["a", "pattern", "type"]), st.sampled_from([{}, {"type": 1}, True, 3]), max_size=2),
)


def _schema_nodes(node, out):
    if isinstance(node, dict):
        out.append(node)
        props = node.get("properties")
        for v in props.values() if isinstance(props, dict) else ():
            _schema_nodes(v, out)
        for k in ("additionalProperties", "items", "not"):
            _schema_nodes(node.get(k), out)
        for k in ("anyOf", "allOf", "oneOf"):
            members = node.get(k)
            for v in members if isinstance(members, list) else ():
                _schema_nodes(v, out)
    return out


@st.composite
def mutated_workload_schemas(draw):
    schema = copy.deepcopy(WORKLOAD_SCHEMA)
    for _ in range(draw(st.integers(1, 3))):
        nodes = _schema_nodes(schema, [])
        node = draw(st.sampled_from(nodes))
        key = draw(st.sampled_from(KEYWORDS + list(node)))
        if draw(st.integers(0, 4)) == 0:
            node.pop(key, None)
        else:
            node[key] = draw(keyword_values)
    return schema


def test_the_shipped_workload_schema_takes_the_quick_check():
    from engine.load.workload import _plainly_valid

    assert _plainly_valid(WORKLOAD_SCHEMA)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=mutated_workload_schemas())
def test_the_quick_check_never_passes_what_the_meta_schema_refuses(schema):
    import jsonschema

    from engine.load.workload import _plainly_valid

    if _plainly_valid(schema):
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(
    "key, value",
    [
        ("type", "strin"),
        ("type", ["string", "string"]),
        ("type", []),
        ("pattern", "("),
        ("minimum", "1"),
        ("minLength", -1),
        ("minLength", 1.5),
        ("multipleOf", 0),
        ("required", ["a", "a"]),
        ("anyOf", []),
        ("properties", {"a": 3}),
        ("items", 3),
        ("$id", "http://example.com/a#frag"),
    ],
)
def test_the_quick_check_refuses_each_broken_keyword(key, value):
    """Each of these is invalid under the meta-schema, and the quick check says so (jsonschema then
    gives the message)."""
    import jsonschema

    from engine.load.workload import _plainly_valid

    schema = copy.deepcopy(WORKLOAD_SCHEMA)
    schema["properties"]["name"][key] = value
    assert not _plainly_valid(schema)
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema(schema)
