"""Recompute every full-depth case of results-families.json from the formulas of FAMILIES.md.

    python3 benchmarks/accuracy/check_families.py [--verbose]      # no torch needed

Inputs: results-families.json (the measured cases and their architecture numbers) and
calibration-families.json (the coefficients derive_families.py fitted on 1- and 2-layer runs). No
full-depth measurement feeds a coefficient. Qwen3-8B and Gemma-2-9B are held out: their activations
come from the width decompositions fitted on Qwen3-0.6B and Gemma-2-2B.

Training (AdamW foreach, steady state):
    peak = max(forward/backward, optimizer step)
    forward/backward = weights + autocast casts + optimizer state + activations
    optimizer step   = weights + gradients + optimizer state + step temporary
    weights = P x w  (w = 2 bf16, 4 fp32 / mixed); LoRA: (P - T) x w + T x 4 (peft keeps adapters fp32)
    gradients = T x g, optimizer state = 2 T x g, step temporary = T x g  (g = 2 for pure bf16 full
        fine-tuning, else 4: fp32 master weights or fp32 adapters)
    casts (mixed only) = 2 x (P - untied input embedding - expert weights) without checkpointing
        (grouped_mm experts are never cast), 2 x V x h (the lm_head's cast) with checkpointing
    activations = tokens x (sum over layer types of count x a1_type + a0) + c0 + sum count x c1
        with a1, a0 (and their context slope where the attention grows with the context) per family
        and mode, a0 = the largest of the types present
Generation (prefill of the whole prompt, then decode steps):
    peak = weights + KV cache bytes per token and layer x layers x batch x prompt + prefill activations
    KV cache bytes per token and layer = 2 x kv_heads x head_dim x w; DeepSeek (MLA):
        (kv_lora_rank + qk_rope_head_dim) x w, the compressed latent transformers caches
    prefill activations = tokens x (a0 + 2 a1) + c0 + 2 c1: what the second of two layers holds (its
        own largest transient and the first layer's output) is what every later layer holds, so the
        prefill transient does not grow with depth (the largest over the layer kinds present)
Error % = (predicted - measured) / measured.
"""

from __future__ import annotations

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

HELD_OUT = {"qwen3-8b": "qwen3-0.6b", "gemma2-9b": "gemma2-2b"}
PROFILES = False  # --profiles: activations from the per-family formulas (calibration-families.json profiles)


def mode_key(inp):
    prec = inp["precision"]
    return f"{prec}/{inp['task']}" + ("/ckpt" if inp.get("gradient_checkpointing") else "")


def widths(m, seq):
    hd = m["head_dim"]
    return {
        "1": 1,
        "h": m["hidden_size"],
        "q": m["attention_heads"] * hd,
        "kv": m["kv_heads"] * hd,
        "I": m["intermediate_size"],
        "heads": m["attention_heads"],
        "heads_ctx": m["attention_heads"] * seq,
        "V": m["vocab_size"],
    }


def layer_counts(m):
    """{calibration layer variant: number of layers}."""
    L = m["layers"]
    lt = m.get("layer_types")
    if m["family"] in ("deepseek_v2", "deepseek_v3"):
        k = min(m.get("first_k_dense_replace") or 0, L)
        return {"dense": k, "base": L - k} if k else {"base": L}
    if lt and m["family"] in ("gemma3_text", "gpt_oss"):
        return {"base": lt.get("sliding_attention", 0), "full": lt.get("full_attention", 0)}
    return {"base": L}


def coeffs(cal, case):
    """(per layer variant: (a1, a0, c0, c1)) at the case's sequence length."""
    inp, m = case["inputs"], case["model"]
    mk = mode_key(inp)
    seq = inp["seq"]
    name = inp["model"]
    if name in HELD_OUT:
        decs = cal["decompositions"][HELD_OUT[name]]
        w = widths(m, seq)
        ev = lambda d: sum(c * w[t] for t, c in d.items())
        if inp["task"] != "training":
            # the prefill transient is the larger of the attention moment (the decomposition, fitted
            # where attention was the larger) and the MLP moment: gate, up and their product at once
            # plus the residual stream, 6 I + 8 h bytes per token in bf16 (12 I + 16 h in fp32), as
            # Llama-3.2-1B's prefill measures it (6 x 8192 + 8 x 2048 + 8 = 65,544)
            d = decs[mk]
            attn = ev(d["a0"]) + 2 * ev(d["a1"])
            k = 1 if inp["precision"] == "bf16" else 2
            mlp = k * (6 * m["intermediate_size"] + 8 * m["hidden_size"])
            return {"base": (0.0, max(attn, mlp), 0.0, 0.0)}
        if mk in decs:
            return {"base": (ev(decs[mk]["a1"]), ev(decs[mk]["a0"]), 0.0, 0.0)}
        # checkpointed: each layer keeps its input (h values in the activation dtype, fp32 under
        # autocast); outside the layers the larger of the logits term and one recomputed layer
        dec = decs[mk.replace("/ckpt", "")]
        a1, a0 = ev(dec["a1"]), ev(dec["a0"])
        per = (2 if inp["precision"] == "bf16" else 4) * m["hidden_size"]
        return {"base": (per, max(a0, a1 + per), 0.0, 0.0)}
    modes = cal["models"][name]["modes"][mk]
    if inp.get("lora"):
        v = "lora-r16-drop" if inp["lora"].get("lora_dropout") else "lora-r16"
        e = modes[v]
        return {"base": (e["a1"], e["a0"], e["c0"], e["c1"])}
    out = {}
    for v, e in modes.items():
        if v not in ("base", "full", "dense"):
            continue
        a1, a0 = e["a1"], e["a0"]
        ds = seq - e["seq"]
        if ds:
            s1 = e.get("ctx_slope_a1")
            s0 = e.get("ctx_slope_a0")
            if s1 is None:  # checkpointed: the recomputed layer grows as a no-checkpoint layer does
                ref = cal["models"][name]["modes"].get(mk.replace("/ckpt", ""), {}).get(v, {})
                s1c = ref.get("ctx_slope_a1")
                s1, s0 = (0.0, s1c or 0.0) if mk.endswith("/ckpt") else (0.0, 0.0)
            a1 += s1 * ds
            a0 += (s0 or 0.0) * ds
        out[v] = (a1, a0, e["c0"], e["c1"])
    return out


def activations(cal, case):
    inp, m = case["inputs"], case["model"]
    n = inp["batch"] * inp["seq"]
    co = coeffs(cal, case)
    counts = layer_counts(m)
    if inp["task"] != "training":
        # a prefill holds one layer's transient and the previous layer's output, whatever the depth:
        # the 2-layer figure, X(2, n) = n (a0 + 2 a1) + c0 + 2 c1
        v = max((v for v, cnt in counts.items() if cnt), key=lambda v: co[v][1] + 2 * co[v][0])
        a1, a0, c0, c1 = co[v]
        return n * (a0 + 2 * a1) + c0 + 2 * c1
    total_a1 = sum(cnt * co[v][0] for v, cnt in counts.items() if cnt)
    a0 = max(co[v][1] for v, cnt in counts.items() if cnt)
    c = max(co[v][2] for v, cnt in counts.items() if cnt) + sum(cnt * co[v][3] for v, cnt in counts.items() if cnt)
    return n * (total_a1 + a0) + c


def kv_bytes_per_token_layer(m, w):
    """What transformers 5.24's cache keeps per token and layer (all prompt tokens at the prefill peak,
    sliding layers included): K and V of kv_heads x head_dim, or DeepSeek's compressed latent."""
    if m.get("kv_lora_rank"):
        return (m["kv_lora_rank"] + m["qk_rope_head_dim"]) * w
    return 2 * m["kv_heads"] * m["head_dim"] * w


PROFILE_OF = {
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "llama",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
    "phi3": "phi3",
    "falcon": "falcon",
    "gpt_neox": "gpt_neox",
    "opt": "opt",
    "mixtral": "mixtral",
    "qwen2_moe": "qwen2_moe",
    "qwen3_moe": "qwen3_moe",
    "deepseek_v2": "deepseek_v2",
    "deepseek_v3": "deepseek_v3",
    "gpt_oss": "gpt_oss",
}


def profile_widths(m, seq):
    heads, hd = m["attention_heads"], m["head_dim"]
    kvw = m["kv_heads"] * hd
    if m.get("kv_lora_rank"):
        hd = m["qk_nope_head_dim"] + m["qk_rope_head_dim"]
        kvw = m["kv_heads"] * hd
    g = lambda *ks: next((m[k] for k in ks if m.get(k) is not None), 0)
    return dict(
        h=m["hidden_size"],
        q=heads * hd,
        kv=kvw,
        I=m.get("intermediate_size") or 0,
        H=heads,
        H_ctx=heads * seq,
        mask_ctx=seq,
        const=1,
        V=m["vocab_size"],
        Ie=g("moe_intermediate_size") or (m.get("intermediate_size") or 0),
        k=g("num_experts_per_tok"),
        E=g("num_experts", "num_local_experts", "n_routed_experts"),
        Ish=g("shared_expert_intermediate_size") or (g("n_shared_experts") * g("moe_intermediate_size")),
    )


def _lin(coef, w, skip=()):
    return sum(c * (w["h"] if t == "h_residual" else w[t]) for t, c in coef.items() if t not in skip)


def activations_profile(cal, case):
    """The same activations from calibration-families.json's ``profiles`` (formulas in the widths)."""
    inp, m = case["inputs"], case["model"]
    seq, n = inp["seq"], inp["batch"] * inp["seq"]
    prec = inp["precision"]
    w = profile_widths(m, seq)
    if inp.get("lora"):  # the LoRA formula of FAMILIES.md on top of the Llama profile (bf16); mixed as measured
        lo = cal["lora"][mode_key(inp)]
        if inp["task"] == "training" and not inp["gradient_checkpointing"] and prec == "bf16":
            p = cal["profiles"]["llama"]["modes"]["bf16"]
            r = inp["lora"]["r"]
            a1 = _lin(p["layer"], w) + 16 * w["h"] + 2 * w["I"] + 28 * r
            if inp["lora"].get("lora_dropout"):
                a1 += 6 * w["h"] + w["I"]
            a0 = lo["a0_r16_dropout" if inp["lora"].get("lora_dropout") else "a0_r16"]
            return n * (m["layers"] * a1 + a0)
        return activations(cal, case)
    prof = cal["profiles"][PROFILE_OF[m["family"]]]["modes"][prec]
    if inp["task"] != "training":
        return n * _lin(prof["prefill"], w)
    logits = _lin(prof["logits"], w)
    if inp["gradient_checkpointing"]:
        ck = prof["checkpoint"]
        return (
            n * (m["layers"] * ck["per_h"] * w["h"] + logits + ck["outside_minus_logits_h"] * w["h"])
            + prof["outside_c0"]
        )
    L = m["layers"]
    counts = {"layer": L}
    if m["family"] in ("deepseek_v2", "deepseek_v3"):
        kd = min(m.get("first_k_dense_replace") or 0, L)
        counts = {"dense_layer": kd, "layer": L - kd}
    elif m["family"] == "gemma3_text":
        lt = m.get("layer_types", {})
        counts = {"layer": lt.get("sliding_attention", 0), "full_layer": lt.get("full_attention", 0)}
    total = 0.0
    for kind, cnt in counts.items():
        if not cnt:
            continue
        coef = prof[kind]
        skip = ()
        if "mask_ctx" in coef and seq <= (m.get("sliding_window") or 0):
            skip = ("mask_ctx",)  # no explicit mask while the context fits the window
        a1 = _lin(coef, w, skip)
        if kind == "layer" and "moe_layer" in prof:
            mo = prof["moe_layer"]
            a1 += w["k"] * (mo.get("Ie_path", 0) * w["Ie"] + mo.get("h_path", 0) * w["h"])
            a1 += mo.get("E", 0) * w["E"] + mo.get("Ish", 0) * w["Ish"]
        total += cnt * a1
    return n * (total + logits) + prof["outside_c0"]


def predict(cal, case):
    inp, m = case["inputs"], case["model"]
    P, T = m["params"], m["trainable_params"]
    prec = inp["precision"]
    w = 2 if prec == "bf16" else 4
    parts = {}
    if inp["task"] == "training":
        lora = bool(inp.get("lora"))
        g = 4 if (lora or prec != "bf16") else 2
        weights = (P - T) * w + T * 4 if lora else P * w
        if prec == "mixed":
            if inp["gradient_checkpointing"]:
                casts = 2 * m["vocab_size"] * m["hidden_size"]
            else:
                untied_in = 0 if m["tied_embeddings"] else m["embedding_params"]
                casts = 2 * (P - untied_in - m.get("expert_params", 0))
        else:
            casts = 0
        state = 2 * T * g
        act = (activations_profile if PROFILES else activations)(cal, case)
        fb = weights + casts + state + act
        opt = weights + T * g + state + T * g
        parts = dict(
            weights=weights,
            casts=casts,
            optimizer_state=state,
            activations=act,
            forward_backward=fb,
            optimizer_step=opt,
        )
        return max(fb, opt), ("forward/backward" if fb >= opt else "optimizer"), parts
    kvb = kv_bytes_per_token_layer(m, w)
    weights = P * w
    kv = kvb * m["layers"] * inp["batch"] * inp["seq"]
    act = (activations_profile if PROFILES else activations)(cal, case)
    parts = dict(weights=weights, kv_cache=kv, activations=act)
    return weights + kv + act, "prefill", parts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument(
        "--profiles",
        action="store_true",
        help="activations from the per-family formulas in the widths instead of per-model coefficients",
    )
    ap.add_argument("--results", default=os.path.join(HERE, "results-families.json"))
    ap.add_argument("--calibration", default=os.path.join(HERE, "calibration-families.json"))
    args = ap.parse_args()
    global PROFILES
    PROFILES = args.profiles
    res = json.load(open(args.results))
    cal = json.load(open(args.calibration))
    errs = []
    print(f"{'case':46s} {'measured GiB':>12s} {'predicted':>10s} {'err %':>7s}  phase (measured / predicted)")
    for c in res["cases"]:
        if "error" in c:
            continue
        pred, phase, parts = predict(cal, c)
        meas = c["peak_bytes"]
        e = 100.0 * (pred - meas) / meas
        errs.append((c["name"], e))
        tag = " (held out)" if c["inputs"]["model"] in HELD_OUT else ""
        print(f"{c['name']:46s} {meas / 2**30:12.2f} {pred / 2**30:10.2f} {e:+7.2f}  {c['peak_phase']} / {phase}{tag}")
        if args.verbose:
            print("      " + ", ".join(f"{k} {v / 2**30:.2f}" for k, v in parts.items()))
    a = [abs(e) for _, e in errs]
    worst = max(errs, key=lambda x: abs(x[1]))
    print(
        f"\n{len(errs)} cases: mean |error| {sum(a) / len(a):.2f}%, max |error| {max(a):.2f}% ({worst[0]}), "
        f"within 1%: {sum(1 for x in a if x <= 1)}, within 5%: {sum(1 for x in a if x <= 5)}, "
        f"under by more than 5%: {sum(1 for _, e in errs if e < -5)}"
    )


if __name__ == "__main__":
    main()
