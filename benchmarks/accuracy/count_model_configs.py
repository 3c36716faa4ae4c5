"""Exact parameter counts of config.json documents for every model_type gpusizer reads, with transformers.

    <accuracy env>/bin/python benchmarks/accuracy/count_model_configs.py   # torch + transformers

Writes tests/fixtures/model-configs.json: one row per config, the config itself (model_type and the
keys a config.json holds), the count of the model transformers builds from it on the meta device
(each tensor once, as ``model.num_parameters()``), its input embedding tables and its expert
parameters. tests/test_models.py reads each config through gpusizer's import mapping
(knowledge/model_families.yaml) and checks the same three numbers, so a formula in the mapping that
drifts from what transformers builds fails a test.

The configs are the published shapes of benchmarks/accuracy/families.py and, for the code paths those
shapes do not reach, variants of them (biases, sliding layers, sparse MoE steps, Falcon's other
layouts, OPT's projected embeddings, BERT with a pooler, Gemma 3 with its vision tower, DeepSeek-V2 with
a compressed query, GPT-2 at its published sizes). Nothing here is a published config.json file:
tests/fixtures/hf-configs/ holds those.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "fixtures", "model-configs.json")

sys.path.insert(0, HERE)
from families import MODELS  # noqa: E402


def variants():
    """(name, config dict, source) for the paths the published shapes do not exercise."""
    m = {k: dict(model_type=t, **kw) for k, (t, kw, _) in MODELS.items()}
    yield "llama-biases", dict(m["llama3.2-1b"], attention_bias=True, mlp_bias=True), "llama3.2-1b with biases"
    yield (
        "mistral-7b-v0.1",
        dict(
            model_type="mistral",
            num_hidden_layers=32,
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=8,
            intermediate_size=14336,
            vocab_size=32000,
            sliding_window=4096,
            tie_word_embeddings=False,
        ),
        "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
    )
    yield (
        "qwen2-sliding",
        dict(m["qwen2.5-1.5b"], use_sliding_window=True, sliding_window=4096, max_window_layers=20),
        "qwen2.5-1.5b with use_sliding_window",
    )
    yield "qwen2-moe-sparse-step", dict(m["qwen1.5-moe-a2.7b"], decoder_sparse_step=2), "every other layer MoE"
    yield "qwen2-moe-mlp-only", dict(m["qwen1.5-moe-a2.7b"], mlp_only_layers=[0, 5]), "two dense layers"
    yield "qwen3-moe-mlp-only", dict(m["qwen3-30b-a3b"], mlp_only_layers=[0]), "one dense layer"
    yield (
        "falcon-40b-like",
        dict(
            model_type="falcon",
            num_hidden_layers=4,
            hidden_size=8192,
            num_attention_heads=128,
            num_kv_heads=8,
            new_decoder_architecture=True,
            parallel_attn=True,
            multi_query=True,
            bias=False,
            vocab_size=65024,
            tie_word_embeddings=False,
        ),
        "tiiuae/falcon-40b's layout, 4 layers",
    )
    yield (
        "falcon-sequential-bias",
        dict(
            model_type="falcon",
            num_hidden_layers=3,
            hidden_size=1024,
            num_attention_heads=16,
            multi_query=False,
            parallel_attn=False,
            new_decoder_architecture=False,
            bias=True,
            vocab_size=5000,
        ),
        "Falcon's sequential layout with biases",
    )
    for name, n_layer, n_embd, n_head in (
        ("gpt2", 12, 768, 12),
        ("gpt2-medium", 24, 1024, 16),
        ("gpt2-large", 36, 1280, 20),
        ("gpt2-xl", 48, 1600, 25),
    ):
        yield (
            name,
            dict(model_type="gpt2", n_layer=n_layer, n_embd=n_embd, n_head=n_head, vocab_size=50257, n_positions=1024),
            f"https://huggingface.co/openai-community/{name}/blob/main/config.json",
        )
    yield (
        "gpt2-n-inner",
        dict(model_type="gpt2", n_layer=2, n_embd=256, n_head=4, n_inner=512, vocab_size=1000),
        ("GPT-2 with n_inner"),
    )
    yield (
        "opt-350m-like",
        dict(
            model_type="opt",
            num_hidden_layers=24,
            hidden_size=1024,
            num_attention_heads=16,
            ffn_dim=4096,
            word_embed_proj_dim=512,
            do_layer_norm_before=False,
            vocab_size=50272,
            max_position_embeddings=2048,
        ),
        "facebook/opt-350m's projected embeddings and post-norm layout",
    )
    for name, layers, hidden, heads, inter in (
        ("bert-base-uncased", 12, 768, 12, 3072),
        ("bert-large-uncased", 24, 1024, 16, 4096),
    ):
        yield (
            name,
            dict(
                model_type="bert",
                architectures=["BertForMaskedLM"],
                num_hidden_layers=layers,
                hidden_size=hidden,
                num_attention_heads=heads,
                intermediate_size=inter,
                vocab_size=30522,
                max_position_embeddings=512,
                type_vocab_size=2,
            ),
            f"https://huggingface.co/google-bert/{name}/blob/main/config.json",
        )
    yield (
        "bert-model-pooler",
        dict(
            model_type="bert",
            num_hidden_layers=2,
            hidden_size=256,
            num_attention_heads=4,
            intermediate_size=1024,
            vocab_size=1000,
        ),
        "BertModel (no architectures: the pooler)",
    )
    yield (
        "deepseek-v2-q-lora",
        dict(m["deepseek-v2-lite"], q_lora_rank=1536, num_hidden_layers=4, attention_bias=True),
        "DeepSeek-V2's compressed query, with biases",
    )
    yield (
        "gemma3-4b-like",
        dict(
            model_type="gemma3",
            text_config=dict(
                model_type="gemma3_text",
                num_hidden_layers=6,
                hidden_size=2560,
                num_attention_heads=8,
                num_key_value_heads=4,
                head_dim=256,
                intermediate_size=10240,
                vocab_size=262208,
                sliding_window=1024,
            ),
            vision_config=dict(
                model_type="siglip_vision_model",
                hidden_size=1152,
                intermediate_size=4304,
                num_hidden_layers=27,
                num_attention_heads=16,
                patch_size=14,
                image_size=896,
                vision_use_head=False,
            ),
        ),
        "google/gemma-3-4b-pt's image-text layout, 6 text layers",
    )
    yield (
        "gemma3-pattern",
        dict({k: v for k, v in m["gemma3-1b"].items() if k != "sliding_window_pattern"}, num_hidden_layers=13),
        "Gemma 3 text with the default 5:1 pattern and no layer_types",
    )


def rows():
    for name, (t, kw, src) in MODELS.items():
        yield name, dict(model_type=t, **kw), src
    yield from variants()


def count(cfg_dict):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, BertForMaskedLM, BertModel, Gemma3ForConditionalGeneration
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    d = dict(cfg_dict)
    cfg = CONFIG_MAPPING[d["model_type"]].from_dict(d)
    with torch.device("meta"):
        if d["model_type"] == "bert":
            model = BertForMaskedLM(cfg) if "BertForMaskedLM" in (d.get("architectures") or []) else BertModel(cfg)
        elif d["model_type"] == "gemma3":
            model = Gemma3ForConditionalGeneration(cfg)
        else:
            model = AutoModelForCausalLM.from_config(cfg)
    total = sum(p.numel() for p in model.parameters())
    embedding = sum(
        p.numel()
        for n, p in model.named_parameters()
        if any(
            k in n
            for k in (
                "embed_tokens",
                "word_embeddings",
                "embed_in",
                "wte",
                "wpe",
                "embed_positions",
                "position_embeddings",
                "token_type_embeddings",
            )
        )
        and "vision" not in n
    )
    experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    return dict(
        transformers_count=total,
        embedding_params=embedding,
        expert_params=experts,
        model_class=type(model).__name__,
        transformers_version=transformers.__version__,
    )


def main():
    out = []
    for name, cfg, src in rows():
        row = dict(name=name, source=src, config=cfg)
        row.update(count(cfg))
        out.append(row)
        print(f"{name:28s} {row['model_class']:36s} {row['transformers_count']:>16,d}")
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    sys.exit(main())
