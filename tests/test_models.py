"""Models as people have them: a config.json (by path or from the local Hugging Face cache), a
catalog name, or numbers by hand - read, completed by inference, and refused when they cannot be
sized (knowledge/model_families.yaml, knowledge/model_inference.yaml, engine/load/imports.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.errors import ExitCode, InputError

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
HF = FIXTURES / "hf-configs"
CONFIGS = json.loads((FIXTURES / "model-configs.json").read_text())
COUNTS = json.loads((HF / "param_counts.json").read_text())


def load(recommender, model, **rest):
    return recommender.load({"name": "t", "task": rest.pop("task", "inference"), "model": model, **rest})


def write(tmp_path, name, config):
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(config))
    return p


@pytest.mark.parametrize("row", CONFIGS, ids=[r["name"] for r in CONFIGS])
def test_parameter_count_is_what_transformers_builds(recommender, tmp_path, row):
    """Every model_type and its code paths (biases, sliding layers, sparse MoE steps, latent
    attention, vision towers): params, the input embedding tables and the experts, exactly."""
    w = load(recommender, {"config": str(write(tmp_path, row["name"], row["config"]))})
    got = {k: w.inputs[f"model.{k}"].value for k in ("params", "embedding_params", "expert_params")}
    assert got == {
        "params": row["transformers_count"],
        "embedding_params": row["embedding_params"],
        "expert_params": row["expert_params"],
    }
    assert w.inputs["model.params"].origin == "config"


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_published_config_files(recommender, name):
    """The published config.json files: transformers' exact count and its parts."""
    w = load(recommender, {"config": str(HF / name)})
    row = COUNTS[name]
    assert w.inputs["model.params"].value == row["transformers_count"]
    assert w.inputs["model.expert_params"].value == row["expert_params"]
    assert w.inputs["model.embedding_params"].value == row["embedding_params"]
    assert w.inputs["model.tied_embeddings"].value is row["tied_embeddings"]


# the publishers' own figures as they print them (model cards; which were verified: SOURCES.md), and
# one unit of their last digit (publishers round or truncate)
PUBLISHED = {
    "meta-llama--Llama-3.1-8B.json": (8.03e9, 0.01e9),
    "meta-llama--Llama-3.2-3B.json": (3.21e9, 0.01e9),
    "Qwen--Qwen2.5-3B.json": (3.09e9, 0.01e9),
    "Qwen--Qwen2.5-7B.json": (7.61e9, 0.01e9),
    "Qwen--Qwen3-4B.json": (4.0e9, 0.1e9),
    "Qwen--Qwen3-8B.json": (8.2e9, 0.1e9),
    "Qwen--Qwen3-32B.json": (32.8e9, 0.1e9),
    "Qwen--Qwen3-30B-A3B.json": (30.5e9, 0.1e9),
    "openai--gpt-oss-20b.json": (20.91e9, 0.01e9),
    "deepseek-ai--DeepSeek-R1.json": (671e9, 1e9),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_parameter_counts(recommender, name):
    count, unit = PUBLISHED[name]
    w = load(recommender, {"config": str(HF / name)})
    assert abs(w.inputs["model.params"].value - count) <= unit


def test_config_keys_and_their_origins(recommender):
    w = load(recommender, {"config": str(HF / "meta-llama--Llama-3.1-8B.json")})
    i = w.inputs
    assert (i["model.family"].value, i["model.kind"].value, i["model.mlp"].value) == ("llama", "decoder", "swiglu")
    assert (i["model.layers"].value, i["model.kv_heads"].value, i["model.head_dim"].value) == (32, 8, 128)
    assert i["model.layers"].detail.endswith("meta-llama--Llama-3.1-8B.json: num_hidden_layers")
    assert "embeddings 525,336,576 + 32 layers x 218,112,000" in i["model.params"].detail
    assert i["model.max_position"].value == 131072


@pytest.mark.parametrize(
    ("name", "sliding", "window"),
    [
        ("gemma2-2b", 13, 4096),
        ("gemma3-1b", 22, 512),
        ("gpt-oss-20b", 12, 128),
        ("qwen2-sliding", 8, 4096),
        ("gemma3-pattern", 11, 512),
        ("mistral-7b-v0.1", 32, 4096),
    ],
)
def test_sliding_window_layers(recommender, tmp_path, name, sliding, window):
    row = next(r for r in CONFIGS if r["name"] == name)
    w = load(recommender, {"config": str(write(tmp_path, name, row["config"]))})
    assert (w.inputs["model.sliding_window_layers"].value, w.inputs["model.sliding_window"].value) == (sliding, window)


def test_latent_attention_and_moe_keys(recommender):
    i = load(recommender, {"config": str(HF / "deepseek-ai--DeepSeek-R1.json")}).inputs
    assert (i["model.kv_lora_rank"].value, i["model.qk_rope_head_dim"].value, i["model.head_dim"].value) == (
        512,
        64,
        192,
    )
    assert (i["model.experts"].value, i["model.experts_per_token"].value, i["model.dense_layers"].value) == (256, 8, 3)
    assert i["model.shared_expert_intermediate_size"].value == 2048
    assert i["model.quantization"].value == "fp8"


def test_explicit_keys_beside_the_config_win(recommender):
    w = load(recommender, {"config": str(HF / "Qwen--Qwen3-8B.json"), "kv_heads": 4, "layers": 2})
    assert (w.inputs["model.kv_heads"].value, w.inputs["model.kv_heads"].origin) == (4, "workload")
    assert w.inputs["model.layers"].value == 2
    assert w.inputs["model.params"].value == COUNTS["Qwen--Qwen3-8B.json"]["transformers_count"]  # as published


def test_config_path_is_relative_to_the_workload_file(recommender, tmp_path):
    (tmp_path / "configs").mkdir()
    shutil.copy(HF / "Qwen--Qwen2.5-7B.json", tmp_path / "configs" / "qwen.json")
    wl = tmp_path / "w.yaml"
    wl.write_text("name: q\ntask: inference\nmodel: {config: configs/qwen.json}\n")
    r = recommender.recommend(wl)
    assert r["model.params"] == 7615616512
    assert r["memory.vram_required_gb"] > 15


def test_checkpoint_format_becomes_the_inference_precision(recommender):
    i = load(recommender, {"config": str(HF / "openai--gpt-oss-20b.json")}).inputs
    assert (i["precision"].value, i["precision"].origin) == ("mxfp4", "inferred")
    assert i["model.quantized_modules"].value == "experts"
    i = load(recommender, {"config": str(HF / "openai--gpt-oss-20b.json")}, task="training").inputs
    assert i["precision"].origin == "default"
    i = load(recommender, {"config": str(HF / "openai--gpt-oss-20b.json")}, precision="bf16").inputs
    assert (i["precision"].value, i["precision"].origin) == ("bf16", "workload")


def test_mxfp4_sizes_the_experts_in_four_bits(recommender):
    r = recommender.recommend(
        {"name": "g", "task": "inference", "model": {"config": str(HF / "openai--gpt-oss-20b.json")}}
    )
    # 19.1B expert weights at 4.25 bits + 1.8B others in bf16
    assert r["memory.weights_gb"] == pytest.approx((19116933120 * 4.25 / 8 + 1797824064 * 2) / 1e9)


def test_kv_cache_bytes_per_token(recommender):
    def per_token(config, **kw):
        return recommender.recommend({"name": "k", "task": "inference", "model": {"config": str(HF / config)}, **kw})[
            "model.kv_cache_bytes_per_token"
        ]

    assert per_token("deepseek-ai--DeepSeek-R1.json", precision="bf16") == 61 * (512 + 64) * 2
    assert per_token("meta-llama--Llama-3.1-8B.json", precision="bf16") == 32 * 2 * 8 * 128 * 2
    assert per_token("meta-llama--Llama-3.1-8B.json", precision="bf16", kv_cache_dtype="fp8") == 32 * 2 * 8 * 128


# -- errors ---------------------------------------------------------------------------------------


def refused(recommender, model, **rest):
    with pytest.raises(InputError) as e:
        load(recommender, model, **rest)
    assert e.value.exit_code == ExitCode.INVALID
    return str(e.value)


@pytest.mark.parametrize(
    "quantization,name",
    [
        ({"quant_method": "gptq", "bits": 4}, "gptq-int4"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 32}, "gptq-int4-g32"),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, "gptq-int8-col"),
        ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64}, "awq-int4-g64"),
    ],
)
def test_gptq_and_awq_checkpoints_name_their_precision(recommender, tmp_path, quantization, name):
    """The name is written by templates in the mapping's lets (a let with '{' is text, as in a rule)."""
    cfg = dict(json.loads((HF / "meta-llama--Llama-3.1-8B.json").read_text()), quantization_config=quantization)
    w = load(recommender, {"config": str(write(tmp_path, "q", cfg))})
    assert w.inputs["model.quantization"].value == name


@pytest.mark.parametrize(
    "quantization,said",
    [
        ({"quant_method": "hqq"}, "quant_method 'hqq' is not a format"),
        ({"quant_method": "modelopt", "quant_algo": "W4A8"}, "quant_method 'modelopt' with quant_algo W4A8 is not"),
    ],
)
def test_an_unsized_quantization_is_named(recommender, tmp_path, quantization, said):
    cfg = dict(json.loads((HF / "meta-llama--Llama-3.1-8B.json").read_text()), quantization_config=quantization)
    assert said in refused(recommender, {"config": str(write(tmp_path, "q", cfg))})


def test_unsupported_model_type_lists_the_supported_ones(recommender, tmp_path):
    msg = refused(recommender, {"config": str(write(tmp_path, "x", {"model_type": "mamba", "hidden_size": 8}))})
    assert "model_type 'mamba' is not supported" in msg
    assert "deepseek_v3" in msg and "gpt_oss" in msg and "qwen3_moe" in msg and "gemma3_text" in msg
    assert "give the model's numbers by hand" in msg


def test_a_config_without_model_type(recommender, tmp_path):
    assert "no model_type" in refused(recommender, {"config": str(write(tmp_path, "x", {"hidden_size": 8}))})


def test_missing_config_file(recommender, tmp_path):
    msg = refused(recommender, {"config": str(tmp_path / "nope.json")})
    assert "no such file" in msg


def test_invalid_json_is_reported_in_the_config(recommender, tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"model_type": "llama",\n  "hidden_size": 40,,\n}')
    with pytest.raises(InputError) as e:
        load(recommender, {"config": str(p)})
    d = e.value.first
    assert (d.file, d.line) == (p.as_posix(), 2) and "invalid JSON" in d.message


def test_a_config_that_is_not_an_object(recommender, tmp_path):
    p = tmp_path / "list.json"
    p.write_text("[1, 2]")
    assert "not an object" in refused(recommender, {"config": str(p)})


def test_name_and_config_together(recommender):
    msg = refused(recommender, {"name": "llama-3-8b", "config": str(HF / "meta-llama--Llama-3.1-8B.json")})
    assert "give one" in msg


def test_a_config_value_out_of_range(recommender, tmp_path):
    cfg = json.loads((HF / "meta-llama--Llama-3.1-8B.json").read_text())
    cfg["num_key_value_heads"] = 64
    msg = refused(recommender, {"config": str(write(tmp_path, "kv", cfg))})
    assert "model.kv_heads = 64 is more than model.attention_heads = 32" in msg


def test_a_config_that_breaks_a_formula(recommender, tmp_path):
    cfg = json.loads((HF / "meta-llama--Llama-3.1-8B.json").read_text())
    cfg.pop("head_dim", None)
    cfg["num_attention_heads"] = 0
    msg = refused(recommender, {"config": str(write(tmp_path, "zero", cfg))})
    assert "cannot compute" in msg or "must be" in msg


# -- the local Hugging Face cache -----------------------------------------------------------------


def cache(tmp_path, repo="Qwen/Qwen3-8B", revision="0123abcd", refs=True):
    org, name = repo.split("/")
    base = tmp_path / "hub" / f"models--{org}--{name}"
    snap = base / "snapshots" / revision
    snap.mkdir(parents=True)
    shutil.copy(HF / f"{org}--{name}.json", snap / "config.json")
    if refs:
        (base / "refs").mkdir()
        (base / "refs" / "main").write_text(revision + "\n")
    return tmp_path / "hub"


def test_hf_id_from_hf_hub_cache(recommender, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(cache(tmp_path)))
    w = load(recommender, {"hf": "Qwen/Qwen3-8B"})
    assert w.inputs["model.params"].value == 8190735360
    assert "snapshots/0123abcd/config.json" in w.inputs["model.params"].detail


def test_hf_id_from_hf_home_with_one_snapshot(recommender, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    cache(tmp_path, refs=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert load(recommender, {"hf": "Qwen/Qwen3-8B"}).inputs["model.family"].value == "qwen3"


def test_hf_id_not_in_the_cache_says_where_it_looked(recommender, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    msg = refused(recommender, {"hf": "meta-llama/Llama-3.1-70B"})
    assert "not in the local cache" in msg and str(tmp_path / "empty") in msg
    assert "nothing is downloaded" in msg and "HF_HUB_CACHE" in msg


def test_hf_id_not_in_the_cache_names_the_path_to_fill(recommender, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    msg = refused(recommender, {"hf": "meta-llama/Llama-3.1-70B"})
    assert "models--meta-llama--Llama-3.1-70B/snapshots/*/config.json" in msg and "{org}" not in msg


def test_hf_revision_file_cannot_lead_out_of_the_cache(recommender, tmp_path, monkeypatch):
    secret = tmp_path / "secret"
    secret.mkdir()
    shutil.copy(HF / "Qwen--Qwen3-8B.json", secret / "config.json")
    hub = cache(tmp_path)
    (hub / "models--Qwen--Qwen3-8B" / "refs" / "main").write_text("../../../secret\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert "does not name a snapshot folder" in refused(recommender, {"hf": "Qwen/Qwen3-8B"})


def test_hf_id_with_two_snapshots_and_no_ref(recommender, tmp_path, monkeypatch):
    hub = cache(tmp_path, refs=False)
    (hub / "models--Qwen--Qwen3-8B" / "snapshots" / "other").mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert "2 revisions" in refused(recommender, {"hf": "Qwen/Qwen3-8B"})


def test_hf_id_of_the_wrong_form(recommender):
    assert "not a name of the expected form" in refused(recommender, {"hf": "llama-3-8b"})


def test_hf_and_config_together(recommender):
    assert "give one" in refused(recommender, {"hf": "a/b", "config": "c.json"})


# -- numbers by hand: inference and refusal -------------------------------------------------------

LLAMA2_7B = {
    "layers": 32,
    "hidden_size": 4096,
    "attention_heads": 32,
    "intermediate_size": 11008,
    "mlp": "swiglu",
    "vocab_size": 32000,
}


def test_parameter_count_from_the_shape(recommender):
    w = load(recommender, dict(LLAMA2_7B))
    i = w.inputs
    assert i["model.params"].value == 6738415616 and i["model.params"].origin == "inferred"
    assert "computed from the shape" in i["model.params"].detail
    assert (i["model.kv_heads"].value, i["model.kv_heads"].origin) == (32, "inferred")
    assert (i["model.kind"].value, i["model.family"].value, i["model.head_dim"].value) == ("decoder", "llama", 128)


def test_mlp_width_solved_from_params(recommender):
    shape = {k: v for k, v in LLAMA2_7B.items() if k != "intermediate_size"}
    i = load(recommender, dict(shape, params=6738415616)).inputs
    assert (i["model.intermediate_size"].value, i["model.intermediate_size"].origin) == (11008, "inferred")
    assert "solved from params" in i["model.intermediate_size"].detail


def test_mlp_from_the_family(recommender):
    shape = {k: v for k, v in LLAMA2_7B.items() if k != "mlp"}
    i = load(recommender, dict(shape, family="gemma")).inputs
    assert (i["model.mlp"].value, i["model.mlp"].origin) == ("geglu", "inferred")


def test_a_bare_parameter_count_is_refused(recommender):
    msg = refused(recommender, {"params": "7B"})
    assert "cannot be sized" in msg and "missing kind, layers, hidden_size" in msg
    assert "weights_only" in msg


def test_the_missing_key_is_named(recommender):
    shape = {k: v for k, v in LLAMA2_7B.items() if k != "mlp"}
    msg = refused(recommender, shape)
    assert "cannot be sized, so no memory figure would be the need: missing mlp\n" in msg
    assert "parameter count is unknown: missing params" in msg  # computed from the shape, which lacks the MLP


def test_weights_only_is_an_explicit_opt_in(recommender):
    r = recommender.recommend({"name": "w", "task": "inference", "model": {"params": "70B", "weights_only": True}})
    assert r["memory.peak"]["phase"] == "weights" and r["memory.peak"]["why"].startswith("WEIGHTS ONLY")
    assert any(w.startswith("WEIGHTS ONLY") for w in r["warnings"])


def test_weights_only_beside_a_full_shape_is_an_error(recommender):
    assert "nothing is missing" in refused(recommender, dict(LLAMA2_7B, weights_only=True))


def test_a_cnn_by_its_numbers_is_refused_unless_weights_only(recommender):
    """A CNN's activations depend on its layers' channels and strides, which a parameter count does not give: it
    is refused (the measured ones are named), and sized by its weights only when the workload accepts that."""
    cnn = {"name": "r", "task": "inference", "model": {"params": 25557032, "kind": "cnn"}}
    assert "cannot be sized" in refused(recommender, cnn["model"])
    r = recommender.recommend(dict(cnn, model=dict(cnn["model"], weights_only=True)))
    assert r["memory.peak"]["phase"] == "weights"


# -- a model_type added in knowledge, no Python --------------------------------------------------

SITE_ENTRY = """import: hf-config
description: a site's own model_type
select: model_type
entries:
- id: my-llama
  match: [my_llama]
  name: My Llama
  extends: llama
  source: {doc: our modeling file}
  fixed: {family: llama}
"""


def test_a_site_adds_a_model_type_without_python(tmp_path):
    from engine import Recommender

    site = tmp_path / "site"
    site.mkdir()
    (site / "my_families.yaml").write_text(SITE_ENTRY)
    cfg = json.loads((HF / "meta-llama--Llama-3.1-8B.json").read_text())
    cfg["model_type"] = "my_llama"
    with Recommender(knowledge=[ROOT / "knowledge", site]) as rec:
        w = rec.load({"name": "s", "task": "inference", "model": {"config": str(write(tmp_path, "mine", cfg))}})
        assert w.inputs["model.params"].value == 8030261248


def test_a_mapping_that_sets_an_unknown_key_fails_to_load(tmp_path):
    from engine.load.loader import load_rulebase_files

    site = tmp_path / "site"
    site.mkdir()
    (site / "bad.yaml").write_text(SITE_ENTRY.replace("fixed: {family: llama}", "fixed: {famly: llama}"))
    with pytest.raises(InputError) as e:
        load_rulebase_files(knowledge_dirs=[ROOT / "knowledge", site])
    assert "sets 'famly', which is not a key of model" in str(e.value) and "did you mean 'family'" in str(e.value)


def test_the_engine_knows_no_model_family():
    for path in (ROOT / "engine").rglob("*.py"):
        code = path.read_text().lower()
        for word in ("model_type", "huggingface", "hf_hub", "config.json", "llama", "safetensors"):
            assert word not in code, f"{path.name} mentions '{word}'"


def test_count_counts_list_members():
    from engine.lang import expr as X

    e = X.parse("count(layer_types, 'sliding')")
    assert e.bind(lambda n: lambda env: ["sliding", "full", "sliding"])({}) == 2
    with pytest.raises(X.ExprError):
        X.parse("count(3, 1)").bind(lambda n: None)({})


def _catalog_items():
    import yaml

    doc = yaml.safe_load((ROOT / "knowledge" / "models.yaml").read_text())
    return [i for i in doc["items"] if "keys read from" in (i.get("note") or "")]


@pytest.mark.parametrize("item", _catalog_items(), ids=lambda i: i["id"])
def test_catalog_entries_are_what_their_config_gives(recommender, tmp_path, item):
    """Every transformer in knowledge/models.yaml says which config.json it was read from; reading that
    config again gives the entry's keys, the exact parameter count included."""
    src = item["note"].split("keys read from ", 1)[1].split(" through ", 1)[0]
    if src.startswith("tests/fixtures/model-configs.json"):
        name = src.split("(", 1)[1].rstrip(")")
        path = write(tmp_path, name, next(r["config"] for r in CONFIGS if r["name"] == name))
    else:
        path = ROOT / src
    w = load(recommender, {"config": str(path)}, task="training")
    for key, value in item.items():
        if key in ("id", "name", "source", "note", "norm") or value is None:
            continue
        assert w.inputs[f"model.{key}"].value == value, key


def test_catalog_names_fill_the_model(recommender):
    i = load(recommender, {"name": "qwen3-235b-a22b"}).inputs
    assert (i["model.params"].value, i["model.params"].origin) == (235093634560, "catalog")
    assert i["model.family"].value == "qwen3-moe" and i["model.expert_intermediate_size"].value == 1536


def test_a_catalog_value_that_breaks_the_schema_is_reported_at_the_catalog(tmp_path):
    from engine import Recommender

    site = tmp_path / "site"
    site.mkdir()
    (site / "models.yaml").write_text(
        "catalog: model\ndescription: site\nfields: {}\nitems:\n- id: odd\n  name: Odd\n  family: nonesuch\n"
        "  params: 1000\n  kind: cnn\n  source: {doc: test}\n"
    )
    with Recommender(knowledge=[ROOT / "knowledge", site]) as rec:
        with pytest.raises(InputError) as e:
            rec.load({"name": "o", "task": "inference", "model": {"name": "odd"}})
    assert "is not an item of catalog 'architecture'" in str(e.value) and e.value.first.file.endswith("models.yaml")


# -- gpusizer inspect-model -----------------------------------------------------------------------


def test_inspect_model_of_a_config(capsys):
    from engine.cli import main

    assert main(["inspect-model", str(HF / "deepseek-ai--DeepSeek-R1.json")]) == 0
    out = capsys.readouterr().out
    assert "Read from the document" in out and "family                             deepseek-v3" in out
    assert "params                             671,026,404,352 parameters" in out
    assert "kv_cache_bytes_per_token           70,272 bytes" in out  # 61 layers x (512 + 64) x 2 B
    assert "kv-cache-per-token:" in out


def test_inspect_model_of_a_workload_shows_inferences(tmp_path, capsys):
    from engine.cli import main

    wl = tmp_path / "w.yaml"
    wl.write_text(
        "name: w\ntask: inference\nmodel: {layers: 32, hidden_size: 4096, attention_heads: 32,\n"
        "  intermediate_size: 11008, mlp: swiglu, vocab_size: 32000}\n"
    )
    assert main(["inspect-model", str(wl), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["inputs"]["model.params"]["origin"] == "inferred"
    assert doc["inputs"]["model.params"]["value"] == 6738415616
    assert doc["conclusions"]["model.kv_cache_bytes_per_token"]["value"] == 32 * 2 * 4096 * 2


def test_inspect_model_reports_bad_input(tmp_path, capsys):
    from engine.cli import main

    assert main(["inspect-model", str(write(tmp_path, "x", {"model_type": "rwkv"}))]) == ExitCode.INVALID
    assert "is not supported" in capsys.readouterr().err
