"""Derive the activation coefficients of gpusizer's memory model by differencing measured runs.

    /tmp/accvenv/bin/python benchmarks/accuracy/calibrate.py            # ~3-5 min on 2 cores
    /tmp/accvenv/bin/python benchmarks/accuracy/calibrate.py --only llama
    ... calibrate.py --families [--only MODEL]   # families.py's models -> calibration-families-runs.json

For each architecture family, precision mode and (for training) gradient checkpointing, the same
model is run (FakeTensorMode, the tracker and the loops of measure.py) at full width with 1 and 2
layers and two token counts n = batch x sequence. The tracker's peak of the "activations" category
alone (everything that is not a parameter, gradient, optimizer state, autocast weight copy or KV
cache) during forward/backward, or during the prefill for generation, is then

    X(L, n) = c0 + c1 * L + n * (a0 + a1 * L)

and four runs give the four numbers exactly: a1 = bytes per token per layer (what each layer keeps
for backward), a0 = bytes per token outside the layers (logits, the loss and its gradient; for
generation, the largest transient of one layer's forward pass), c0 + c1 * L = token-independent
bytes (gradients in flight, about 0). The widths are varied as well (MLP width I, vocabulary V,
KV heads) so that a1 and a0 can be split into per-h, per-I, per-KV and per-V parts, which is how
knowledge/activations.yaml states them. Writes calibration.json and prints a table.

Generation's a1 is not used: it is a small per-layer remainder (one hidden vector per token) that
only the 1-vs-2-layer difference shows; the full-depth cases in results.json check the prefill
figures without it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measure  # noqa: E402

# family -> (measure.MODELS family, base config, seq, batches, width variants)
BASE = {
    "llama": (
        "llama",
        dict(
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=32,
            intermediate_size=11008,
            vocab_size=32000,
            max_position_embeddings=8192,
        ),
        2048,
        (1, 2),
    ),
    "gpt2": ("gpt2", dict(n_embd=1600, n_head=25, vocab_size=50257, n_positions=1024), 1024, (2, 4)),
    "bert": (
        "bert",
        dict(
            hidden_size=1024,
            num_attention_heads=16,
            intermediate_size=4096,
            vocab_size=30522,
            max_position_embeddings=512,
        ),
        512,
        (8, 16),
    ),
    "mixtral": (
        "mixtral",
        dict(
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=8,
            intermediate_size=14336,
            vocab_size=32000,
            max_position_embeddings=8192,
            num_local_experts=8,
            num_experts_per_tok=2,
            sliding_window=None,
        ),
        2048,
        (1, 2),
    ),
}
# width variants: (label, changes); "base" first
VARIANTS = {
    "llama": [
        ("base", {}),
        ("I14336", dict(intermediate_size=14336)),
        ("V128256", dict(vocab_size=128256)),
        ("kv8", dict(num_key_value_heads=8)),
        ("eager", dict(attn="eager")),
    ],
    "gpt2": [("base", {}), ("I4800", dict(n_inner=4800)), ("eager", dict(attn="eager"))],
    "bert": [("base", {}), ("I3072", dict(intermediate_size=3072)), ("eager", dict(attn="eager"))],
    "mixtral": [("base", {})],
}
LAYER_KEY = {
    "llama": "num_hidden_layers",
    "gpt2": "n_layer",
    "bert": "num_hidden_layers",
    "mixtral": "num_hidden_layers",
}


def one(job):
    if len(job) == 10:
        return one_family(job)
    fam, variant, changes, precision, task, ckpt, layers, batch = job
    mfam, base, seq, _ = BASE[fam]
    cfg = dict(base, **changes)
    cfg[LAYER_KEY[fam]] = layers
    name = f"cal-{fam}-{variant}-L{layers}-b{batch}"
    measure.MODELS[name] = (mfam, cfg)
    if task == "training":
        case = measure.T(name, name, precision, batch, seq, ckpt)
        case["decode_steps"] = 0
    else:
        case = measure.I(name, name, precision, batch, seq, decode=1)
    import torch

    torch.set_num_threads(1)
    r = measure.run_case(case, fake=True)
    ap = r["activation_peaks"]
    x = max(ap.get("forward", 0), ap.get("backward", 0)) if task == "training" else ap["prefill"]
    return dict(job=job, params=r["arch"]["params"], x=x, activation_peaks=ap, tokens=batch * seq)


# ------------------------------------------------------------------------------------------------
# The families of families.py (calibrate.py --families): each calibrated model at its full width with
# 1 and 2 layers and two batch sizes, in every mode ("base"), plus width variants in four modes that
# separate the terms (MLP width, experts hit per token, experts, context length for eager / math
# attention, layer types, LoRA rank and dropout). Raw rows: calibration-families-runs.json;
# derive_families.py turns them into calibration-families.json.
# ------------------------------------------------------------------------------------------------

ALL_MODES = [
    (p, t, c)
    for p in ("fp32", "bf16", "mixed")
    for t, c in (("training", False), ("training", True), ("inference", False))
]
VAR_MODES = [
    ("fp32", "training", False),
    ("bf16", "training", False),
    ("mixed", "training", False),
    ("bf16", "inference", False),
]
LORA_MODES = [
    ("bf16", "training", False),
    ("bf16", "training", True),
    ("mixed", "training", False),
    ("mixed", "training", True),
]

_SL = dict(layer_type="sliding_attention")
_FU = dict(layer_type="full_attention")
# model -> (seq, batches, [(variant, config changes, modes)])
FAMILY_CAL = {
    "llama3.2-1b": (4096, (1, 2), [("base", {}, ALL_MODES), ("s2048", dict(seq=2048), VAR_MODES)]),
    "mistral-small-24b": (4096, (1, 2), [("base", {}, ALL_MODES)]),
    "mixtral-8x7b-gmm": (
        2048,
        (1, 2),
        [
            ("base", {}, ALL_MODES),
            ("k1", dict(num_experts_per_tok=1), VAR_MODES),
            ("E4", dict(num_local_experts=4), VAR_MODES),
        ],
    ),
    "qwen2.5-1.5b": (4096, (1, 2), [("base", {}, ALL_MODES), ("I4480", dict(intermediate_size=4480), VAR_MODES)]),
    "qwen3-0.6b": (
        4096,
        (1, 2),
        [
            ("base", {}, ALL_MODES),
            ("I2048", dict(intermediate_size=2048), VAR_MODES),
            ("h1280", dict(hidden_size=1280), VAR_MODES),
            ("kv4", dict(num_key_value_heads=4), VAR_MODES),
            ("heads32", dict(num_attention_heads=32), VAR_MODES),
            ("hd64", dict(head_dim=64), VAR_MODES),
            ("V100k", dict(vocab_size=100000), VAR_MODES),
        ],
    ),
    "qwen1.5-moe-a2.7b": (
        2048,
        (1, 2),
        [
            ("base", {}, ALL_MODES),
            ("Ie704", dict(moe_intermediate_size=704), VAR_MODES),
            ("k2", dict(num_experts_per_tok=2), VAR_MODES),
            ("E30", dict(num_experts=30), VAR_MODES),
            ("Ish2816", dict(shared_expert_intermediate_size=2816), VAR_MODES),
        ],
    ),
    "qwen3-30b-a3b": (
        4096,
        (1, 2),
        [
            ("base", {}, ALL_MODES),
            ("Ie384", dict(moe_intermediate_size=384), VAR_MODES),
            ("k4", dict(num_experts_per_tok=4), VAR_MODES),
            ("E64", dict(num_experts=64), VAR_MODES),
        ],
    ),
    "gemma-2b": (4096, (1, 2), [("base", {}, ALL_MODES), ("I8192", dict(intermediate_size=8192), VAR_MODES)]),
    "gemma2-2b": (
        4096,
        (1, 2),
        [
            ("base", dict(_SL), ALL_MODES),
            ("full", dict(_FU), VAR_MODES),
            ("s2048", dict(_SL, seq=2048), VAR_MODES),
            ("I4608", dict(_SL, intermediate_size=4608), VAR_MODES),
            ("h2048", dict(_SL, hidden_size=2048), VAR_MODES),
            ("kv8", dict(_SL, num_key_value_heads=8), VAR_MODES),
            ("heads16", dict(_SL, num_attention_heads=16), VAR_MODES),
            ("hd128", dict(_SL, head_dim=128), VAR_MODES),
            ("V128k", dict(_SL, vocab_size=128000), VAR_MODES),
        ],
    ),
    "gemma3-1b": (
        4096,
        (1, 2),
        [
            ("base", dict(_SL), ALL_MODES),
            ("full", dict(_FU), ALL_MODES),
            ("s2048", dict(_SL, seq=2048), VAR_MODES),
            ("full-s2048", dict(_FU, seq=2048), VAR_MODES),
            ("I3456", dict(_SL, intermediate_size=3456), VAR_MODES),
        ],
    ),
    "phi3-mini": (
        4096,
        (1, 2),
        [
            ("base", {}, ALL_MODES),
            ("I4096", dict(intermediate_size=4096), VAR_MODES),
            ("s2048", dict(seq=2048), VAR_MODES),
        ],
    ),
    # batches 2 and 4: with 1 and 2 the math attention's largest moment moves between the runs
    "falcon-7b": (
        2048,
        (2, 4),
        [("base", {}, ALL_MODES), ("s1024", dict(seq=1024), VAR_MODES), ("s4096", dict(seq=4096), VAR_MODES)],
    ),
    "pythia-1.4b": (2048, (1, 2), [("base", {}, ALL_MODES), ("I4096", dict(intermediate_size=4096), VAR_MODES)]),
    "opt-1.3b": (2040, (1, 2), [("base", {}, ALL_MODES), ("I4096", dict(ffn_dim=4096), VAR_MODES)]),
    "deepseek-v2-lite": (
        4096,
        (1, 2),
        [
            ("base", dict(first_k_dense_replace=0), ALL_MODES),
            ("dense", dict(first_k_dense_replace=99), ALL_MODES),
            ("Ie704", dict(first_k_dense_replace=0, moe_intermediate_size=704), VAR_MODES),
            ("k3", dict(first_k_dense_replace=0, num_experts_per_tok=3), VAR_MODES),
            ("E32", dict(first_k_dense_replace=0, n_routed_experts=32), VAR_MODES),
            ("sh1", dict(first_k_dense_replace=0, n_shared_experts=1), VAR_MODES),
            ("s2048", dict(first_k_dense_replace=0, seq=2048), VAR_MODES),
        ],
    ),
    "deepseek-v3": (
        4096,
        (1, 2),
        [("base", dict(first_k_dense_replace=0), ALL_MODES), ("dense", dict(first_k_dense_replace=99), ALL_MODES)],
    ),
    "gpt-oss-20b": (
        4096,
        (1, 2),
        [
            ("base", dict(_SL), ALL_MODES),
            ("full", dict(_FU), ALL_MODES),
            ("s2048", dict(_SL, seq=2048), VAR_MODES),
            ("Ie1440", dict(_SL, intermediate_size=1440), VAR_MODES),
            ("k2", dict(_SL, num_experts_per_tok=2), VAR_MODES),
            ("E16", dict(_SL, num_local_experts=16), VAR_MODES),
        ],
    ),
    # peft LoRA on Llama-3-8B: rank 16 / 32, with and without adapter dropout
    "llama3-8b-peft": (
        4096,
        (1, 2),
        [
            ("lora-r16", dict(lora=0.0), LORA_MODES),
            ("lora-r16-drop", dict(lora=0.05), LORA_MODES),
            ("lora-r32", dict(lora=0.0, r=32), LORA_MODES),
            ("lora-r32-drop", dict(lora=0.05, r=32), LORA_MODES),
            ("full", {}, [("bf16", "training", False), ("bf16", "training", True)]),
        ],
    ),
}


def family_jobs(only=None):
    jobs = []
    for model, (seq, batches, variants) in FAMILY_CAL.items():
        if only and only not in model:
            continue
        for variant, changes, modes in variants:
            for precision, task, ckpt in modes:
                for layers in (1, 2):
                    for b in batches:
                        jobs.append((model, variant, changes, precision, task, ckpt, layers, b, seq, "fam"))
    return jobs


def one_family(job):
    import families

    model, variant, changes, precision, task, ckpt, layers, batch, seq, _ = job
    changes = dict(changes)
    seq = changes.pop("seq", seq)
    lora = changes.pop("lora", None)
    rank = changes.pop("r", 16)
    layer_type = changes.pop("layer_type", None)
    mt, kw, _src = families.MODELS[model]
    cfg = dict(kw, **changes)
    cfg["num_hidden_layers"] = layers
    if layer_type:
        cfg["layer_types"] = [layer_type] * layers
    name = f"calf-{model}-{variant}-L{layers}-b{batch}"
    measure.MODELS[name] = (mt, dict(cfg, attn="default", generic=True))
    if task == "training":
        case = measure.T(name, name, precision, batch, seq, ckpt)
        case["decode_steps"] = 0
        case["dropout_kernel"] = "fused"  # CUDA's bool-mask dropout, as families.py's cases
        if lora is not None:
            case["lora"] = dict(families.LORA, r=rank, lora_alpha=2 * rank, lora_dropout=lora)
    else:
        case = measure.I(name, name, precision, batch, seq, decode=1)
    import torch

    torch.set_num_threads(1)
    r = measure.run_case(case, fake=True)
    ap = r["activation_peaks"]
    x = max(ap.get("forward", 0), ap.get("backward", 0)) if task == "training" else ap["prefill"]
    return dict(
        job=job[:9],
        params=r["arch"]["params"],
        x=x,
        activation_peaks=ap,
        tokens=batch * seq,
        seq=seq,
        arch=r["arch"],
        peak_bytes=r["peak_bytes"],
        phase_peaks=r["phase_peaks"],
        breakdown_at_peak=r["breakdown_at_peak"],
    )


def main_families(args):
    t0 = time.time()
    jobs = family_jobs(args.only)
    print(f"{len(jobs)} runs", flush=True)
    out, done = [], 0
    with ProcessPoolExecutor(max_workers=args.jobs) as ex:
        for r in ex.map(one, jobs, chunksize=4):
            out.append(r)
            done += 1
            if done % 50 == 0:
                print(f"  {done}/{len(jobs)} ({time.time() - t0:.0f} s)", flush=True)
    groups = {}
    for r in out:
        model, variant, _, precision, task, ckpt, layers, b, seq = r["job"]
        groups.setdefault((model, variant, precision, task, ckpt), {})[(layers, r["tokens"])] = r
    rows = []
    for (model, variant, precision, task, ckpt), runs in groups.items():
        c0, c1, a0, a1 = solve({k: v["x"] for k, v in runs.items()})
        any_run = next(iter(runs.values()))
        rows.append(
            dict(
                model=model,
                variant=variant,
                changes=any_run["job"][2],
                precision=precision,
                task=task,
                gradient_checkpointing=ckpt,
                seq=any_run["seq"],
                a1=a1,
                a0=a0,
                c0=c0,
                c1=c1,
                arch_L1=runs[min(runs)]["arch"],
                runs={f"L{l}-n{n}": v["x"] for (l, n), v in sorted(runs.items())},
                weights_L1={f"n{n}": v["breakdown_at_peak"] for (l, n), v in sorted(runs.items()) if l == 1},
            )
        )
        print(
            f"{model:18s} {variant:14s} {precision:5s} {task:9s} {ckpt!s:5s} a1 {a1:12.1f} a0 {a0:12.1f} "
            f"c0 {c0 / 1e6:9.2f}MB c1 {c1 / 1e6:9.2f}MB",
            flush=True,
        )
    import torch
    import transformers

    path = os.path.join(HERE, "calibration-families-runs.json")
    doc = dict(
        method="1- and 2-layer runs of families.py models at full width, two batch sizes; "
        "X(L, n) = c0 + c1 L + n (a0 + a1 L) per model, variant and mode",
        torch=torch.__version__,
        transformers=transformers.__version__,
        seconds=round(time.time() - t0, 1),
        rows=rows,
    )
    if args.only is not None and os.path.exists(path):
        # --only MODEL: replace that model's rows in the existing file, keep the others
        old = json.load(open(path))
        redone = {r["model"] for r in rows}
        doc["rows"] = [r for r in old["rows"] if r["model"] not in redone] + rows
        doc["seconds"] = old.get("seconds", 0)
        doc.setdefault("reruns", old.get("reruns", [])).append(sorted(redone))
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\n{len(jobs)} runs, {time.time() - t0:.0f} s")


def solve(rows):
    """rows: {(L, n): x} for L in {1,2}, two n: return c0, c1, a0, a1."""
    (n1, n2) = sorted({n for _, n in rows})
    # per-token slopes at L=1 and L=2
    s1 = (rows[(1, n2)] - rows[(1, n1)]) / (n2 - n1)
    s2 = (rows[(2, n2)] - rows[(2, n1)]) / (n2 - n1)
    a1, a0 = s2 - s1, 2 * s1 - s2
    k1 = rows[(1, n1)] - n1 * s1
    k2 = rows[(2, n1)] - n1 * s2
    c1, c0 = k2 - k1, 2 * k1 - k2
    return c0, c1, a0, a1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--families", action="store_true", help="calibrate the families of families.py instead")
    args = ap.parse_args()
    if args.families:
        return main_families(args)
    t0 = time.time()
    jobs = []
    for fam, variants in VARIANTS.items():
        if args.only and args.only != fam:
            continue
        batches = BASE[fam][3]
        for variant, changes in variants:
            for precision in ("fp32", "bf16", "mixed"):
                modes = [("training", False), ("training", True)]
                if fam != "bert":
                    modes.append(("inference", False))
                for task, ckpt in modes:
                    for layers in (1, 2):
                        for b in batches:
                            jobs.append((fam, variant, changes, precision, task, ckpt, layers, b))
    with ProcessPoolExecutor(max_workers=args.jobs) as ex:
        results = list(ex.map(one, jobs))
    groups = {}
    for r in results:
        fam, variant, _, precision, task, ckpt, layers, b = r["job"]
        groups.setdefault((fam, variant, precision, task, ckpt), {})[(layers, r["tokens"])] = r["x"]
    out = []
    print(
        f"{'family':8s} {'variant':8s} {'prec':5s} {'task':9s} {'ckpt':5s} {'a1 B/tok/layer':>15s} "
        f"{'a0 B/tok':>10s} {'c0 MB':>9s} {'c1 MB':>9s}"
    )
    for key, rows in groups.items():
        c0, c1, a0, a1 = solve(rows)
        fam, variant, precision, task, ckpt = key
        cfg = dict(BASE[fam][1], **dict(VARIANTS[fam])[variant])
        out.append(
            dict(
                family=fam,
                variant=variant,
                config=cfg,
                precision=precision,
                task=task,
                gradient_checkpointing=ckpt,
                a1=a1,
                a0=a0,
                c0=c0,
                c1=c1,
                runs={f"L{l}-n{n}": x for (l, n), x in sorted(rows.items())},
            )
        )
        print(
            f"{fam:8s} {variant:8s} {precision:5s} {task:9s} {ckpt!s:5s} {a1:15.1f} {a0:10.1f} "
            f"{c0 / 1e6:9.1f} {c1 / 1e6:9.1f}"
        )
    if args.only is None:
        with open(os.path.join(HERE, "calibration.json"), "w") as f:
            json.dump(
                dict(method=__doc__.strip().splitlines()[0], seconds=round(time.time() - t0, 1), rows=out), f, indent=1
            )
    print(f"\n{len(jobs)} runs, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
