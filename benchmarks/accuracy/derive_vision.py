"""knowledge/vision_profiles.yaml from the calibration cases of results-vision.json (no torch needed).

    python3 benchmarks/accuracy/derive_vision.py          # rewrites knowledge/vision_profiles.yaml

Each calibration case (vision.CALIBRATION: one batch, 224 x 224, the detector at 800 x 1333) gives one
profile per model, phase (training, inference) and compute mode (fp32; mixed = fp32 weights under
autocast; half = pure 16-bit). What was live at the peak, beyond the weights and the optimizer state, is
split as vision_measure.py grouped it:

* s1 ... s128: bytes per image and per cell of the feature-map grid at that stride (a tensor of
  batch x C x ceil(H/k) x ceil(W/k) counts at stride k), so that another image size is the same sum
  over its own grids: exact for any size, not only multiples of 32;
* per_token: bytes per image and per token of a ViT ((H/p) x (W/p) + 1 tokens);
* per_image: the rest that scales with the batch (pooled features, logits, a detector's proposals);
* fixed: what does not scale with the batch (a training step's loss, an inference step's autocast
  copy of one weight);
* casts_params, grad_params (training): how many parameters have an autocast 16-bit copy, and how many
  already have their gradient, at the peak (early in the backward pass).

The held-out cases (vision.HELD_OUT) are not read here.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import vision  # noqa: E402

STRIDES = [1, 2, 4, 8, 16, 32, 64, 128]


def mode_class(mode: str) -> str:
    return "fp32" if mode == "fp32" else ("mixed" if mode.startswith("amp-") else "half")


def profile(c: dict) -> dict:
    inp = c["inputs"]
    n = inp["batch"]
    groups = dict(c["peak_activation_groups"])
    bd = c["breakdown_at_peak"]
    grids = c["grids"]
    out = {"id": f"{inp['model']}-{inp['task']}-{mode_class(inp['mode'])}"}
    out.update(model=inp["model"], phase=inp["task"], mode=mode_class(inp["mode"]))
    for k in STRIDES:
        g = groups.pop(f"s{k}", 0)
        a, b = grids.get(f"s{k}", (1, 1))
        out[f"s{k}"] = round(g / (n * a * b), 4) if g else 0
    tok = groups.pop("tokens", 0) + groups.pop("patches", 0)
    out["per_token"] = round(tok / (n * c["model"]["tokens"]), 4) if tok else 0
    image = groups.pop("image", 0)
    if "patch_size" in c["model"]:
        # a ViT's input image (and its 16-bit cast under autocast) lies on no patch grid: per input pixel
        m = mode_class(inp["mode"])
        # (training saves the 16-bit cast for the patch convolution's backward; inference frees it at once)
        px = 3 * (4 if m != "half" else 2) + (3 * 2 if m == "mixed" and inp["task"] == "training" else 0)
        out["s1"] = px
        image -= px * n * inp["height"] * inp["width"]
    out["per_image"] = round(image / n, 1)
    fixed = groups.pop("fixed", 0)
    if inp["model"] in vision.DETECTION:
        # the detector takes a list of images, each (3, H, W) with no batch dimension: per image, not fixed
        own = 3 * inp["height"] * inp["width"] * (2 if mode_class(inp["mode"]) == "half" else 4)
        out["per_image"] = round(out["per_image"] + own, 1)
        fixed -= n * own
    assert not groups, groups
    if inp["task"] == "training":
        out["casts_params"] = bd.get("weight_casts", 0) // 2
        trainable_bytes = 2 if mode_class(inp["mode"]) == "half" else 4
        out["grad_params"] = bd.get("gradients", 0) // trainable_bytes
        out["fixed"] = fixed
    else:
        out["casts_params"] = 0
        out["grad_params"] = 0
        out["fixed"] = fixed + bd.get("weight_casts", 0)
    out["case"] = c["name"]
    return out


HEADER = """# Measured activation memory of vision models, per image, by the feature-map grid it lies on.
# Written by benchmarks/accuracy/derive_vision.py from the calibration cases of
# benchmarks/accuracy/results-vision.json (torch 2.14, torchvision 0.29, live tensor bytes at the peak;
# benchmarks/accuracy/VISION.md). Do not edit by hand: rerun the script.
#
# A model's activations at its peak, for a batch of N images of H x W pixels:
#   N x (sum over strides k of s<k> x ceil(H/k) x ceil(W/k)  +  per_token x tokens  +  per_image)  +  fixed
# (a detector pads H and W up to a multiple of 32 first). Training also keeps casts_params 16-bit weight copies
# (mixed precision) and the gradients of grad_params parameters at that moment; inference keeps nothing else
# but the weights. rules/vision/ reads these.
catalog: vision_profile
description: Measured activation bytes of each vision model at its training and inference peaks, per image and cell.
source:
  doc: benchmarks/accuracy/results-vision.json (calibration cases), benchmarks/accuracy/derive_vision.py
  note: peak of live tensor bytes of two training iterations (foreach optimizer) or one no_grad forward, under
    FakeTensorMode with CUDA's autocast policy; the detector with real tensors.
fields:
  model:
    type: string
    description: The model's id in knowledge/models.yaml.
  phase:
    type: string
    description: training (forward and backward, the peak early in backward) or inference (one forward under no_grad).
    enum: [training, inference]
  mode:
    type: string
    description: 'Compute mode: fp32; mixed (fp32 weights under autocast); half (the model in 16 bits).'
    enum: [fp32, mixed, half]
"""


def detector_16_bit(doc: dict, rows: list[dict]) -> list[dict]:
    """The detector was measured in fp32 only (real tensors; the CPU's 16-bit convolutions are too slow for it):
    its mixed and pure 16-bit modes get the fp32 profile, an upper bound (a 16-bit mode halves the feature maps,
    as every measured CNN shows), with every parameter's 16-bit copy on top in mixed precision."""
    params = {c["inputs"]["model"]: c["model"]["params"] for c in doc["cases"] if "model" in c}
    out = []
    for r in rows:
        if r["model"] not in vision.DETECTION or r["mode"] != "fp32":
            continue
        for mode in ("mixed", "half"):
            if any(x["model"] == r["model"] and x["phase"] == r["phase"] and x["mode"] == mode for x in rows):
                continue
            casts = params[r["model"]] if mode == "mixed" and r["phase"] == "training" else 0
            out.append(
                dict(
                    r,
                    id=f"{r['model']}-{r['phase']}-{mode}",
                    mode=mode,
                    casts_params=casts,
                    case=f"{r['case']} (the fp32 profile, an upper bound: not measured in 16 bits)",
                )
            )
    return out


def generic_vit(doc: dict, rows: list[dict]) -> list[dict]:
    """A ViT given by its shape (a config.json): per (phase, mode), the catalog ViTs' bytes per token fitted as
    h x (per_token_layer_h x layers + per_token_h), least squares over B/16, L/16 and H/14, and the largest of their
    per-image bytes per unit of h; the fit's worst miss on the three is printed."""
    arch = {c["inputs"]["model"]: c["model"] for c in doc["cases"] if "patch_size" in c.get("model", {})}
    out = []
    for phase in ("training", "inference"):
        for mode in ("fp32", "mixed", "half"):
            pts = [r for r in rows if r["model"] in arch and r["phase"] == phase and r["mode"] == mode]
            if len(pts) < 2:
                continue
            xs = [arch[r["model"]]["layers"] for r in pts]
            ys = [r["per_token"] / arch[r["model"]]["hidden_size"] for r in pts]
            n, sx, sy = len(xs), sum(xs), sum(ys)
            sxx, sxy = sum(x * x for x in xs), sum(x * y for x, y in zip(xs, ys, strict=True))
            k = (n * sxy - sx * sy) / (n * sxx - sx * sx)
            c0 = (sy - k * sx) / n
            worst = max(abs((k * x + c0) / y - 1) for x, y in zip(xs, ys, strict=True))
            params = {r["model"]: arch[r["model"]]["params"] for r in pts}
            out.append(
                dict(
                    id=f"vit-{phase}-{mode}",
                    model="vit",
                    phase=phase,
                    mode=mode,
                    **{f"s{s}": pts[0][f"s{s}"] for s in STRIDES},
                    per_token=0,
                    per_image=0,
                    fixed=max(r["fixed"] for r in pts),
                    casts_params=0,
                    grad_params=0,
                    per_token_layer_h=round(k, 4),
                    per_token_h=round(max(c0, 0.0), 4),
                    per_image_h=round(max(r["per_image"] / arch[r["model"]]["hidden_size"] for r in pts), 4),
                    grad_fraction=round(max(r["grad_params"] / params[r["model"]] for r in pts), 6),
                    case=", ".join(r["case"] for r in pts),
                )
            )
            print(f"  vit {phase} {mode}: per token = h x ({k:.2f} x layers + {c0:.2f}); worst miss {100 * worst:.2f}%")
    return out


def main():
    doc = json.load(open(os.path.join(HERE, "results-vision.json")))
    calib = {c["name"] for c in vision.CALIBRATION}
    rows = [profile(c) for c in doc["cases"] if c["name"] in calib and "error" not in c]
    fields = ""
    for k in STRIDES:
        fields += (
            f"  s{k}:\n    type: number\n    minimum: 0\n    maximum: 1000000\n    unit: bytes\n"
            f"    description: Bytes per image and per cell of the grid at stride {k} (ceil(H/{k}) x ceil(W/{k})).\n"
        )
    fields += (
        "  per_token:\n    type: number\n    minimum: 0\n    maximum: 100000000\n    unit: bytes\n"
        "    description: Bytes per image and per token of a vision transformer.\n"
        "  per_image:\n    type: number\n    minimum: 0\n    maximum: 10000000000\n    unit: bytes\n"
        "    description: Bytes per image on no grid (pooled features, logits, a detector's proposals and regions).\n"
        "  fixed:\n    type: number\n    minimum: 0\n    maximum: 1000000000000\n    unit: bytes\n"
        "    description: Bytes at the peak that do not grow with the batch (beyond weights and optimizer state).\n"
        "  casts_params:\n    type: integer\n    minimum: 0\n    maximum: 10000000000000\n    unit: parameters\n"
        "    description: Training in mixed precision, parameters whose 16-bit autocast copy is alive at the peak.\n"
        "  grad_params:\n    type: integer\n    minimum: 0\n    maximum: 10000000000000\n    unit: parameters\n"
        "    description: Training, parameters whose gradient is already written at the peak.\n"
        "  case:\n    type: string\n    description: The calibration case of results-vision.json it was derived from.\n"
    )
    fields += (
        "  per_token_layer_h:\n    type: number\n    minimum: 0\n    maximum: 1000000\n    unit: bytes\n"
        "    description: A ViT given by its shape, bytes per image, token, layer and unit of hidden size.\n"
        "  per_token_h:\n    type: number\n    minimum: 0\n    maximum: 1000000\n    unit: bytes\n"
        "    description: A ViT given by its shape, bytes per image, token and unit of width outside the layers.\n"
        "  per_image_h:\n    type: number\n    minimum: 0\n    maximum: 100000000\n    unit: bytes\n"
        "    description: A ViT given by its shape, bytes per image and unit of hidden size on no grid.\n"
        "  grad_fraction:\n    type: number\n    minimum: 0\n    maximum: 1\n"
        "    description: A ViT given by its shape, the share of its parameters with a gradient at the peak.\n"
    )
    rows += detector_16_bit(doc, rows)
    rows += generic_vit(doc, rows)
    lines = [HEADER + fields + "items:"]
    for r in rows:
        lines.append(f"- id: {r['id']}")
        lines.append(f"  name: {r['model']} {r['phase']}, {r['mode']}")
        for k in ("model", "phase", "mode"):
            lines.append(f"  {k}: {r[k]}")
        for k in (
            [f"s{s}" for s in STRIDES]
            + ["per_token", "per_image", "fixed", "casts_params", "grad_params"]
            + [k for k in ("per_token_layer_h", "per_token_h", "per_image_h", "grad_fraction") if k in r]
        ):
            v = r[k]
            lines.append(f"  {k}: {int(v) if float(v).is_integer() else v}")
        lines.append(f"  case: {json.dumps(r['case'])}")
    path = os.path.join(REPO, "knowledge", "vision_profiles.yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(rows)} profiles -> {path}")


if __name__ == "__main__":
    main()
