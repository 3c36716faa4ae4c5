"""Write knowledge/activations.yaml from the measured coefficients.

    python3 benchmarks/accuracy/make_profiles.py            # no torch needed

The family profiles come from calibration-families.json -> profiles (derive_families.py: 1- and
2-layer runs of each family, FAMILIES.md); GPT-2's and BERT's from calibration.json's rows, as
calibrate.py measured them for the first benchmark (their coefficients are restated here, not
refitted). What each field means is declared in the catalog's header, which this script writes too.

How a profile becomes catalog fields:

* ``h_residual`` (what the structural terms leave of the one measured shape) is added to the h
  coefficient of the same part; a negative logits residual of a family whose fit absorbed a large
  token-independent term (Mixtral, DeepSeek-V3: the expert gradient in flight, modelled on its own)
  is dropped, which keeps the figure on the high side.
* DeepSeek's MoE layers differ from its dense first layers by their routed, shared and router terms
  and by ``moe_layer_per_h`` (the difference of the two layers' residuals).
* The MoE prefill is per routed path (d a0 / d k of the inference runs), per expert (d a0 / d E) and
  a base; fp32 is twice bf16 where only bf16 was measured at both widths.
* Eager attention for a family that runs a fused kernel by default uses Llama's eager coefficients
  (calibration.json, llama rows), the only ones measured for that switch.
* bf16 is the catalog's ``half`` mode (pure bf16/fp16); ``mixed`` is fp32 weights under autocast,
  which gpusizer never uses for inference: its prefill figures are fp32's.
"""

from __future__ import annotations

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "knowledge", "activations.yaml")

MODES = {"fp32": "fp32", "bf16": "half", "mixed": "mixed"}
# the profile id in calibration-families.json -> the catalog's
FAMILY_IDS = {
    "llama": "llama",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3",
    "phi3": "phi3",
    "falcon": "falcon",
    "gpt_neox": "gpt-neox",
    "opt": "opt",
    "mixtral": "mixtral",
    "qwen2_moe": "qwen2-moe",
    "qwen3_moe": "qwen3-moe",
    "deepseek_v2": "deepseek-v2",
    "deepseek_v3": "deepseek-v3",
    "gpt_oss": "gpt-oss",
}
# Llama's eager attention (calibration.json, llama rows with attention eager), per mode:
# what a layer keeps per head and context token, and the prefill's extra transient
LLAMA_EAGER = {"fp32": (4, 6.1), "half": (6, 9.05), "mixed": (6, 6.1)}
# MoE prefill, bf16, from the inference runs' slopes (calibration-families.json -> slopes):
# per routed path (h, Ie, const), per expert, and the base (h, const) of X(2 layers) = a0 + 2 a1
MOE_PREFILL = {
    "mixtral": dict(path_h=9, path_i=6, path_const=36, expert=2, base_h=8, base_const=8),
    "qwen3-moe": dict(path_h=8, path_i=0, path_const=40, expert=2, base_h=8, base_const=8),
    "qwen2-moe": dict(path_h=8, path_i=0, path_const=40, expert=2, base_h=10, base_const=8),
    "deepseek-v2": dict(path_h=12, path_i=0, path_const=44, expert=4, base_h=8, base_const=8),
    "deepseek-v3": dict(path_h=12, path_i=0, path_const=44, expert=4, base_h=8, base_const=8),
    "gpt-oss": dict(path_h=8, path_i=0, path_const=40, expert=2, base_h=8, base_const=8),
}
# grouped_mm's backward makes one layer's whole expert gate_up gradient before accumulating it
GROUPED_MM = {"mixtral", "qwen2-moe", "qwen3-moe", "deepseek-v2", "deepseek-v3", "gpt-oss"}
NOTES = {
    "llama": "Llama-3.2-1B (also Mistral-Small-24B and Qwen2.5-1.5B, to the byte)",
    "qwen3": "Qwen3-0.6B, 7 width variants; Qwen3-8B held out",
    "gemma": "Gemma-2B",
    "gemma2": "Gemma-2-2B, 8 width variants; Gemma-2-9B held out",
    "gemma3": "Gemma-3-1B (sliding and global layers)",
    "phi3": "Phi-3-mini-4k",
    "falcon": "Falcon-7B at batches 2 and 4, contexts 1,024 to 4,096",
    "gpt-neox": "Pythia-1.4B",
    "opt": "OPT-1.3B",
    "mixtral": "Mixtral-8x7B on grouped_mm",
    "qwen2-moe": "Qwen1.5-MoE-A2.7B",
    "qwen3-moe": "Qwen3-30B-A3B",
    "deepseek-v2": "DeepSeek-V2-Lite (dense and MoE layers)",
    "deepseek-v3": "DeepSeek-V3 at full width (dense and MoE layers)",
    "gpt-oss": "gpt-oss-20b (sliding and global layers)",
}


def r(x):
    """A coefficient as the catalog writes it: whole bytes where it is one, else 4 decimals."""
    x = float(x)
    return round(x) if abs(x - round(x)) < 1e-3 else round(x, 4)


def family_profile(fid, prof, mode, eager_default, lo):
    p = prof["modes"][{"fp32": "fp32", "half": "bf16", "mixed": "mixed"}[mode]]
    layer = dict(p["layer"])
    dense = p.get("dense_layer")
    common_res = (dense or layer).get("h_residual", 0.0)
    if "full_layer" in p:  # Gemma-3: the larger of the two kinds' residuals
        common_res = max(common_res, p["full_layer"].get("h_residual", 0.0))
    moe = p.get("moe_layer", {})
    out = dict(
        family=fid,
        mode=mode,
        layer_per_h=r(layer["h"] + common_res),
        layer_per_q=r(layer.get("q", 0)),
        layer_per_kv=r(layer.get("kv", 0)),
        layer_per_i=r((dense or layer).get("I", 16 if mode == "fp32" else 8)),
        layer_per_head=r(layer.get("H", 0)),
        layer_const=r(layer.get("const", 0)),
    )
    e_llama, ep_llama = LLAMA_EAGER[mode]
    hctx = layer.get("H_ctx", 0.0)
    if fid == "falcon":
        out.update(eager_per_head_ctx=e_llama, math_per_head_ctx=r(hctx))
    elif eager_default:
        out.update(eager_per_head_ctx=r(hctx), math_per_head_ctx=r(hctx))
    else:
        out.update(eager_per_head_ctx=e_llama, math_per_head_ctx=4)
    out["mask_per_ctx"] = r(layer.get("mask_ctx", 0))
    out.update(
        moe_per_path_i=r(moe.get("Ie_path", 0)),
        moe_per_path_h=r(int(moe.get("h_path", 0))),
        moe_per_path_const=40 if moe else 0,
        moe_per_expert=r(moe.get("E", 0)),
        moe_per_shared_i=r(moe.get("Ish", 0)),
        moe_layer_per_h=r(layer.get("h_residual", 0.0) - dense.get("h_residual", 0.0)) if dense else 0,
        moe_grad_in_flight=fid in GROUPED_MM,
    )
    ck = p["checkpoint"]
    out.update(checkpoint_per_h=r(ck["per_h"]), checkpoint_outside_per_h=r(ck["outside_minus_logits_h"]))
    lg = p["logits"]
    res = lg.get("h_residual", 0.0)
    if res < 0 and fid in ("mixtral", "deepseek-v3"):
        res = 0.0
    softcap = 4 if mode == "fp32" else 2
    base_v = lg["V"] - (softcap if fid == "gemma2" else 0)
    out.update(
        logits_per_vocab=r(base_v),
        logits_per_h=r(lg["h"] + res),
        logits_const=r(lg.get("const", 0)),
        softcap_per_vocab=softcap,
        outside_per_vocab_h=(2 if mode == "half" else 4) if fid == "falcon" else 0,
    )
    # prefill: the MLP moment, the attention moment and the kernel's score-matrix term
    pf = (prof["modes"]["bf16"] if mode != "half" else p)["prefill"]
    k = 1 if mode == "half" else 2  # fp32 (and mixed, never used for inference) from bf16 x 2
    mlp_i = 6 * k
    mlp_h = 8 * k
    mlp_c = 8 * k
    moe_p = MOE_PREFILL.get(fid)
    if moe_p:
        mlp_h = k * moe_p["base_h"]
        mlp_c = k * moe_p["base_const"]
    if fid in ("phi3", "gpt-neox", "opt"):
        mlp_h = k * (8 + pf.get("h_residual", 0.0))
    if fid == "qwen3":
        mlp_h = k * (8 + pf.get("h_residual", 0.0))
    if mode == "mixed" and fid == "llama":
        # fp32 weights under autocast: 8I + 16,392 in both models measured (FAMILIES.md, the Llama formula)
        mlp_i, mlp_h, mlp_c = 8, 0, 16392
    # where no attention moment was measured apart, the eager (or math) scores come on top of the MLP
    # moment, as Llama's eager calibration measured them; MoE layers have no dense MLP beside them
    attn = dict(i=0 if moe_p else mlp_i, h=mlp_h, q=0, kv=0, head=0, const=mlp_c)
    eager_p = ep_llama
    math_p = ep_llama
    if fid in ("llama", "gemma", "gemma3", "phi3", "gpt-neox", "opt"):
        pass
    elif fid == "qwen3":
        dec = lo["decompositions"]["qwen3-0.6b"]["bf16/inference"]["a0"]
        attn = dict(
            i=0, h=k * (dec["h"] + 4), q=k * dec["q"], kv=k * dec["kv"], head=k * dec["heads"], const=k * dec["1"]
        )
    elif fid == "gemma2":
        dec = lo["decompositions"]["gemma2-2b"]["bf16/inference"]["a0"]
        attn = dict(
            i=0, h=k * (dec["h"] + 4), q=k * dec["q"], kv=k * dec["kv"], head=k * dec["heads"], const=k * dec["1"]
        )
        eager_p = math_p = k * dec["heads_ctx"]
    elif fid == "falcon":
        attn = dict(i=6 * k, h=k * (8 + pf.get("h_residual", 0.0)), q=0, kv=0, head=0, const=8 * k)
        math_p = k * pf["H_ctx"]
    elif fid == "gpt-oss":
        attn = dict(i=0, h=k * pf.get("h_residual", 0.0), q=0, kv=0, head=0, const=0)
        eager_p = math_p = k * pf["H_ctx"]
    out.update(
        prefill_per_i=r(mlp_i),
        prefill_per_h=r(mlp_h),
        prefill_const=r(mlp_c),
        prefill_attn_per_i=r(attn["i"]),
        prefill_attn_per_h=r(attn["h"]),
        prefill_attn_per_q=r(attn["q"]),
        prefill_attn_per_kv=r(attn["kv"]),
        prefill_attn_per_head=r(attn["head"]),
        prefill_attn_const=r(attn["const"]),
        prefill_eager_per_head_ctx=r(eager_p),
        prefill_math_per_head_ctx=r(math_p),
        prefill_moe_per_path_h=r(k * moe_p["path_h"]) if moe_p else 0,
        prefill_moe_per_path_i=r(k * moe_p["path_i"]) if moe_p else 0,
        prefill_moe_per_path_const=r(k * moe_p["path_const"]) if moe_p else 0,
        prefill_moe_per_expert=r(k * moe_p["expert"]) if moe_p else 0,
    )
    return out


# GPT-2 (gelu-tanh) and BERT (exact GELU) as calibrate.py measured them (calibration.json): per layer
# h, I, heads, const; logits V, h; checkpoint; prefill (GPT-2 measured, BERT estimated); eager
OLD = {
    "gpt2": {
        "fp32": dict(h=48, i=20, head=4, const=16, ck=4, lv=12, lh=12, pi=16, ph=20, e=3.5, ep=4.4),
        "half": dict(h=24, i=10, head=4, const=8, ck=2, lv=12, lh=6, pi=8, ph=10, e=1.75, ep=2.2),
        "mixed": dict(h=28, i=10, head=4, const=16, ck=4, lv=12, lh=10, pi=16, ph=20, e=5.75, ep=4.4),
    },
    "bert": {
        "fp32": dict(h=40, i=8, head=4, const=16, ck=4, lv=12, lh=24, pi=8, ph=8, e=4, ep=4),
        "half": dict(h=20, i=4, head=4, const=8, ck=2, lv=6, lh=12, pi=4, ph=4, e=2, ep=2),
        "mixed": dict(h=28, i=4, head=4, const=16, ck=4, lv=12, lh=16, pi=8, ph=8, e=2, ep=4),
    },
}


def old_profile(fid, mode):
    o = OLD[fid][mode]
    return dict(
        family=fid,
        mode=mode,
        layer_per_h=o["h"],
        layer_per_q=0,
        layer_per_kv=0,
        layer_per_i=o["i"],
        layer_per_head=o["head"],
        layer_const=o["const"],
        eager_per_head_ctx=o["e"],
        math_per_head_ctx=o["e"],
        mask_per_ctx=0,
        moe_per_path_i=0,
        moe_per_path_h=0,
        moe_per_path_const=0,
        moe_per_expert=0,
        moe_per_shared_i=0,
        moe_layer_per_h=0,
        moe_grad_in_flight=False,
        checkpoint_per_h=o["ck"],
        checkpoint_outside_per_h=0,
        logits_per_vocab=o["lv"],
        logits_per_h=o["lh"],
        logits_const=0,
        softcap_per_vocab=4 if mode == "fp32" else 2,
        outside_per_vocab_h=0,
        prefill_per_i=o["pi"],
        prefill_per_h=o["ph"],
        prefill_const=0,
        prefill_attn_per_i=o["pi"],
        prefill_attn_per_h=o["ph"],
        prefill_attn_per_q=0,
        prefill_attn_per_kv=0,
        prefill_attn_per_head=0,
        prefill_attn_const=0,
        prefill_eager_per_head_ctx=o["ep"],
        prefill_math_per_head_ctx=o["ep"],
        prefill_moe_per_path_h=0,
        prefill_moe_per_path_i=0,
        prefill_moe_per_path_const=0,
        prefill_moe_per_expert=0,
    )


FIELDS = {
    "family": (
        "string",
        None,
        "The architecture family the profile sizes (knowledge/architectures.yaml's profile);"
        " absent on the per-MLP-type items.",
    ),
    "mode": ("string", None, "Compute mode: fp32, half (pure bf16/fp16) or mixed (fp32 weights under autocast)."),
    "layer_per_h": (
        "number",
        "bytes",
        "Saved for backward per token and layer, per unit of hidden size h"
        " (norms, inputs of the projections, residual stream).",
    ),
    "layer_per_q": (
        "number",
        "bytes",
        "Per unit of query width (heads x head_dim): the attention output and the query.",
    ),
    "layer_per_kv": ("number", "bytes", "Per unit of key/value width (kv_heads x head_dim)."),
    "layer_per_i": ("number", "bytes", "Per unit of a dense layer's MLP width I."),
    "layer_per_head": ("number", "bytes", "Per attention head (the fused kernel's fp32 log-sum-exp)."),
    "layer_const": ("number", "bytes", "Per token and layer, whatever the widths."),
    "eager_per_head_ctx": (
        "number",
        "bytes",
        "Eager attention: kept per head and context token (the softmax, its casts, soft-capped scores).",
    ),
    "math_per_head_ctx": (
        "number",
        "bytes",
        "SDPA's math fallback: kept per head and context token (the fp32 softmax of the whole score matrix).",
    ),
    "mask_per_ctx": (
        "number",
        "bytes",
        "A sliding layer whose context exceeds its window: the additive mask SDPA keeps, per context token.",
    ),
    "moe_per_path_i": (
        "number",
        "bytes",
        "Mixture of experts, per routed path (token x expert it is sent to), per unit of the expert's MLP width.",
    ),
    "moe_per_path_h": (
        "number",
        "bytes",
        "Per routed path, per unit of h (the token's gathered copy and its weighted output).",
    ),
    "moe_per_path_const": ("number", "bytes", "Per routed path, whatever the widths (routing indices and weights)."),
    "moe_per_expert": ("number", "bytes", "Per token and layer, per expert (the router's fp32 logits and softmax)."),
    "moe_per_shared_i": ("number", "bytes", "Per unit of the shared experts' width."),
    "moe_layer_per_h": (
        "number",
        "bytes",
        "An MoE layer over a dense one, per unit of h, besides the routed and shared terms.",
    ),
    "moe_grad_in_flight": (
        "boolean",
        None,
        "grouped_mm's backward makes one layer's whole expert gate_up gradient before accumulating it:"
        " it sits on top of the backward peak.",
    ),
    "checkpoint_per_h": (
        "number",
        "bytes",
        "With gradient checkpointing, what each layer keeps (its input), per unit of h.",
    ),
    "checkpoint_outside_per_h": (
        "number",
        "bytes",
        "With checkpointing, what the recomputed layer and its gradients add outside the logits, per unit of h.",
    ),
    "logits_per_vocab": (
        "number",
        "bytes",
        "Outside the layers, per token and vocabulary entry at the start of backward"
        " (the fp32 logits, log-softmax and its gradient).",
    ),
    "logits_per_h": (
        "number",
        "bytes",
        "Outside the layers, per unit of h at the same moment (final norm, head input).",
    ),
    "logits_const": ("number", "bytes", "Outside the layers, per token (loss and label buffers)."),
    "softcap_per_vocab": (
        "number",
        "bytes",
        "A final logit soft-cap: the extra vocabulary-wide tensors it keeps, per token and entry.",
    ),
    "outside_per_vocab_h": (
        "number",
        "bytes",
        "Per vocabulary entry and unit of h, once per step (a dense embedding gradient in flight).",
    ),
    "prefill_per_i": (
        "number",
        "bytes",
        "Inference, the MLP moment of a layer, per token and unit of MLP width"
        " (gate, up and their product at once), with the previous layer's output.",
    ),
    "prefill_per_h": ("number", "bytes", "Inference, the MLP (or MoE) moment, per unit of h."),
    "prefill_const": ("number", "bytes", "Inference, the MLP moment, per token."),
    "prefill_attn_per_i": ("number", "bytes", "Inference, the attention moment, per unit of MLP width."),
    "prefill_attn_per_h": ("number", "bytes", "Inference, the attention moment, per unit of h."),
    "prefill_attn_per_q": ("number", "bytes", "Inference, the attention moment, per unit of query width."),
    "prefill_attn_per_kv": ("number", "bytes", "Inference, the attention moment, per unit of key/value width."),
    "prefill_attn_per_head": ("number", "bytes", "Inference, the attention moment, per head."),
    "prefill_attn_const": ("number", "bytes", "Inference, the attention moment, per token."),
    "prefill_eager_per_head_ctx": (
        "number",
        "bytes",
        "Inference with eager attention: the scores and their softmax of one layer, per head and context token.",
    ),
    "prefill_math_per_head_ctx": (
        "number",
        "bytes",
        "Inference on SDPA's math path: the same, per head and context token.",
    ),
    "prefill_moe_per_path_h": (
        "number",
        "bytes",
        "Inference, the MoE moment per routed path, per unit of h (the gathered copies).",
    ),
    "prefill_moe_per_path_i": (
        "number",
        "bytes",
        "Inference, the MoE moment per routed path, per unit of the expert width.",
    ),
    "prefill_moe_per_path_const": ("number", "bytes", "Inference, the MoE moment per routed path."),
    "prefill_moe_per_expert": ("number", "bytes", "Inference, the MoE moment per expert (router logits)."),
}

# The per-MLP-type profiles of the first calibration (calibrate.py), kept as they were for the rules
# that still look a profile up by model.mlp: rules/serving's transformers prefill
# (serving-activations-transformers, serving-plan-transformers). Those rules belong to the serving
# area; once they read memory.profile (the family) like rules/memory, these items can go.
BY_MLP_FIELDS = {
    "mlp": ("string", None, "Per-MLP-type profiles only: the MLP type (model.mlp) they size, family-blind."),
    "eager_prefill_per_head_token": (
        "number",
        "bytes",
        "Per-MLP-type profiles only, eager attention at inference: the extra transient of one layer, per"
        " token, head and token of context.",
    ),
}
# (mlp, mode): (prefill_per_i, prefill_per_h, eager_prefill_per_head_token), calibration.json
BY_MLP = {
    ("swiglu", "fp32"): (12, 8, 6.1),
    ("swiglu", "half"): (6, 4, 9.05),
    ("swiglu", "mixed"): (12, 8, 6.1),
    ("gelu-tanh", "fp32"): (16, 20, 4.4),
    ("gelu-tanh", "half"): (8, 10, 2.2),
    ("gelu-tanh", "mixed"): (16, 20, 4.4),
    ("gelu", "fp32"): (8, 8, 4),
    ("gelu", "half"): (4, 4, 2),
    ("gelu", "mixed"): (8, 8, 4),
    ("relu", "fp32"): (8, 8, 4),
    ("relu", "half"): (4, 4, 2),
    ("relu", "mixed"): (8, 8, 4),
}

HEADER = """\
# Activation memory per architecture family and compute mode: bytes per token (batch x sequence).
#
# Measured with torch 2.13.0 and transformers 5.24 under FakeTensorMode (benchmarks/accuracy: the
# live-tensor tracker, checked byte for byte against real runs): each family at full width with 1 and
# 2 layers and two token counts, widths varied one at a time to split the per-h, per-q, per-kv,
# per-I, per-head, per-context and MoE terms (calibrate.py --families, derive_families.py;
# FAMILIES.md explains every term with the transformers source line it comes from). GPT-2 and BERT
# come from the first calibration (calibrate.py, calibration.json). Written by
# benchmarks/accuracy/make_profiles.py, which says how each coefficient is taken; rules/memory/
# activations-*.yaml use them. The last twelve items, per MLP type and family-blind, are the first
# calibration's prefill figures, kept for rules/serving's transformers prefill, which looks them up by
# model.mlp.
#
# Modes: fp32; half = pure bf16/fp16 (weights, activations, gradients, optimizer state); mixed =
# fp32 weights under autocast (bf16 matmuls, fp32 residual stream and norms; grouped_mm experts run in
# fp32, transformers/integrations/moe.py l.379).
"""


def yaml_items(items, lo):
    lines = [HEADER, "catalog: activation_profile"]
    lines.append(
        "description: Bytes per token that a transformer keeps for backward (per layer and outside the layers)"
        " and holds at"
    )
    lines.append("  once in an inference forward pass, per architecture family and compute mode.")
    lines.append("fields:")
    for name, (t, unit, desc) in {**FIELDS, **BY_MLP_FIELDS}.items():
        lines.append(f"  {name}:")
        lines.append(f"    type: {t}")
        if unit:
            lines.append(f"    unit: {unit}")
        if name == "mode":
            lines.append("    enum: [fp32, half, mixed]")
            lines.append("    required: true")
        lines.append(f"    description: {json.dumps(desc)}")
    lines.append("items:")
    for it in items:
        fid, mode = it["family"], it["mode"]
        lines.append(f"- id: {fid}-{mode}")
        lines.append(f"  name: {fid}, {mode}")
        for k in FIELDS:
            v = it[k]
            v = ("true" if v else "false") if isinstance(v, bool) else v
            lines.append(f"  {k}: {v}")
        lines.append("  source:")
        if fid in ("gpt2", "bert"):
            lines.append(f"    doc: benchmarks/accuracy/calibration.json ({fid} rows), {mode}")
            lines.append(
                "    note: "
                + json.dumps(
                    "GPT-2 124M to 1.5B (gelu_new written out: five I-wide tensors), measured"
                    if fid == "gpt2"
                    else "BERT base and large; the prefill (one encoder forward) is gpusizer's estimate,"
                    " 2I + 2h elements"
                )
            )
        else:
            lines.append(f"    doc: benchmarks/accuracy/calibration-families.json (profiles), {mode}")
            lines.append(f"    note: {json.dumps('measured on ' + NOTES[fid] + '; FAMILIES.md')}")
    for (mlp, mode), (per_i, per_h, eager) in BY_MLP.items():
        lines.append(f"- id: {mlp}-{mode}")
        lines.append(f"  name: {mlp} MLP, {mode} (per MLP type, for rules/serving)")
        lines.append(f"  mlp: {mlp}")
        lines.append(f"  mode: {mode}")
        lines.append(f"  prefill_per_i: {per_i}")
        lines.append(f"  prefill_per_h: {per_h}")
        lines.append(f"  eager_prefill_per_head_token: {eager}")
        lines.append("  source:")
        lines.append(f"    doc: benchmarks/accuracy/calibration.json ({mlp} rows), {mode}")
        lines.append(
            "    note: the first calibration's per-MLP-type prefill, family-blind; rules/memory sizes by family"
        )
    return "\n".join(lines) + "\n"


def main():
    cal = json.load(open(os.path.join(HERE, "calibration-families.json")))
    arch_eager = {"gemma2", "gpt-oss"}
    items = []
    for src, fid in FAMILY_IDS.items():
        for mode in ("fp32", "half", "mixed"):
            items.append(family_profile(fid, cal["profiles"][src], mode, fid in arch_eager, cal))
    for fid in ("gpt2", "bert"):
        for mode in ("fp32", "half", "mixed"):
            items.append(old_profile(fid, mode))
    with open(OUT, "w") as fh:
        fh.write(yaml_items(items, cal))
    print(f"wrote {len(items)} profiles to {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
