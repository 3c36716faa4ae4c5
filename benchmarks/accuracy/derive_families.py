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
    g = lambda *ks: next((arch[k] for k in ks if arch.get(k) is not None), None)  # noqa: E731
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
    "I4480": "I", "I2048": "I", "I8192": "I", "I4608": "I", "I3456": "I", "I4096": "I",
    "Ie704": "Ie", "Ie384": "Ie", "Ie1440": "Ie",
    "k1": "k", "k2": "k", "k3": "k", "k4": "k",
    "E4": "E", "E16": "E", "E30": "E", "E32": "E", "E64": "E",
    "Ish2816": "Ish", "sh1": "sh",
    "s2048": "ctx", "s1024": "ctx", "s4096": "ctx", "full-s2048": "ctx",
    "h1280": "h", "h2048": "h", "kv4": "kv", "kv8": "kv", "heads32": "heads", "heads16": "heads",
    "hd64": "hd", "hd128": "hd", "V100k": "V", "V128k": "V",
}

DECOMP = {
    # model: (terms, variants used)
    "qwen3-0.6b": (["1", "h", "q", "kv", "I", "heads", "V"],
                   ["base", "I2048", "h1280", "kv4", "heads32", "hd64", "V100k"]),
    "gemma2-2b": (["1", "h", "q", "kv", "I", "heads", "heads_ctx", "V"],
                  ["base", "s2048", "I4608", "h2048", "kv8", "heads16", "hd128", "V128k"]),
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
            d_a1=(r["a1"] - base["a1"]) / d, d_a0=(r["a0"] - base["a0"]) / d, per=term, from_variant=variant,
            base_value=wb, variant_value=wv)
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
            formula_2_kvheads_headdim_bytes=2 * m["kv_heads"] * m["head_dim"] * 2)

    # LoRA: extra per-layer bytes over full fine-tuning's saved activations, and their rank slope
    lora = {}
    for mk in sorted({k[2] for k in by if k[0] == "llama3-8b-peft"}):
        get = lambda v: by.get(("llama3-8b-peft", v, mk))  # noqa: E731
        r16, r32, d16, d32, full = get("lora-r16"), get("lora-r32"), get("lora-r16-drop"), get("lora-r32-drop"), get("full")
        if not (r16 and r32):
            continue
        ent = dict(a1_r16=r16["a1"], a0_r16=r16["a0"], a1_r32=r32["a1"], a0_r32=r32["a0"],
                   a1_per_rank=(r32["a1"] - r16["a1"]) / 16, a0_per_rank=(r32["a0"] - r16["a0"]) / 16)
        if d16 and d32:
            ent.update(a1_r16_dropout=d16["a1"], a0_r16_dropout=d16["a0"],
                       a1_r32_dropout=d32["a1"], a0_r32_dropout=d32["a0"],
                       dropout_extra_a1=d16["a1"] - r16["a1"], dropout_extra_a0=d16["a0"] - r16["a0"],
                       dropout_a1_per_rank=(d32["a1"] - d16["a1"]) / 16)
        if full:
            ent.update(full_ft_a1=full["a1"], full_ft_a0=full["a0"])
        lora[mk] = ent

    doc = dict(
        method=("calibrate.py --families rows (1- and 2-layer runs at full width, two token counts) solved "
                "per model, variant and mode; see derive_families.py's docstring for each section"),
        torch=runs.get("torch"), transformers=runs.get("transformers"),
        models=models, slopes=slopes, decompositions=decomps, kv_cache=kv, lora=lora)
    with open(os.path.join(HERE, "calibration-families.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(models)} models, {sum(len(v) for v in slopes.values())} slope sets, "
          f"{len(decomps)} decompositions, {len(lora)} LoRA modes")


def markdown():
    """Print the per-model coefficient tables of FAMILIES.md from calibration-families.json."""
    doc = json.load(open(os.path.join(HERE, "calibration-families.json")))
    order = ["fp32/training", "fp32/training/ckpt", "bf16/training", "bf16/training/ckpt", "mixed/training",
             "mixed/training/ckpt", "fp32/inference", "bf16/inference", "mixed/inference"]
    for model, m in doc["models"].items():
        print(f"\n#### {model} (calibrated at seq {m['seq']})\n")
        print("| mode | layer | a1 B/token/layer | a0 B/token | c0 MB | c1 MB | d a1/d seq | d a0/d seq |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for mk in order + sorted(set(m["modes"]) - set(order)):
            for v, e in sorted(m["modes"].get(mk, {}).items()):
                s1 = e.get("ctx_slope_a1")
                s0 = e.get("ctx_slope_a0")
                print(f"| {mk} | {v} | {e['a1']:,.0f} | {e['a0']:,.0f} | {e['c0'] / 1e6:.1f} | {e['c1'] / 1e6:.1f} | "
                      f"{'' if s1 is None else f'{s1:.2f}'} | {'' if s0 is None else f'{s0:.2f}'} |")
        for mk, sl in sorted(doc["slopes"].get(model, {}).items()):
            print(f"\n{mk} slopes: " + "; ".join(f"{k}: d a1 {v['d_a1']:+.2f}, d a0 {v['d_a0']:+.2f} per unit"
                                                  for k, v in sorted(sl.items())))
    for model, d in doc["decompositions"].items():
        print(f"\n#### decomposition {model}\n")
        for mk, e in sorted(d.items()):
            print(f"{mk}: a1 = " + " + ".join(f"{c:.3f}*{t}" for t, c in e["a1"].items()))
            print(f"{mk}: a0 = " + " + ".join(f"{c:.3f}*{t}" for t, c in e["a0"].items()))


if __name__ == "__main__":
    import sys

    markdown() if "--markdown" in sys.argv else main()
