"""What other memory estimators say about the measured cases, for compare.py's side-by-side table.

    /tmp/accvenv/bin/python  benchmarks/accuracy/peers.py accelerate     # torch + transformers + accelerate
    /tmp/llmavenv/bin/python benchmarks/accuracy/peers.py llm-analysis   # llm-analysis 0.2.2, its own venv
    <vramcalc env>/bin/python benchmarks/accuracy/peers.py vramcalc      # vramcalc 0.1.2, its own venv
    /tmp/accvenv2/bin/python benchmarks/accuracy/peers.py hf-vram-calc --families  # + hf-vram-calc --no-deps
    /tmp/peervenv/bin/python benchmarks/accuracy/peers.py llm-mem-planner --families  # stdlib only
    ... peers.py PEER --families       # the same for results-families.json, into peers-families.json

Each run adds its peer's figures (bytes, per case of results.json) to peers.json beside this file
(with --families: results-families.json and peers-families.json).

* vramcalc (PyPI, "Predict GPU VRAM usage of Llama-family models from config.json"): reads a config
  dict offline, model types llama, mistral, qwen2, gemma, gemma2 only (every other case has no
  figure); ``estimate(config, mode=..., dtype, batch, seq_len, lora_rank, grad_checkpoint,
  precision="amp"|"pure", attn_impl="sdpa"|"eager", overhead_gb=0)``, its ``total``. The config dict
  is the case's architecture (model_type, widths, head_dim, tie_word_embeddings). Its LoRA always
  adapts q/k/v/o and the MLP; it has no adapter dropout.

* accelerate (Hugging Face, ``accelerate estimate-memory``): the model is built empty from the same
  transformers config (``init_empty_weights``), ``calculate_maximum_sizes`` sizes it, and the
  numbers are taken as the command prints them: "Total Size" for inference (halved for float16,
  the CLI's only 16-bit choice, which is what bf16 weights take) and "Training using Adam" for
  training, which is the largest of ``estimate_training_usage``'s model / gradients / optimizer /
  step figures (dtype float32 for fp32 cases, float16 for bf16 and mixed ones: accelerate assumes
  mixed precision for 16-bit training). It leaves activations and the KV cache out by design.
* llm-analysis (Li et al., https://github.com/cli99/llm-analysis): ``analysis.train`` and
  ``analysis.infer`` with the case's architecture as a custom model config (gated MLP for SwiGLU
  models, FlashAttention, full recomputation for checkpointed cases), one GPU large enough never to
  trip its memory asserts, dtype w16a16e16; it rejects 32-bit weights ("weight_bits and
  activation_bits must be 4, 8, or 16"), so fp32 cases have no llm-analysis figure. Training:
  "(weight+op_state+grad+act)_memory_per_gpu" with its default Adam accounting (fp32 master
  weights and moments; for pure bf16 the moments are given as 4 bytes). Inference: weights + KV
  cache + prefill activations.

* hf-vram-calc 1.0.9 (PyPI, "GPU memory calculator for Hugging Face models"): counts the parameters
  exactly (transformers under ``init_empty_weights``, the same count results-families.json records,
  which is the one taken here: its own instantiation allocates DeepSeek-V3's 3-D expert tensors on
  the CPU) and then prints rules of thumb, the figures taken: "Single GPU Inference" = weights x 1.2
  (its KV cache and activations are printed beside it but not added), "Single GPU Training" =
  weights x 4 x 1.3, "Single GPU LoRA" = (weights + LoRA parameters x 8 bytes) x 1.2 with its LoRA
  parameters estimated as a quarter of the model at width 4096; the weights in the case's dtype
  (bf16 for mixed training: its only training dtype is the model's).
* llm-mem-planner 0.2.2 (PyPI, "Estimate LLM VRAM usage (weights/KV/activations)"): reads a
  config.json offline, but it is built for DeepSeek-style MLA models served by SGLang: its KV cache
  is ``kv_lora_rank + qk_rope_head_dim`` per token and layer (zero for every other family) and its
  parameter count has only MLA attention; so only the deepseek_v2/v3 generation cases are asked,
  and DeepSeek-V2-Lite's published config (``"q_lora_rank": null``) stops its config reader with a
  TypeError, which leaves one figure, DeepSeek-V3's.
  Its single-configuration report, tp = dp = 1: weights + KV cache + the prefill working set, the
  prefill given as one chunk of batch x prompt tokens (transformers does not chunk) and its "misc"
  reserve (6 GiB by default, a runtime's) left out as the other peers leave out the CUDA context.

All are asked for exactly what results.json measured: same shapes, batch, sequence, precision.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = "--families" in sys.argv
RESULTS = os.path.join(HERE, "results-families.json" if FAMILIES else "results.json")
OUT = os.path.join(HERE, "peers-families.json" if FAMILIES else "peers.json")


def _cases():
    return [c for c in json.load(open(RESULTS))["cases"] if "error" not in c]


def _hf_config(c) -> dict:
    """The case's architecture as a config.json dict (what a config-reading estimator is given)."""
    m = c["model"]
    d = dict(
        model_type=m["family"],
        hidden_size=m["hidden_size"],
        num_hidden_layers=m["layers"],
        num_attention_heads=m["attention_heads"],
        num_key_value_heads=m["kv_heads"],
        head_dim=m.get("head_dim") or m["hidden_size"] // m["attention_heads"],
        intermediate_size=m["intermediate_size"],
        vocab_size=m["vocab_size"],
        tie_word_embeddings=m["tied_embeddings"],
    )
    return d


def vramcalc_figures() -> dict:
    from importlib.metadata import version

    import vramcalc

    out = {}
    for c in _cases():
        inp, m = c["inputs"], c["model"]
        if m["family"] not in ("llama", "mistral", "qwen2", "gemma", "gemma2"):
            continue
        kw = dict(
            mode="train" if inp["task"] == "training" else "inference",
            dtype="fp32"
            if inp["precision"] == "fp32" or (inp["precision"] == "mixed" and inp["task"] == "inference")
            else "bf16",
            batch=inp["batch"],
            seq_len=inp["seq"] + inp.get("decode_steps", 0),
            overhead_gb=0.0,
            attn_impl="eager" if m.get("attn_implementation", inp.get("attention")) == "eager" else "sdpa",
        )
        if inp["task"] == "training":
            kw.update(
                grad_checkpoint=bool(inp["gradient_checkpointing"]),
                precision="amp" if inp["precision"] == "mixed" else "pure",
                lora_rank=(inp.get("lora") or {}).get("r"),
            )
            if inp["precision"] == "mixed":
                kw["dtype"] = "bf16"
        try:
            est = vramcalc.estimate(_hf_config(c), **kw)
        except Exception as e:  # unsupported shape: no figure
            print(f"vramcalc: {c['name']}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        out[c["name"]] = int(est.total)
    return {"version": version("vramcalc"), "figures": out}


def accelerate_figures() -> dict:
    sys.path.insert(0, HERE)
    import accelerate
    import measure
    from accelerate import init_empty_weights
    from accelerate.commands.estimate import estimate_training_usage
    from accelerate.utils import calculate_maximum_sizes

    out = {}
    for c in _cases():
        inp = c["inputs"]
        family, cfg = measure.make_config(inp["model"], fake=False)
        # include_buffers=True builds everything on the meta device: transformers 5 creates each MoE
        # layer's experts as one 3-D torch.empty, which plain init_empty_weights allocates on the CPU
        # before moving it (30 GB for one DeepSeek-V3 layer: the CLI itself runs out of memory there)
        with init_empty_weights(include_buffers=True):
            model = measure.model_class(family, inp["task"])(cfg)
        # estimate-memory sizes the whole model; it has no notion of LoRA (a LoRA case gets the
        # full model's figures, as the CLI would print them)
        total, _ = calculate_maximum_sizes(model)  # fp32 bytes, as estimate-memory builds it
        dtype = "float32" if inp["precision"] == "fp32" else "float16"
        if inp["task"] == "training":
            value = max(estimate_training_usage(total, dtype).values())
        else:
            value = total / 2 if dtype == "float16" else total
        out[c["name"]] = int(value)
    return {"version": accelerate.__version__, "figures": out}


def llm_analysis_figures() -> dict:
    from importlib.metadata import version

    from llm_analysis import analysis, config

    config.gpu_configs["huge"] = config.GPUConfig(
        name="huge",
        mem_per_GPU_in_GB=1e6,
        hbm_bandwidth_in_GB_per_sec=3350,
        intra_node_bandwidth_in_GB_per_sec=450,
        intra_node_min_message_latency=8e-6,
        peak_fp16_TFLOPS=989,
    )
    out = {}
    for c in _cases():
        inp, m = c["inputs"], c["model"]
        if inp["precision"] == "fp32":
            continue  # not supported: 16-, 8- and 4-bit weights only
        if inp.get("lora"):
            continue  # no LoRA in llm-analysis's training model
        name = f"case-{c['name']}"
        experts = (
            m.get("experts") or m.get("num_experts") or m.get("num_local_experts") or m.get("n_routed_experts") or 1
        )
        top_k = m.get("experts_per_token") or (m.get("num_experts_per_tok") if experts > 1 else 1) or 1
        ffn = (
            m.get("moe_intermediate_size") if experts > 1 and m.get("moe_intermediate_size") else m["intermediate_size"]
        )
        config.model_configs[name] = config.ModelConfig(
            name=name,
            num_layers=m["layers"],
            n_head=m["attention_heads"],
            hidden_dim=m["hidden_size"],
            vocab_size=m["vocab_size"],
            max_seq_len=max(inp["seq"] + inp.get("decode_steps", 0), 1),
            num_key_value_heads=m["kv_heads"],
            ffn_embed_dim=ffn,
            expansion_ratio=ffn / m["hidden_size"],
            model_type=m["family"],
            moe_num_experts=experts,
            moe_top_k=top_k,
        )
        dtype = "w16a16e16"
        gated = (
            m.get("mlp", "swiglu" if m["family"] not in ("gpt2", "bert", "opt", "falcon", "gpt_neox") else "gelu")
            == "swiglu"
        )
        if inp["task"] == "training":
            kw = {}
            if inp["precision"] == "bf16":
                kw["other_op_bytes"] = 4
            s = analysis.train(
                model_name=name,
                gpu_name="huge",
                dtype_name=dtype,
                log_level="ERROR",
                batch_size_per_gpu=inp["batch"],
                gradient_accumulation_steps=1,
                global_batch_size=inp["batch"],
                seq_len=inp["seq"],
                total_num_gpus=1,
                dp_size=1,
                activation_recomputation=2 if inp["gradient_checkpointing"] else 0,
                flash_attn=m.get("attn_implementation", inp.get("attention")) != "eager",
                mlp_gated_linear_units=gated,
                **kw,
            )
            value = s["(weight+op_state+grad+act)_memory_per_gpu"]
        else:
            s = analysis.infer(
                model_name=name,
                gpu_name="huge",
                dtype_name=dtype,
                log_level="ERROR",
                batch_size_per_gpu=inp["batch"],
                seq_len=inp["seq"],
                num_tokens_to_generate=inp.get("decode_steps", 0),
                use_kv_cache=True,
            )
            value = s["weight_memory_per_gpu"] + s["kv_cache_memory_per_gpu"] + s["prefill_activation_memory_per_gpu"]
        out[c["name"]] = int(value)
    return {"version": version("llm-analysis"), "figures": out}


def hf_vram_calc_figures() -> dict:
    from importlib.metadata import version

    from hf_vram_calc.calculator import VRAMCalculator
    from hf_vram_calc.config import ConfigManager

    calc = VRAMCalculator(ConfigManager())
    out = {}
    for c in _cases():
        inp, m = c["inputs"], c["model"]
        dtype = "fp32" if inp["precision"] == "fp32" else "bf16"
        weights = calc.calculate_model_memory(m["params"], dtype)  # GiB
        if inp.get("lora"):
            gib = calc.calculate_lora_memory(weights, m["params"], inp["lora"]["r"])
        elif inp["task"] == "training":
            gib = calc.calculate_training_memory(weights)
        else:
            gib = calc.calculate_inference_memory(weights)
        out[c["name"]] = int(gib * 2**30)
    return {"version": version("hf-vram-calc"), "figures": out}


def llm_mem_planner_figures() -> dict:
    from importlib.metadata import version

    from llm_mem_planner import cli as lmp

    sys.path.insert(0, HERE)
    from families import MODELS

    out = {}
    for c in _cases():
        inp = c["inputs"]
        model_type, kwargs, _ = MODELS[inp["model"]]
        if inp["task"] != "inference" or model_type not in ("deepseek_v2", "deepseek_v3"):
            continue
        config = dict(model_type=model_type, **kwargs, torch_dtype="bfloat16")
        try:
            d = lmp.load_dims(config)
        except Exception as e:  # DeepSeek-V2-Lite's published config has "q_lora_rank": null
            print(f"llm-mem-planner: {c['name']}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        p = lmp.estimate_params(d)
        par = lmp.Parallelism(tp=1, dp=1, sp=1, ep=1, moe_dp=1)
        weights = lmp.estimate_weight_params_per_rank(d, p, par).total * d.dtype_bytes
        kv = lmp.estimate_kv_cache_gib(
            d, batch=inp["batch"], seq_len=inp["seq"] + inp.get("decode_steps", 0), kv_dtype_bytes=d.dtype_bytes
        )
        act = lmp.estimate_activation_working_set(
            d, par, tokens=inp["batch"] * inp["seq"], act_dtype_bytes=d.dtype_bytes
        )
        out[c["name"]] = int(weights + (kv + act.peak_gib) * 2**30)
    return {"version": version("llm-mem-planner"), "figures": out}


def main():
    peer = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = {
        "accelerate": accelerate_figures,
        "hf-vram-calc": hf_vram_calc_figures,
        "llm-analysis": llm_analysis_figures,
        "llm-mem-planner": llm_mem_planner_figures,
        "vramcalc": vramcalc_figures,
    }.get(peer)
    if fn is None:
        raise SystemExit(
            "usage: peers.py accelerate | hf-vram-calc | llm-analysis | llm-mem-planner | vramcalc [--families] "
            "(each in its own environment, see the docstring)"
        )
    figures = fn()
    doc = json.load(open(OUT)) if os.path.exists(OUT) else {}
    doc[peer] = figures
    with open(OUT, "w") as f:
        json.dump(dict(sorted(doc.items())), f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{peer} {figures['version']}: {len(figures['figures'])} cases written to {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
