"""Turn calibrate.py --families' raw rows into the coefficients of calibration-families.json.

    python3 benchmarks/accuracy/derive_families.py              # no torch needed
    python3 benchmarks/accuracy/derive_families.py --markdown   # FAMILIES.md's coefficient tables

Input: calibration-families-runs.json (each row: model, variant, mode, and the exact solution of
X(L, n) = c0 + c1 L + n (a0 + a1 L) from 1- and 2-layer runs at two token counts).

Output, calibration-families.json:

* ``models``: per calibrated model and mode (``<precision>/<task>[/ckpt]``), per layer type
  (``base`` = the model's usual layer; ``full`` / ``dense`` = its other layer kind where it has one),
  a1 (bytes per token per layer), a0 (bytes per token outside the layers), c0, c1 (bytes), at the
  calibration sequence length ``seq``, plus ``ctx_slope`` (d a1 / d seq, d a0 / d seq) where a
  shorter-context variant was run (eager / math attention and explicit masks grow with the context).
* ``slopes``: per model and mode, d a1 / d width and d a0 / d width for every width a variant changed
  (MLP width I, experts per token k, experts E, shared-expert width, LoRA rank, context).
* ``decompositions``: for Qwen3 (SDPA) and Gemma-2 (eager) a full linear decomposition of a1 and a0 in
  the widths h, q = heads x head_dim, kv = kv_heads x head_dim, I, heads, heads x context, V (solved
  exactly from 7 / 8 width variants); check_families.py uses it for the held-out Qwen3-8B and
  Gemma-2-9B.
* ``kv_cache``: bytes per token and layer that the KV cache stores, per family (measured at full depth).
* ``lora``: peft LoRA's extra saved bytes per token and layer, as a function of rank, from the rank
  16 / 32 and dropout variants.
"""

from __future__ import annotations

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

LAYER_TYPE_VARIANTS = {"base": "base", "full": "full", "dense": "dense"}


def mode_key(r):
    return f"{r['precision']}/{r['task']}" + ("/ckpt" if r["gradient_checkpointing"] else "")


def width(arch, name, seq):
    """The value of one width term in a run's architecture (arch_L1 of its 1-layer run)."""
    g = lambda *ks: next((arch[k] for k in ks if arch.get(k) is not None), None)
    heads, hd = arch["attention_heads"], arch["head_dim"]
    kv = arch["kv_heads"]
    experts = g("num_experts", "num_local_experts", "n_routed_experts")
    return {
        "1": 1,
        "h": arch["hidden_size"],
        "q": heads * hd,
        "kv": kv * hd,
        "I": arch.get("intermediate_size") or arch.get("ffn_dim"),
        "Ie": g("moe_intermediate_size") if g("moe_intermediate_size") else arch.get("intermediate_size"),
        "k": g("num_experts_per_tok"),
        "E": experts,
        "Ish": g("shared_expert_intermediate_size"),
        "sh": g("n_shared_experts"),
        "heads": heads,
        "heads_ctx": heads * seq,
        "ctx": seq,
        "V": arch["vocab_size"],
    }[name]


# variant -> the width it changes (the slope is reported per unit of that width)
VARIANT_TERM = {
    "I4480": "I",
    "I2048": "I",
    "I8192": "I",
    "I4608": "I",
    "I3456": "I",
    "I4096": "I",
    "Ie704": "Ie",
    "Ie384": "Ie",
    "Ie1440": "Ie",
    "k1": "k",
    "k2": "k",
    "k3": "k",
    "k4": "k",
    "E4": "E",
    "E16": "E",
    "E30": "E",
    "E32": "E",
    "E64": "E",
    "Ish2816": "Ish",
    "sh1": "sh",
    "s2048": "ctx",
    "s1024": "ctx",
    "s4096": "ctx",
    "full-s2048": "ctx",
    "h1280": "h",
    "h2048": "h",
    "kv4": "kv",
    "kv8": "kv",
    "heads32": "heads",
    "heads16": "heads",
    "hd64": "hd",
    "hd128": "hd",
    "V100k": "V",
    "V128k": "V",
}

DECOMP = {
    # model: (terms, variants used)
    "qwen3-0.6b": (
        ["1", "h", "q", "kv", "I", "heads", "V"],
        ["base", "I2048", "h1280", "kv4", "heads32", "hd64", "V100k"],
    ),
    "gemma2-2b": (
        ["1", "h", "q", "kv", "I", "heads", "heads_ctx", "V"],
        ["base", "s2048", "I4608", "h2048", "kv8", "heads16", "hd128", "V128k"],
    ),
}


def solve_exact(A, b):
    """Gaussian elimination with partial pivoting (no numpy needed)."""
    n = len(A)
    M = [list(map(float, A[i])) + [float(b[i])] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c]))
        if abs(M[p][c]) < 1e-12:
            raise ValueError("singular system")
        M[c], M[p] = M[p], M[c]
        for r in range(n):
            if r != c:
                f = M[r][c] / M[c][c]
                for k in range(c, n + 1):
                    M[r][k] -= f * M[c][k]
    return [M[i][n] / M[i][i] for i in range(n)]


def main():
    runs = json.load(open(os.path.join(HERE, "calibration-families-runs.json")))
    rows = runs["rows"]
    by = {}
    for r in rows:
        by[(r["model"], r["variant"], mode_key(r))] = r

    models = {}
    for (model, variant, mk), r in by.items():
        if variant not in LAYER_TYPE_VARIANTS and not variant.startswith("lora") and variant != "full":
            continue
        m = models.setdefault(model, dict(seq=None, modes={}))
        if variant in LAYER_TYPE_VARIANTS:
            m["seq"] = m["seq"] or r["seq"]
        ent = m["modes"].setdefault(mk, {})
        ent[variant] = dict(a1=r["a1"], a0=r["a0"], c0=r["c0"], c1=r["c1"], seq=r["seq"])

    slopes = {}
    for (model, variant, mk), r in by.items():
        term = VARIANT_TERM.get(variant)
        if term is None:
            continue
        if term == "ctx" and variant != "s4096" and (model, "s4096", mk) in by:
            continue  # the longer-context variant gives the cleaner slope (Falcon's math attention)
        basevar = "full" if variant.startswith("full-") else "base"
        base = by.get((model, basevar, mk))
        if base is None:
            continue
        if term == "hd":
            continue  # changes q and kv together: used by the decompositions only
        wb = width(base["arch_L1"], term, base["seq"])
        wv = width(r["arch_L1"], term, r["seq"])
        if wb == wv:
            continue
        d = wv - wb
        s = slopes.setdefault(model, {}).setdefault(mk, {})
        s[f"{term}" + ("" if basevar == "base" else f"@{basevar}")] = dict(
            d_a1=(r["a1"] - base["a1"]) / d,
            d_a0=(r["a0"] - base["a0"]) / d,
            per=term,
            from_variant=variant,
            base_value=wb,
            variant_value=wv,
        )
        if term == "ctx":
            ent = models[model]["modes"][mk][basevar]
            ent["ctx_slope_a1"] = (r["a1"] - base["a1"]) / d
            ent["ctx_slope_a0"] = (r["a0"] - base["a0"]) / d

    decomps = {}
    for model, (terms, variants) in DECOMP.items():
        for mk in sorted({k[2] for k in by if k[0] == model and k[1] == variants[1]}):
            rs = [by.get((model, v, mk)) for v in variants]
            if any(x is None for x in rs):
                continue
            A = [[width(x["arch_L1"], t, x["seq"]) for t in terms] for x in rs]
            out = {}
            for key in ("a1", "a0"):
                coef = solve_exact(A, [x[key] for x in rs])
                out[key] = {t: c for t, c in zip(terms, coef)}
            decomps.setdefault(model, {})[mk] = out

    # KV cache bytes per token and layer, from the full-depth generation cases
    kv = {}
    res = json.load(open(os.path.join(HERE, "results-families.json")))
    for c in res["cases"]:
        if c["inputs"]["task"] != "inference" or "error" in c:
            continue
        m, i = c["model"], c["inputs"]
        b = c["breakdown_at_peak_detail"].get("kv_cache", 0)
        kv[c["inputs"]["model"]] = dict(
            bytes_per_token_layer_at_prefill=b / (m["layers"] * i["batch"] * i["seq"]),
            formula_2_kvheads_headdim_bytes=2 * m["kv_heads"] * m["head_dim"] * 2,
        )

    # LoRA: extra per-layer bytes over full fine-tuning's saved activations, and their rank slope
    lora = {}
    for mk in sorted({k[2] for k in by if k[0] == "llama3-8b-peft"}):
        get = lambda v: by.get(("llama3-8b-peft", v, mk))
        r16, r32, d16, d32, full = (
            get("lora-r16"),
            get("lora-r32"),
            get("lora-r16-drop"),
            get("lora-r32-drop"),
            get("full"),
        )
        if not (r16 and r32):
            continue
        ent = dict(
            a1_r16=r16["a1"],
            a0_r16=r16["a0"],
            a1_r32=r32["a1"],
            a0_r32=r32["a0"],
            a1_per_rank=(r32["a1"] - r16["a1"]) / 16,
            a0_per_rank=(r32["a0"] - r16["a0"]) / 16,
        )
        if d16 and d32:
            ent.update(
                a1_r16_dropout=d16["a1"],
                a0_r16_dropout=d16["a0"],
                a1_r32_dropout=d32["a1"],
                a0_r32_dropout=d32["a0"],
                dropout_extra_a1=d16["a1"] - r16["a1"],
                dropout_extra_a0=d16["a0"] - r16["a0"],
                dropout_a1_per_rank=(d32["a1"] - d16["a1"]) / 16,
            )
        if full:
            ent.update(full_ft_a1=full["a1"], full_ft_a0=full["a0"])
        lora[mk] = ent

    doc = dict(
        method=(
            "calibrate.py --families rows (1- and 2-layer runs at full width, two token counts) solved "
            "per model, variant and mode; see derive_families.py's docstring for each section"
        ),
        torch=runs.get("torch"),
        transformers=runs.get("transformers"),
        models=models,
        slopes=slopes,
        decompositions=decomps,
        kv_cache=kv,
        lora=lora,
    )
    doc["profiles"] = profiles(doc, runs)
    with open(os.path.join(HERE, "calibration-families.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(
        f"{len(models)} models, {sum(len(v) for v in slopes.values())} slope sets, "
        f"{len(decomps)} decompositions, {len(lora)} LoRA modes"
    )


def markdown():
    """Print the per-model coefficient tables of FAMILIES.md from calibration-families.json."""
    doc = json.load(open(os.path.join(HERE, "calibration-families.json")))
    order = [
        "fp32/training",
        "fp32/training/ckpt",
        "bf16/training",
        "bf16/training/ckpt",
        "mixed/training",
        "mixed/training/ckpt",
        "fp32/inference",
        "bf16/inference",
        "mixed/inference",
    ]
    for model, m in doc["models"].items():
        print(f"\n#### {model} (calibrated at seq {m['seq']})\n")
        print("| mode | layer | a1 B/token/layer | a0 B/token | c0 MB | c1 MB | d a1/d seq | d a0/d seq |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for mk in order + sorted(set(m["modes"]) - set(order)):
            for v, e in sorted(m["modes"].get(mk, {}).items()):
                s1 = e.get("ctx_slope_a1")
                s0 = e.get("ctx_slope_a0")
                print(
                    f"| {mk} | {v} | {e['a1']:,.0f} | {e['a0']:,.0f} | {e['c0'] / 1e6:.1f} | {e['c1'] / 1e6:.1f} | "
                    f"{'' if s1 is None else f'{s1:.2f}'} | {'' if s0 is None else f'{s0:.2f}'} |"
                )
        for mk, sl in sorted(doc["slopes"].get(model, {}).items()):
            print(
                f"\n{mk} slopes: "
                + "; ".join(
                    f"{k}: d a1 {v['d_a1']:+.2f}, d a0 {v['d_a0']:+.2f} per unit" for k, v in sorted(sl.items())
                )
            )
    for model, d in doc["decompositions"].items():
        print(f"\n#### decomposition {model}\n")
        for mk, e in sorted(d.items()):
            print(f"{mk}: a1 = " + " + ".join(f"{c:.3f}*{t}" for t, c in e["a1"].items()))
            print(f"{mk}: a0 = " + " + ".join(f"{c:.3f}*{t}" for t, c in e["a0"].items()))


# ------------------------------------------------------------------------------------------------
# Profiles: the coefficients re-expressed per family in gpusizer's terms (what a rule multiplies by
# the workload's widths). Terms per token and layer: h, q (= heads x head_dim), kv, I, H (heads),
# H_ctx (heads x context: eager / math attention), mask_ctx (context: the saved additive mask of a
# sliding layer once the context exceeds its window), const; MoE layers add per routed path
# Ie_path x Ie + h_path x h + const_path, E x experts and Ish x shared-expert width. Where one shape
# was measured, whatever the structural terms leave is put on h (``h_residual``), so the profile
# reproduces that model exactly and scales with h for other sizes (an assumption the held-out
# Qwen3-8B / Gemma-2-9B test only for their own families).
# ------------------------------------------------------------------------------------------------

LLAMA = {
    "fp32": dict(h=24, q=8, kv=8, I=16, H=4, const=8),
    "bf16": dict(h=16, q=4, kv=4, I=8, H=4, const=8),
    "mixed": dict(h=26, q=4, kv=4, I=8, H=4, const=8),
}
LOGITS = {"fp32": dict(V=12, h=12, const=20), "bf16": dict(V=12, h=8, const=20), "mixed": dict(V=12, h=10, const=20)}
PREFILL = {"fp32": dict(I=12, h=16, const=8), "bf16": dict(I=6, h=8, const=8), "mixed": dict(I=12, h=16, const=8)}
CKPT_H = {"fp32": 4, "bf16": 2, "mixed": 4}

PROFILE_MODELS = {  # profile -> (calibrated model, MLP I coefficient per mode, attention extra terms)
    "llama": "llama3.2-1b",
    "qwen3": "qwen3-0.6b",
    "gemma": "gemma-2b",
    "gemma2": "gemma2-2b",
    "gemma3": "gemma3-1b",
    "phi3": "phi3-mini",
    "falcon": "falcon-7b",
    "gpt_neox": "pythia-1.4b",
    "opt": "opt-1.3b",
    "mixtral": "mixtral-8x7b-gmm",
    "qwen2_moe": "qwen1.5-moe-a2.7b",
    "qwen3_moe": "qwen3-30b-a3b",
    "deepseek_v2": "deepseek-v2-lite",
    "deepseek_v3": "deepseek-v3",
    "gpt_oss": "gpt-oss-20b",
}
MOE = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss"}


def arch_widths(a, seq):
    heads, hd = a["attention_heads"], a["head_dim"]
    if a.get("kv_lora_rank"):  # MLA: the query width SDPA sees
        hd = a["qk_nope_head_dim"] + a["qk_rope_head_dim"]
    g = lambda *ks: next((a[k] for k in ks if a.get(k) is not None), 0)
    return dict(
        h=a["hidden_size"],
        q=heads * hd,
        kv=a["kv_heads"] * (a["head_dim"] if not a.get("kv_lora_rank") else hd),
        I=a.get("intermediate_size") or 0,
        H=heads,
        H_ctx=heads * seq,
        mask_ctx=seq,
        const=1,
        V=a["vocab_size"],
        Ie=g("moe_intermediate_size") or (a.get("intermediate_size") or 0),
        k=g("num_experts_per_tok"),
        E=g("num_experts", "num_local_experts", "n_routed_experts"),
        Ish=g("shared_expert_intermediate_size") or (g("n_shared_experts") * g("moe_intermediate_size")),
    )


def dot(coef, w):
    return sum(c * w[t] for t, c in coef.items())


def profiles(doc, runs):
    base_arch = {}
    for r in runs["rows"]:
        if r["variant"] in ("base", "dense", "full"):
            base_arch[(r["model"], r["variant"])] = r["arch_L1"]
    out = {}
    for prof, model in PROFILE_MODELS.items():
        mdoc = doc["models"][model]
        seq = mdoc["seq"]
        sl = doc["slopes"].get(model, {})
        p = {"calibrated_on": model, "seq": seq, "modes": {}}
        for mode in ("fp32", "bf16", "mixed"):
            tr = mdoc["modes"].get(f"{mode}/training", {})
            ck = mdoc["modes"].get(f"{mode}/training/ckpt", {})
            inf = mdoc["modes"].get(f"{mode}/inference", {})
            s_tr = sl.get(f"{mode}/training", {})
            a = base_arch[(model, "base")]
            w = arch_widths(a, seq)
            layer = dict(LLAMA[mode])
            if prof == "gemma2":
                dec = doc["decompositions"]["gemma2-2b"][f"{mode}/training"]["a1"]
                layer = {
                    ("const" if t == "1" else "H_ctx" if t == "heads_ctx" else "H" if t == "heads" else t): c
                    for t, c in dec.items()
                    if abs(c) > 1e-6 and t != "V"
                }
            elif prof == "qwen3":
                dec = doc["decompositions"]["qwen3-0.6b"][f"{mode}/training"]["a1"]
                layer = {
                    ("const" if t == "1" else "H" if t == "heads" else t): round(c, 3)
                    for t, c in dec.items()
                    if abs(c) > 1e-6 and t != "V"
                }
            else:
                if "I" in s_tr:
                    layer["I"] = round(s_tr["I"]["d_a1"], 3)
                if prof in ("falcon",):
                    layer["I"] = {"fp32": 8, "bf16": 4, "mixed": 4}[mode]  # GELU, as Pythia's
                if prof in ("falcon", "gpt_oss"):
                    ctx = s_tr.get("ctx", {}).get("d_a1")
                    if ctx is not None:
                        layer["H_ctx"] = round(ctx / a["attention_heads"], 3)
                if prof in ("phi3", "gemma3") and "ctx" in s_tr:
                    layer["mask_ctx"] = round(s_tr["ctx"]["d_a1"], 3)
            moe = None
            if prof in MOE:
                layer.pop("I", None)
                k = w["k"]
                moe = {}
                if "Ie" in s_tr:
                    n_paths = k + (a.get("n_shared_experts") or 0 if prof.startswith("deepseek") else 0)
                    # DeepSeek's Ie slope covers routed and shared (shared width = n_shared x Ie)
                    if prof.startswith("deepseek") and mode == "mixed":
                        moe["Ie_path"] = 16.0
                        moe["Ish"] = 8.0
                    elif prof.startswith("deepseek"):
                        moe["Ie_path"] = s_tr["Ie"]["d_a1"] / n_paths
                        moe["Ish"] = moe["Ie_path"]
                    else:
                        moe["Ie_path"] = s_tr["Ie"]["d_a1"] / k
                else:  # Mixtral (no Ie variant): plain SwiGLU experts, fp32 under autocast
                    moe["Ie_path"] = {"fp32": 16.0, "bf16": 8.0, "mixed": 16.0}[mode]
                if "k" in s_tr:
                    rest = s_tr["k"]["d_a1"] - moe["Ie_path"] * w["Ie"]
                    moe["h_path"] = round(rest / w["h"], 6)
                if "E" in s_tr:
                    moe["E"] = round(s_tr["E"]["d_a1"], 3)
                if "Ish" in s_tr:
                    moe["Ish"] = round(s_tr["Ish"]["d_a1"], 3)
                if prof.startswith("deepseek") and "Ish" not in moe:
                    moe["Ish"] = moe["Ie_path"]
                moe = {t: round(c, 6) for t, c in moe.items()}
            # what the structural terms leave of the measured a1, on h
            e = tr.get("base")
            if e is not None:
                pred = dot(layer, w)
                if moe:
                    pred += k * (moe.get("Ie_path", 0) * w["Ie"] + moe.get("h_path", 0) * w["h"])
                    pred += moe.get("E", 0) * w["E"] + moe.get("Ish", 0) * w["Ish"]
                if "mask_ctx" in layer and prof == "gemma3":
                    pass  # base = sliding layer: its mask is inside a1
                resid = e["a1"] - pred
                if abs(resid) > 0.5:
                    layer["h_residual"] = round(resid / w["h"], 6)
            ent = {"layer": layer}
            if moe:
                ent["moe_layer"] = moe
            if prof.startswith("deepseek") and "dense" in tr:
                ad = base_arch[(model, "dense")]
                wd = arch_widths(ad, seq)
                dl = {t: c for t, c in layer.items() if t != "h_residual"}
                dl["I"] = LLAMA[mode]["I"]
                dl["h_residual"] = round((tr["dense"]["a1"] - dot(dl, wd)) / wd["h"], 6)
                ent["dense_layer"] = dl
            if prof == "gemma3" and "full" in tr:
                fl = {t: c for t, c in layer.items() if t not in ("mask_ctx", "h_residual")}
                fl["h_residual"] = round((tr["full"]["a1"] - dot(fl, w)) / w["h"], 6)
                ent["full_layer"] = fl
            # logits (outside the layers, no checkpointing)
            lg = dict(LOGITS[mode])
            if prof == "gemma2":
                lg["V"] = {"fp32": 16, "bf16": 14, "mixed": 14}[mode]
            if e is not None:
                r = e["a0"] - dot(lg, w)
                if abs(r) > 0.5:
                    lg["h_residual"] = round(r / w["h"], 6)
                ent["outside_c0"] = e["c0"]
            ent["logits"] = lg
            if ck.get("base"):
                ent["checkpoint"] = {
                    "per_h": CKPT_H[mode],
                    "outside_minus_logits_h": round((ck["base"]["a0"] - e["a0"]) / w["h"], 6) if e else 0,
                }
            if inf.get("base"):
                pf = dict(PREFILL[mode])
                if prof in MOE:
                    pf = {"const": 0}
                s_inf = sl.get(f"{mode}/inference", {})
                if prof == "gemma2" and f"{mode}/inference" in doc["decompositions"]["gemma2-2b"]:
                    dd = doc["decompositions"]["gemma2-2b"][f"{mode}/inference"]
                    ren = lambda t: {"1": "const", "heads": "H", "heads_ctx": "H_ctx"}.get(t, t)
                    pf = {}
                    for t, c in dd["a0"].items():
                        pf[ren(t)] = pf.get(ren(t), 0) + c
                    for t, c in dd["a1"].items():
                        pf[ren(t)] = pf.get(ren(t), 0) + 2 * c
                    pf = {t: round(c, 6) for t, c in pf.items() if abs(c) > 1e-6}
                elif prof in ("falcon", "gpt_oss") and "ctx" in s_inf:
                    pf["H_ctx"] = round(s_inf["ctx"]["d_a0"] / a["attention_heads"], 6)
                x2 = inf["base"]["a0"] + 2 * inf["base"]["a1"]
                r = x2 - dot(pf, w)
                if abs(r) > 0.5:
                    pf["h_residual"] = round(r / w["h"], 6)
                ent["prefill"] = pf
            p["modes"][mode] = ent
        out[prof] = p
    return out


if __name__ == "__main__":
    import sys

    markdown() if "--markdown" in sys.argv else main()
