"""Engine behaviour: isolation, determinism, failures in rules, the sandbox, the API."""

import json
import os
import subprocess
import sys

import pytest

from corpus import ROOT
from engine import InputError, Recommender, RuleError, recommend
from engine.lang import expr as X
from engine.plan.rulebase import load_rulebase

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _doc(result):
    from engine.report.document import document

    return json.dumps(document(result), sort_keys=True)


def test_guide_figure_70b_fp16_is_140_gb(recommender):
    r = recommender.recommend(
        {"name": "g", "task": "inference", "model": {"params": "70B", "weights_only": True}, "precision": "fp16"}
    )
    assert r["memory.weights_gb"] == pytest.approx(140.0)
    assert r.explain("memory.weights_gb")["rule"] == "weights-memory"


def test_sessions_are_isolated_in_any_order(recommender):
    first = [_doc(recommender.recommend(p)) for p in EXAMPLES]
    again = [_doc(recommender.recommend(p)) for p in reversed(EXAMPLES)][::-1]
    assert first == again
    other = Recommender(rulebase=recommender.rulebase)
    assert [_doc(other.recommend(p)) for p in EXAMPLES] == first


def test_output_is_byte_identical_across_processes(tmp_path):
    env = dict(os.environ)
    outs = []
    for _ in range(2):
        p = subprocess.run(
            [sys.executable, "-m", "engine", "recommend", "examples/llama2-70b-chat.yaml", "--format", "json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
        )
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout)
    assert outs[0] == outs[1]


# where an input comes from: the workload, a default, the catalog, an imported document (a model's
# configuration) or an inference from other inputs
INPUT_ORIGINS = ("workload", "default", "catalog", "config", "inferred")


def test_every_conclusion_is_explained(recommender):
    for path in EXAMPLES:
        r = recommender.recommend(path)
        for attr in r.conclusions:
            step = r.explain(attr)
            assert step["binding"], attr
            for b in step["binding"]:
                assert b["sources"], (attr, b["rule"])
                assert b["summary"]
            # every contribution's rule is told once, in the step's rules; a beaten one does not repeat it
            assert set(step["rules"]) == {x["rule"] for x in step["binding"] + step["beaten"]}, attr
            for x in step["rules"].values():
                assert x["summary"] and x["sources"] and x["file"], attr
            for x in step["beaten"]:
                assert "sources" not in x and "summary" not in x, (attr, x["rule"])
        # the graph reaches the inputs from every conclusion
        g = r.graph
        for attr in r.conclusions:
            import networkx as nx

            ancestors = nx.ancestors(g, f"v:{attr}")
            assert any(g.nodes[n].get("origin") in INPUT_ORIGINS for n in ancestors), attr


def test_max_policy_keeps_the_losing_contribution(recommender):
    r = recommender.recommend(ROOT / "examples" / "gpt2-finetune-personal.yaml")
    step = r.explain("ram.base_gb")
    assert step["value"] == 64 and step["rule"] == "ram-training-floor"
    assert ("ram-personal-tier", 32) in [(b["rule"], b["value"]) for b in step["beaten"]]


def _broken_rulebase(tmp_path, then_expr):
    import shutil

    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    (rules / "memory" / "divide.yaml").write_text(
        "id: divide\nsummary: Divides by zero on purpose.\nwhen:\n  - model.params: {gt: 0}\n"
        f"then:\n  memory.overhead_gb: {then_expr}\nsource: {{doc: test}}\n"
    )
    (rules / "memory" / "memory-overhead.yaml").unlink()
    (rules / "memory" / "memory-overhead.test.yaml").unlink()
    return load_rulebase([rules])


def test_an_error_inside_a_rule_names_the_rule(tmp_path):
    rb = _broken_rulebase(tmp_path, "model.params / 0")
    with pytest.raises(RuleError) as info:
        Recommender(rulebase=rb).recommend(ROOT / "examples" / "gpt2-finetune-personal.yaml")
    text = info.value.render()
    assert "rule 'divide' failed while firing: division by zero" in text
    assert "rules/memory/divide.yaml:" in text


def test_a_durable_action_that_fails_is_a_rule_error_and_the_engine_goes_on(recommender, monkeypatch):
    """gpusizer runs durable-rules' actions itself (DurableCompiled.send): one that fails on what the
    network matched (here told to read an alias its match lacks) raises, the session's states are freed,
    and the next recommendation is answered as before."""
    compiled = recommender.runner.compiled
    if not hasattr(compiled, "actions"):
        pytest.skip("only the durable-rules backend runs actions")
    path = ROOT / "examples" / "llama2-70b-chat.yaml"
    before = recommender.recommend(path)
    broken = {
        shard: {name: a and (a[0], (*a[1], ("g", "no-such-alias"))) for name, a in table.items()}
        for shard, table in compiled.actions.items()
    }
    monkeypatch.setattr(compiled, "actions", broken)
    open_before = dict(compiled.open_sids)
    recommender.runner.forget()  # else the runner knows every rule's firings from the run before, and matches none
    with pytest.raises(RuleError, match="a rule action failed on what durable-rules matched: KeyError"):
        recommender.recommend(path)
    assert compiled.open_sids == open_before  # the failed session was closed
    monkeypatch.undo()
    recommender.runner.forget()
    again = recommender.recommend(path)
    assert again.values == before.values


@pytest.mark.parametrize(
    "source",
    [
        "().__class__",
        "x.__class__",
        "__import__('os')",
        "open('f')",
        "lambda: 1",
        "x[0]",
        "[i for i in x]",
        "getattr(x, 'y')",
        "x.y()",
        "f'{x}'",
        "(yield)",
        "x := 1",
    ],
)
def test_sandbox_rejects_unsafe_expressions(source):
    with pytest.raises(X.ExprError):
        X.parse(source)


def test_sandbox_bounds_runaway_arithmetic():
    e = X.parse("2 ** 10 ** 10")
    with pytest.raises(X.ExprError):
        e.bind(lambda n: None)({})


def test_expression_functions():
    env = {}
    val = lambda s: X.parse(s).bind(lambda n: None)(env)  # noqa: E731
    assert val("round_up_to(100, [64, 128, 256])") == 128
    assert val("round_up_to(300, [64, 128, 256])") == 256
    assert val("next_pow2(5)") == 8 and val("next_pow2(8)") == 8
    assert val("ceil(140.00000000001)") == 140 and val("ceil(2.5)") == 3
    assert val("max([1, 5, 2])") == 5 and val("min(3, 2)") == 2
    assert val("text(153.72502)") == "153.7" and val("1 if true else 2") == 1


@pytest.mark.parametrize(
    "args",
    [
        "1, 5, 2",
        "1, 1.0, 0.5",
        "1.0, 1, 2",
        "2, 2.0, 2",
        "3, true, 2",
        "-0.0, 0, 0.0",
        "1, 2, 'a'",
        "1, 2, null",
        "1, 2, [3]",
        "1, 2, 1e308 * 10",
        "1, 2, 3, 4, 5, 6",
        # two numbers take a path of their own
        "1, 2",
        "2.0, 2",
        "2, 2.0",
        "-0.0, 0",
        "1, true",
        "false, 1",
        "1, 'a'",
        "null, 1",
        "1, 1e308 * 10",
    ],
)
@pytest.mark.parametrize("fn", ["min", "max"])
def test_min_and_max_of_several_numbers_take_a_short_path_that_gives_the_long_paths_answer(fn, args):
    """min and max of two or more finite numbers skip the checks the long path makes of each argument; what
    they give (which of equal numbers, 1 or 1.0) or raise is the long path's, that of a list of the same."""

    def outcome(source):
        try:
            v = X.parse(source).bind(lambda n: None)({})
            return ("value", type(v).__name__, repr(v))
        except X.ExprError as exc:
            return ("error", exc.message.replace(f"{fn}([", f"{fn}("))

    assert outcome(f"{fn}({args})") == outcome(f"{fn}([{args}])")


def test_api_takes_paths_text_and_mappings_apart(recommender):
    text = (ROOT / "examples" / "llama2-70b-chat.yaml").read_text()
    a = recommender.recommend(ROOT / "examples" / "llama2-70b-chat.yaml")
    b = recommender.recommend_text(text)
    c = recommend(str(ROOT / "examples" / "llama2-70b-chat.yaml"))
    assert a["gpu.model"] == b["gpu.model"] == c["gpu.model"]
    # a string is always a path, never guessed to be YAML text
    with pytest.raises(InputError, match="file not found"):
        recommender.recommend("name: x\ntask: inference\n")
    with pytest.raises(InputError):
        recommender.recommend({"name": "x", "task": "inference"})


def test_python_m_engine_runs():
    p = subprocess.run([sys.executable, "-m", "engine", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.startswith("gpusizer ")


def test_engine_holds_no_domain_knowledge():
    words = ("nvlink", "vram", "h100", "a100", "rtx", "swappiness")
    for path in (ROOT / "engine").rglob("*.py"):
        code = path.read_text().lower()
        for w in words:
            assert w not in code, f"{path.name} mentions '{w}'"


def test_tiny_and_huge_numbers_reach_durable_rules_safely(recommender):
    """durable-rules rejects 1e-05-style JSON numbers (and then crashed the process)."""
    r = recommender.recommend(
        {"name": "tiny", "task": "training", "model": {"params": 2, "weights_only": True}, "dataset": {"size_gb": 0.0}}
    )
    # fp16 training defaults to mixed precision: fp32 weights, 4 bytes each
    assert r["memory.weights_gb"] == pytest.approx(8e-9)
    r = recommender.recommend({"name": "huge", "task": "inference", "model": {"params": 1e16, "weights_only": True}})
    assert r["memory.weights_gb"] == pytest.approx(2e7)


ANY_RULE = """id: any-demo
summary: Reserves 7 GB of scratch storage for HPC work, named as a scenario or implied by FP64.
when:
  - any:
      - [{scenario: hpc}]
      - [{needs_fp64: true}]
then:
  storage.required_gb: 7
source: {doc: test, note: exercises 'any'}
"""


def test_any_conditions_fire_once_when_several_alternatives_hold(tmp_path):
    from corpus import run_cli

    site = tmp_path / "site"
    (site / "storage").mkdir(parents=True)
    (site / "storage" / "any-demo.yaml").write_text(ANY_RULE)

    def storage(workload, *extra):
        code, out, err = run_cli(["recommend", workload, "--format", "json", *extra])
        assert code == 0, err
        c = json.loads(out)["conclusions"]["storage.required_gb"]
        return c["value"], [k["rule"] for k in c["contributions"]]

    both = "examples/hpc-fp64-bert.yaml"  # scenario hpc and needs_fp64 true
    base, _ = storage(both)
    value, rules = storage(both, "--rules", str(site))
    assert value == pytest.approx(base + 7) and rules.count("any-demo") == 1
    neither = "examples/llama2-70b-chat.yaml"
    base, _ = storage(neither)
    value, rules = storage(neither, "--rules", str(site))
    assert value == pytest.approx(base) and "any-demo" not in rules
    code, out, err = run_cli(["why-not", neither, "storage.required_gb=1", "--rules", str(site), "--format", "json"])
    assert code == 0, err


EMPTY_RULE = """id: empty-demo
summary: Reserves 3 GB of scratch storage when the workload excludes no GPU, 5 GB when it excludes some.
when:
  - request.gpu_exclude: {empty: %s}
then:
  storage.required_gb: %d
source: {doc: test, note: exercises 'empty'}
"""


@pytest.mark.parametrize("empty, gb", [("true", 3), ("false", 5)])
def test_empty_tests_whether_a_list_has_members(tmp_path, empty, gb):
    from corpus import run_cli

    site = tmp_path / "site"
    (site / "storage").mkdir(parents=True)
    (site / "storage" / "empty-demo.yaml").write_text(EMPTY_RULE % (empty, gb))
    fired = {}
    for workload in ("examples/llama2-70b-chat.yaml", "examples/cluster-llama2-70b-pretrain.yaml"):
        code, out, err = run_cli(["recommend", workload, "--format", "json", "--rules", str(site)])
        assert code == 0, err
        contribs = json.loads(out)["conclusions"]["storage.required_gb"]["contributions"]
        fired[workload] = [k["value"] for k in contribs if k["rule"] == "empty-demo"]
    # the chat example excludes nothing, the cluster example excludes AMD and the B200/B300 boards
    assert fired == (
        {"examples/llama2-70b-chat.yaml": [3], "examples/cluster-llama2-70b-pretrain.yaml": []}
        if empty == "true"
        else {"examples/llama2-70b-chat.yaml": [], "examples/cluster-llama2-70b-pretrain.yaml": [5]}
    )


def test_empty_on_a_scalar_is_a_load_error(tmp_path):
    from corpus import run_cli

    site = tmp_path / "site"
    (site / "storage").mkdir(parents=True)
    (site / "storage" / "empty-demo.yaml").write_text(
        EMPTY_RULE.replace("request.gpu_exclude", "batch_size") % ("true", 3)
    )
    code, out, err = run_cli(["validate", "--rules", str(site)])
    assert code == 1 and "'empty' tests a list attribute; 'batch_size' is not a list (integer)" in out + err


def test_first_by_ranks_before_the_key():
    from engine.lang.ir import Attribute
    from engine.run.combine import Contribution, combine

    attr = Attribute(name="pick", type="record", description="d", combine="argmin", key=("cost",), first_by="outside")
    values = [
        {"id": "cheap", "cost": 1, "outside": True},
        {"id": "liked", "cost": 9, "outside": False},
        {"id": "liked-dear", "cost": 12, "outside": False},
    ]
    contribs = [Contribution(rule=f"r{i}", value=v, firing=i) for i, v in enumerate(values)]
    out = combine(attr, contribs)
    assert out.value["id"] == "liked" and "lowest outside first" in out.note
    plain = Attribute(name="pick", type="record", description="d", combine="argmin", key=("cost",))
    assert combine(plain, contribs).value["id"] == "cheap"


def test_within_keeps_the_candidates_near_the_best_of_the_first_group():
    from engine.lang.ir import Attribute
    from engine.run.combine import Contribution, combine

    attr = Attribute(
        name="roomiest",
        type="record",
        description="d",
        combine="argmax",
        key=("room",),
        first_by="rank",
        within=("cost", 2.0),
    )
    values = [
        {"id": "small", "room": 10, "cost": 100, "rank": 0},
        {"id": "large", "room": 30, "cost": 190, "rank": 0},
        {"id": "huge-but-dear", "room": 90, "cost": 250, "rank": 0},
        {"id": "huge-but-ranked-lower", "room": 99, "cost": 50, "rank": 1},
    ]
    out = combine(attr, [Contribution(rule=f"r{i}", value=v, firing=i) for i, v in enumerate(values)])
    assert out.value["id"] == "large"
    assert "the 2 with the lowest rank and cost at most 2 x the lowest" in out.note


def test_within_keeps_the_candidates_near_the_best_of_those_first_on_the_keys_yes_no_fields():
    """Without first_by, the first group is the candidates that come first on the boolean fields the key begins
    with (false first); the factor applies among them, then the key ranks them."""
    from engine.lang.ir import Attribute
    from engine.run.combine import Contribution, combine

    attr = Attribute(
        name="roomiest",
        type="record",
        description="d",
        combine="argmax",
        fields={"id": "string", "outside": "boolean", "over": "boolean", "room": "number", "cost": "number"},
        key=("outside", "over", "room"),
        within=("cost", 2.0),
    )
    values = [
        {"id": "small", "outside": False, "over": False, "room": 10, "cost": 100},
        {"id": "large", "outside": False, "over": False, "room": 30, "cost": 190},
        {"id": "huge-but-dear", "outside": False, "over": False, "room": 90, "cost": 250},
        {"id": "huge-but-over-budget", "outside": False, "over": True, "room": 99, "cost": 50},
        {"id": "huge-but-outside", "outside": True, "over": False, "room": 99, "cost": 40},
    ]
    out = combine(attr, [Contribution(rule=f"r{i}", value=v, firing=i) for i, v in enumerate(values)])
    assert out.value["id"] == "large"
    assert "the 2 that come first on outside, over (false first), with cost at most 2 x the lowest of them" in out.note
    # a leading number field makes no group: every candidate within the factor of the cheapest competes
    plain = Attribute(
        name="roomiest",
        type="record",
        description="d",
        combine="argmax",
        fields=attr.fields,
        key=("room", "outside"),
        within=("cost", 2.0),
    )
    out = combine(plain, [Contribution(rule=f"r{i}", value=v, firing=i) for i, v in enumerate(values)])
    assert out.value["id"] == "huge-but-over-budget"


@pytest.mark.parametrize(
    "within, message",
    [
        ("  ram.base_gb:\n", "'within' needs combine: argmin or argmax"),
        ("  gpu.roomiest:\n", "the record's fields lack 'price', which the combine policy compares"),
    ],
)
def test_within_is_checked_when_the_rulebase_loads(tmp_path, within, message):
    import shutil

    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    path = rules / "_attributes.yaml"
    text = path.read_text(encoding="utf-8")
    if within.strip() == "ram.base_gb:":
        text = text.replace(within, within + "    within: {field: total_gb, factor: 2}\n", 1)
    else:
        text = text.replace("    within: {field: cost, factor: 2}\n", "    within: {field: price, factor: 2}\n", 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_rulebase([rules])
    assert message in str(info.value.render())


@pytest.mark.parametrize(
    "error, says",
    [
        (
            ImportError("durable_rules_engine.cpython-313.so: undefined symbol: PyEval_CallObject"),
            "vendor/durable_rules-2.0.28+gpusizer.1.tar.gz",
        ),
        (ModuleNotFoundError("No module named 'durable'", name="durable"), "is not installed for this Python"),
    ],
)
def test_a_rule_engine_that_cannot_load_is_a_clear_error(monkeypatch, error, says):
    """durable-rules' C extension fails to import on Python 3.13+ when built from PyPI: exit 69, the fix named."""
    import engine.backends.durable as durable
    from corpus import run_cli

    monkeypatch.setattr(durable, "_IMPORT_ERROR", error)
    code, out, err = run_cli(["recommend", "examples/llama2-70b-chat.yaml"], shared=False)
    assert code == 69 and out == ""
    assert says in err and "help: " in err and "Traceback" not in err


def test_a_rulebase_is_planned_again_only_when_what_it_is_read_from_changes(tmp_path, monkeypatch):
    """load_rulebase reads every file each time and returns the rulebase already planned from the same
    bytes of the same directories under the same limits, while it is held: any change plans anew."""
    import gc

    from conformance.conftest import hit, write_rulebase
    from engine.plan import rulebase as planned

    rules, knowledge = write_rulebase(tmp_path / "a", {"r1": hit("r1", "  - x: {gt: 1}")})
    first = load_rulebase([rules], [knowledge])
    assert load_rulebase([rules], [knowledge]) is first

    # one byte of one rule
    victim = rules / "t" / "r1.yaml"
    text = victim.read_text(encoding="utf-8")
    victim.write_text(text.replace("x: {gt: 1}", "x: {gt: 2}"), encoding="utf-8")
    changed = load_rulebase([rules], [knowledge])
    assert changed is not first and changed.sha256 != first.sha256
    victim.write_text(text, encoding="utf-8")
    assert load_rulebase([rules], [knowledge]) is first

    # a file added, the same files under other directories, another limit
    (rules / "t" / "r2.yaml").write_text(hit("r2", "  - x: {gt: 3}"), encoding="utf-8")
    assert set(load_rulebase([rules], [knowledge]).rules) == {"r1", "r2"}
    (rules / "t" / "r2.yaml").unlink()
    rules_b, knowledge_b = write_rulebase(tmp_path / "b", {"r1": hit("r1", "  - x: {gt: 1}")})
    elsewhere = load_rulebase([rules_b], [knowledge_b])
    assert elsewhere is not first and elsewhere.rule_dirs == (rules_b,) and elsewhere.sha256 == first.sha256
    monkeypatch.setenv("GPUSIZER_MAX_NODES", "2000000")
    assert load_rulebase([rules], [knowledge]) is not first
    monkeypatch.delenv("GPUSIZER_MAX_NODES")

    # a broken file is reported every time, never answered from what was held
    victim.write_text(text + "  - [unclosed\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(InputError, match=r"r1\.yaml"):
            load_rulebase([rules], [knowledge])
    victim.write_text(text, encoding="utf-8")
    assert load_rulebase([rules], [knowledge]) is first

    # nothing is kept once no one holds it
    sha = first.sha256
    del first, changed, elsewhere
    gc.collect()
    assert all(rb.rule_dirs != (rules,) for rb in planned._HELD.values())
    assert load_rulebase([rules], [knowledge]).sha256 == sha


def test_a_process_that_loads_several_rulebases_parses_each_file_once_and_never_changes_one(rulebase, monkeypatch):
    """Once a process holds a rulebase, a load keeps the files it parses for the next (tests/test_authoring's
    lint cases, the bad-rulebase goldens and a server's overlays load the shipped files again and again); a
    parsed document then serves many loads, so loading may never change one."""
    import copy

    from engine.load import loader

    parsed: list[tuple[object, object, object]] = []
    real = loader.parse

    def parse(text, file, *args, **kwargs):
        doc = real(text, file, *args, **kwargs)
        parsed.append((doc, copy.deepcopy(doc.data), copy.deepcopy(doc.positions)))
        return doc

    monkeypatch.setattr(loader, "parse", parse)
    loader.PARSED.clear()
    overlays = ROOT / "tests" / "overlays"
    site = load_rulebase([ROOT / "rules", overlays / "site-rules"], [ROOT / "knowledge", overlays / "site-knowledge"])
    assert site is not rulebase and len(parsed) > 300
    changed = [doc.file for doc, data, positions in parsed if doc.data != data or doc.positions != positions]
    assert not changed, f"loading changed these parsed files: {changed}"
    parsed.clear()
    rules_only = load_rulebase([ROOT / "rules", overlays / "site-rules"], [ROOT / "knowledge"])
    assert rules_only.sha256 not in (site.sha256, rulebase.sha256) and not parsed


def test_the_cyclic_collector_pauses_while_a_rulebase_loads_and_resumes_as_it_was(tmp_path):
    import gc

    from conformance.conftest import hit, write_rulebase

    collections = []

    def seen(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    for enabled in (True, False):
        rules, knowledge = write_rulebase(tmp_path / str(enabled), {"r1": hit("r1", "  - x: {gt: 1}")})
        gc.enable() if enabled else gc.disable()
        gc.callbacks.append(seen)
        try:
            load_rulebase([rules], [knowledge])
            assert not collections and gc.isenabled() == enabled
        finally:
            gc.callbacks.remove(seen)
            gc.enable()


@pytest.mark.parametrize("example", ["large-model-training-llama2-13b.yaml", "vision-vit-b16-finetune.yaml"])
def test_durable_asserts_only_the_catalog_items_its_patterns_can_match(example, monkeypatch):
    """A catalog every pattern of a ruleset joins by equality (an activation profile by the model's family and
    mode) has only the items those values allow asserted, as their rules' steps come; the answer is the python
    backend's, byte for byte."""
    import engine.backends.durable as D
    from engine.backends import get_backend

    asserted: list[dict] = []
    real = D.DurableSession._assert

    def counting(self, shard, facts):
        asserted.extend(f for f in facts if f.get("t") == "i")
        real(self, shard, facts)

    monkeypatch.setattr(D.DurableSession, "_assert", counting)
    path = ROOT / "examples" / example
    with Recommender(backend=get_backend("durable")) as rec:
        durable = rec.recommend(path)
        shards = rec.runner.compiled.shards
        whole = sum(len(rec.rulebase.catalogs[c].items) for s in shards for c in s.catalogs)
        keyed = {c for s in shards for c in s.keyed()}
    with Recommender(backend=get_backend("python")) as rec:
        python = rec.recommend(path)
    assert _doc(durable) == _doc(python)
    assert "activation_profile" in keyed and "model" in keyed
    by_catalog: dict[str, set] = {}
    for f in asserted:
        by_catalog.setdefault(f["c"], set()).add(f["f_id"])
    # of 66 vision and 63 text profiles, those of the run's model; of 43 models, the one run
    assert 0 < len(by_catalog.get("activation_profile", ())) + len(by_catalog.get("vision_profile", ())) <= 8
    assert len(by_catalog.get("model", ())) <= 1
    assert len(asserted) < whole / 2, (len(asserted), whole)


@pytest.mark.parametrize("example", ["serving-llama3-70b-200-users.yaml", "large-model-training-llama2-13b.yaml"])
def test_lets_kept_from_the_rules_last_firing_are_those_a_firing_alone_computes(example):
    """A firing takes the lets of the groups that read none of the items that changed since the rule's
    last firing from that firing's frame (session._Run._frame); each firing of a run, fired again alone
    in a fresh run on the same final values (every group computed), has the same lets and outputs."""
    from engine.run.combine import canonical
    from engine.run.session import _Run

    with Recommender() as rec:
        rb = rec.rulebase
        outcome = rec.runner.run(rec.load(ROOT / "examples" / example))
    reused = 0
    last: dict[str, dict] = {}
    for firing in outcome.firings:
        rule = rb.rules[firing.rule]
        items = {a: rb.catalogs[c].items[i] for a, (c, i) in firing.items.items()}
        alone = _Run(rb, {})
        alone.values = dict(outcome.values)
        alone.fire(rule, rule.variants[0].required, items)
        (again,) = alone.firings
        assert canonical(again.lets_dict()) == canonical(firing.lets_dict()), firing.rule
        assert canonical(again.outputs) == canonical(firing.outputs), firing.rule
        before = last.get(firing.rule)
        if before is not None and any(before[a] == firing.items[a] for a in firing.items):
            reused += 1
        last[firing.rule] = dict(firing.items)
    assert reused > 20, reused  # the runs do take lets from earlier firings of their rules
