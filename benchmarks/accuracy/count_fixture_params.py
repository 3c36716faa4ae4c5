"""Exact parameter counts of the published configs in tests/fixtures/hf-configs/, with transformers.

    <accuracy env>/bin/python benchmarks/accuracy/count_fixture_params.py   # torch + transformers

Each config.json is turned into its transformers config class (``CONFIG_MAPPING[model_type].from_dict``,
no remote code: DeepSeek-V3/R1's ``auto_map`` is ignored and transformers' own DeepseekV3 is built),
the causal-LM model is built on the meta device (no memory, no weights) and its parameters counted
the way ``model.num_parameters()`` does: each tensor once, so tied input / output embeddings count
once. Quantization configs (gpt-oss's MXFP4, DeepSeek's FP8 blocks) play no part: ``from_config``
builds the unquantized architecture, which is what a parameter count means. DeepSeek's multi-token
prediction layer (``num_nextn_predict_layers``) is not part of transformers' model and so not counted.

Rewrites param_counts.json beside the configs, keeping each entry's ``published`` and
``published_source`` (PUBLISHED below).
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "fixtures", "hf-configs")

# file -> (published parameter count as stated, where)
PUBLISHED = {
    "meta-llama--Llama-3.1-8B.json": (
        "8.03B",
        "https://huggingface.co/meta-llama/Llama-3.1-8B (model card: 8B; "
        "safetensors metadata on the model page: 8.03B params)",
    ),
    "meta-llama--Llama-3.2-3B.json": (
        "3.21B",
        "https://huggingface.co/meta-llama/Llama-3.2-3B (model card table: 3.21B)",
    ),
    "Qwen--Qwen2.5-3B.json": ("3.09B (2.77B non-embedding)", "https://huggingface.co/Qwen/Qwen2.5-3B (model card)"),
    "Qwen--Qwen2.5-7B.json": ("7.61B (6.53B non-embedding)", "https://huggingface.co/Qwen/Qwen2.5-7B (model card)"),
    "Qwen--Qwen2.5-32B.json": ("32.5B (31.0B non-embedding)", "https://huggingface.co/Qwen/Qwen2.5-32B (model card)"),
    "Qwen--Qwen3-4B.json": ("4.0B (3.6B non-embedding)", "https://huggingface.co/Qwen/Qwen3-4B (model card)"),
    "Qwen--Qwen3-8B.json": ("8.2B (6.95B non-embedding)", "https://huggingface.co/Qwen/Qwen3-8B (model card)"),
    "Qwen--Qwen3-32B.json": ("32.8B (31.2B non-embedding)", "https://huggingface.co/Qwen/Qwen3-32B (model card)"),
    "Qwen--Qwen3-30B-A3B.json": (
        "30.5B total, 3.3B activated (29.9B non-embedding)",
        "https://huggingface.co/Qwen/Qwen3-30B-A3B (model card)",
    ),
    "openai--gpt-oss-20b.json": (
        "21B total, 3.6B active (20.91B in the model card paper, arXiv:2508.10925, table 1)",
        "https://huggingface.co/openai/gpt-oss-20b (model card); "
        "gpt-oss-120b & gpt-oss-20b Model Card, arXiv:2508.10925",
    ),
    "deepseek-ai--DeepSeek-R1.json": (
        "671B total, 37B activated (685B on the model page, with the 14B multi-token-prediction module)",
        "https://huggingface.co/deepseek-ai/DeepSeek-R1 (model card); DeepSeek-V3 Technical Report, arXiv:2412.19437",
    ),
}


def count(path):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    d = json.load(open(path))
    d.pop("auto_map", None)
    d.pop("quantization_config", None)
    cfg = CONFIG_MAPPING[d["model_type"]].from_dict(d)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    total = sum(p.numel() for p in model.parameters())
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is emb
    experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    return dict(
        transformers_count=total,
        tied_embeddings=tied,
        embedding_params=emb.numel(),
        non_embedding_count=total - emb.numel() - (0 if tied or head is None else head.weight.numel()),
        expert_params=experts,
        model_class=type(model).__name__,
        transformers_version=transformers.__version__,
    )


def main():
    out_path = os.path.join(FIXTURES, "param_counts.json")
    doc = {}
    for f in sorted(os.listdir(FIXTURES)):
        if not f.endswith(".json") or f == "param_counts.json":
            continue
        try:
            row = count(os.path.join(FIXTURES, f))
        except Exception as e:  # record, keep going
            row = dict(error=f"{type(e).__name__}: {e}"[:300])
        pub, src = PUBLISHED.get(f, (None, None))
        row["published"] = pub
        row["published_source"] = src
        doc[f] = row
        print(f"{f:40s} {row.get('transformers_count', row.get('error'))!s:>16s}  published {pub}")
    with open(out_path, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    sys.exit(main())
