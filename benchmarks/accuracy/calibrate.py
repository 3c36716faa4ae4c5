"""Derive the activation coefficients of gpusizer's memory model by differencing measured runs.

    /tmp/accvenv/bin/python benchmarks/accuracy/calibrate.py            # ~3-5 min on 2 cores
    /tmp/accvenv/bin/python benchmarks/accuracy/calibrate.py --only llama

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
    "llama": ("llama", dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=32,
                            intermediate_size=11008, vocab_size=32000, max_position_embeddings=8192),
              2048, (1, 2)),
    "gpt2": ("gpt2", dict(n_embd=1600, n_head=25, vocab_size=50257, n_positions=1024), 1024, (2, 4)),
    "bert": ("bert", dict(hidden_size=1024, num_attention_heads=16, intermediate_size=4096,
                          vocab_size=30522, max_position_embeddings=512), 512, (8, 16)),
    "mixtral": ("mixtral", dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                                intermediate_size=14336, vocab_size=32000, max_position_embeddings=8192,
                                num_local_experts=8, num_experts_per_tok=2, sliding_window=None),
                2048, (1, 2)),
}
# width variants: (label, changes); "base" first
VARIANTS = {
    "llama": [("base", {}), ("I14336", dict(intermediate_size=14336)), ("V128256", dict(vocab_size=128256)),
              ("kv8", dict(num_key_value_heads=8)), ("eager", dict(attn="eager"))],
    "gpt2": [("base", {}), ("I4800", dict(n_inner=4800)), ("eager", dict(attn="eager"))],
    "bert": [("base", {}), ("I3072", dict(intermediate_size=3072)), ("eager", dict(attn="eager"))],
    "mixtral": [("base", {})],
}
LAYER_KEY = {"llama": "num_hidden_layers", "gpt2": "n_layer", "bert": "num_hidden_layers",
             "mixtral": "num_hidden_layers"}


def one(job):
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
    args = ap.parse_args()
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
    print(f"{'family':8s} {'variant':8s} {'prec':5s} {'task':9s} {'ckpt':5s} {'a1 B/tok/layer':>15s} "
          f"{'a0 B/tok':>10s} {'c0 MB':>9s} {'c1 MB':>9s}")
    for key, rows in groups.items():
        c0, c1, a0, a1 = solve(rows)
        fam, variant, precision, task, ckpt = key
        cfg = dict(BASE[fam][1], **dict(VARIANTS[fam])[variant])
        out.append(dict(family=fam, variant=variant, config=cfg, precision=precision, task=task,
                        gradient_checkpointing=ckpt, a1=a1, a0=a0, c0=c0, c1=c1,
                        runs={f"L{l}-n{n}": x for (l, n), x in sorted(rows.items())}))
        print(f"{fam:8s} {variant:8s} {precision:5s} {task:9s} {str(ckpt):5s} {a1:15.1f} {a0:10.1f} "
              f"{c0 / 1e6:9.1f} {c1 / 1e6:9.1f}")
    if args.only is None:
        with open(os.path.join(HERE, "calibration.json"), "w") as f:
            json.dump(dict(method=__doc__.strip().splitlines()[0], seconds=round(time.time() - t0, 1),
                           rows=out), f, indent=1)
    print(f"\n{len(jobs)} runs, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
