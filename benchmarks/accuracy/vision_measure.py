"""Measure the peak of live tensor bytes of torchvision models, without a GPU (see VISION.md).

    <torch env>/bin/python benchmarks/accuracy/vision_measure.py              # validation + every case
    <torch env>/bin/python benchmarks/accuracy/vision_measure.py --validate   # real vs fake on tiny shapes
    <torch env>/bin/python benchmarks/accuracy/vision_measure.py --only resnet-50   # cases whose name has it

The classification models run under FakeTensorMode (shapes and dtypes, no memory); the detector runs
with real tensors, because its proposals and their sampling are data-dependent. The tracker is
tracker.LiveBytesTracker; what is live at the peak is also grouped by the feature-map grid it lies on
(stride 2, 4, ... 64 of the input, the ViT's tokens), per image, which derive_vision.py turns into
the coefficients of knowledge/vision_profiles.yaml. Writes results-vision.json and
measured-vision.txt beside this file.

What makes the CPU run allocate what a CUDA run allocates:
* autocast: CPU autocast's op lists differ from CUDA's where it matters here in one op: CUDA runs
  layer_norm in fp32 (its fp32 list), the CPU in the input's dtype. ConvNeXt's LayerNorm follows a
  16-bit convolution, so under CUDA autocast its input is cast to fp32 and saved in fp32. The patch
  below applies CUDA's policy. (Checked op by op: the forward of ResNet-18, EfficientNet-B0, ViT-B/16
  and ConvNeXt-Tiny under fake CUDA tensors and CUDA autocast gives the same dtypes and shapes as
  the patched CPU run, but for this op.)
* attention: torchvision's ViT calls nn.MultiheadAttention with need_weights=False and no dropout,
  which goes to scaled_dot_product_attention; the CPU takes its flash kernel (saves the output and
  the log-sum-exp), as CUDA's flash / memory-efficient kernels do. No score matrix is kept.
* dropout: none of these models has dropout active in training but EfficientNet (not measured);
  ConvNeXt's stochastic depth draws a (batch, 1, 1, 1) mask, identical on both.
* the optimizer: foreach implementations (CUDA's default) are asked for explicitly.
* fp16 gradient scaling (GradScaler) unscales the gradients in place: no memory of its own, so the
  amp-fp16 cases run without it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
import vision  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: E402
from tracker import LiveBytesTracker  # noqa: E402

GiB = 1024**3
TRAIN_ITERS = 2

# ------------------------------------------------------------------------------------------------
# Patches
# ------------------------------------------------------------------------------------------------

_orig_layer_norm = F.layer_norm
_orig_trunc_normal = torch.nn.init.trunc_normal_


def _layer_norm_cuda_policy(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """CUDA autocast runs layer_norm in fp32 (casting a 16-bit input first); the CPU does not."""
    if torch.is_autocast_enabled("cpu") and input.dtype in (torch.float16, torch.bfloat16):
        with torch.autocast("cpu", enabled=False):
            w = weight.float() if weight is not None else None
            b = bias.float() if bias is not None else None
            return _orig_layer_norm(input.float(), normalized_shape, w, b, eps)
    return _orig_layer_norm(input, normalized_shape, weight, bias, eps)


def _trunc_normal(tensor, *a, **k):
    """ViT's init draws a truncated normal with a data-dependent check; fake tensors get a plain one."""
    if isinstance(tensor, FakeTensor):
        with torch.no_grad():
            return tensor.normal_()
    return _orig_trunc_normal(tensor, *a, **k)


def apply_patches():
    F.layer_norm = _layer_norm_cuda_policy
    torch.nn.functional.layer_norm = _layer_norm_cuda_policy
    torch.nn.init.trunc_normal_ = _trunc_normal


# ------------------------------------------------------------------------------------------------
# The tracker, with what is live at the peak
# ------------------------------------------------------------------------------------------------


class GridTracker(LiveBytesTracker):
    """LiveBytesTracker that also keeps each storage's first shape and, at the peak, every live storage."""

    def __init__(self):
        super().__init__()
        self.shapes: dict[int, tuple] = {}
        self.peak_items: list = []

    def track(self, t, cat=None):
        # the shape is noted before the storage is counted, so that a peak snapshot taken while counting
        # it sees it; a storage can first be seen through a 0-d or empty view (an out= buffer resized
        # later): keep the shape of the largest tensor seen on it
        try:
            key = t.untyped_storage()._cdata
        except Exception:
            key = None
        if key is not None and (key not in self.shapes or math.prod(self.shapes[key]) < t.numel()):
            self.shapes[key] = tuple(t.shape)
        return super().track(t, cat)

    def _freed(self, key):
        super()._freed(key)
        self.shapes.pop(key, None)

    def _note_peak(self):
        before = self.peak
        super()._note_peak()
        if self.peak > before or not self.peak_items:
            self.peak_items = [(nb, cat, self.shapes.get(k, ())) for k, (nb, cat) in self.live.items()]

    def reset_peak(self):
        super().reset_peak()
        self.peak_items = [(nb, cat, getattr(self, "shapes", {}).get(k, ())) for k, (nb, cat) in self.live.items()]


def grids(case: dict, arch: dict) -> dict[str, tuple[int, int]]:
    """The feature-map grids of this input: stride 2^k for a CNN (side ceil(side / 2^k)), the patch
    grid for a ViT. The detector's batch is padded to a multiple of 32 first."""
    h, w = case["height"], case["width"]
    if case["model"] in vision.DETECTION:
        h, w = 32 * math.ceil(h / 32), 32 * math.ceil(w / 32)
    if arch.get("patch_size"):
        p = arch["patch_size"]
        return {"patches": (h // p, w // p)}
    out = {}
    for k in range(1, 8):
        out[f"s{2**k}"] = (math.ceil(h / 2**k), math.ceil(w / 2**k))
    out["s1"] = (h, w)
    return out


def classify(shape: tuple, batch: int, gr: dict[str, tuple[int, int]], tokens: int | None) -> str:
    """Which grid a tensor of this shape lies on, or 'image' (per image, no grid) or 'fixed'."""
    for name, (a, b) in sorted(gr.items(), key=lambda kv: -kv[1][0] * kv[1][1]):
        for i in range(len(shape) - 1):
            if shape[i] == a and shape[i + 1] == b and (a * b > 1):
                return name
    # the same grids flattened with the batch: a linear layer over channels-last maps (ConvNeXt's
    # (N*H*W, C) rows), the detector's (N*H*W*anchors) rows
    for name, (a, b) in sorted(gr.items(), key=lambda kv: -kv[1][0] * kv[1][1]):
        if a * b > 1 and any(d % (batch * a * b) == 0 and d // (batch * a * b) <= 16 for d in shape):
            return name
    # a ViT's token tensors, also flattened with the batch (T x N rows in nn.MultiheadAttention)
    if tokens and any(d in (tokens, tokens - 1, tokens * batch, (tokens - 1) * batch) for d in shape):
        return "tokens"
    if batch in shape or (shape and shape[0] % batch == 0 and shape[0] >= batch > 1):
        return "image"
    return "fixed"


# ------------------------------------------------------------------------------------------------
# Building and running a case
# ------------------------------------------------------------------------------------------------


def build(case: dict):
    fn, kw, _ = vision.MODELS[case["model"]]
    kw = dict(kw, weights=None)
    if case["model"].startswith("vit") and case["height"] != 224:
        kw["image_size"] = case["height"]
    builder = torchvision.models
    for part in fn.split("."):
        builder = getattr(builder, part)
    with _default_dtype(case["mode"]):
        return builder(**kw)


@contextlib.contextmanager
def _default_dtype(mode):
    """Pure 16-bit models are built in that dtype (Module.to() cannot swap fake parameters)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype({"fp16": torch.float16, "bf16": torch.bfloat16}.get(mode, torch.float32))
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def arch_numbers(case, model) -> dict:
    d = dict(params=sum(p.numel() for p in model.parameters()))
    enc = getattr(model, "encoder", None)
    if hasattr(model, "patch_size") and enc is not None:
        d.update(
            patch_size=model.patch_size,
            layers=len(enc.layers),
            hidden_size=model.hidden_dim,
            mlp_dim=model.mlp_dim,
            heads=enc.layers[0].num_heads,
            tokens=(case["height"] // model.patch_size) * (case["width"] // model.patch_size) + 1,
        )
    return d


def amp_context(mode):
    if mode.startswith("amp-"):
        dt = torch.float16 if mode == "amp-fp16" else torch.bfloat16
        return lambda: torch.autocast("cpu", dtype=dt)
    return contextlib.nullcontext


def run_case(case: dict, fake: bool | None = None) -> dict:
    apply_patches()
    if fake is None:
        fake = case["model"] not in vision.DETECTION
    torch.manual_seed(0)
    t0 = time.time()
    mode = FakeTensorMode(allow_non_fake_inputs=False) if fake else contextlib.nullcontext()
    with mode:
        model = case.get("_model_fn", build)(case)
        arch = arch_numbers(case, model)
        tr = GridTracker()
        for p in model.parameters():
            tr.track(p, "parameters")
        for b in model.buffers():
            tr.track(b, "parameters")
        tr.autocast_weight_casts = case["mode"].startswith("amp-")
        amp = amp_context(case["mode"])
        dt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(case["mode"], torch.float32)
        if case["task"] == "training":
            res = _train(case, model, tr, amp, dt)
        else:
            res = _infer(case, model, tr, amp, dt)
    gr = grids(case, arch)
    groups: dict[str, int] = {}
    for nb, cat, shape in tr.peak_items:
        if cat != "activations":
            continue
        g = classify(shape, case["batch"], gr, arch.get("tokens"))
        groups[g] = groups.get(g, 0) + nb
    res.update(case=case, arch=arch, grids={k: list(v) for k, v in gr.items()}, peak_activation_groups=groups)
    res["seconds"] = round(time.time() - t0, 1)
    return res


def _inputs(case, dt, real_boxes=True):
    n, h, w = case["batch"], case["height"], case["width"]
    if case["model"] in vision.DETECTION:
        images = [torch.rand(3, h, w) for _ in range(n)]
        targets = []
        for _ in range(n):
            xy = torch.rand(5, 2) * torch.tensor([w * 0.6, h * 0.6])
            wh = torch.rand(5, 2) * torch.tensor([w * 0.3, h * 0.3]) + 16
            targets.append({"boxes": torch.cat([xy, xy + wh], 1), "labels": torch.randint(1, 91, (5,))})
        return images, targets
    return torch.randn(n, 3, h, w, dtype=dt), torch.randint(0, 1000, (n,))


def _make_optimizer(case, params):
    if case["optimizer"] == "adamw":
        return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05, foreach=True)
    # the torchvision reference recipe: SGD, momentum 0.9, weight decay 1e-4
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4, foreach=True)


def _train(case, model, tr, amp, dt):
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = _make_optimizer(case, params)
    for p in params:
        p.register_post_accumulate_grad_hook(lambda p: tr.relabel(p.grad, "gradients"))
    iters = []
    with tr:
        x, y = _inputs(case, dt)
        tr.reset_peak()
        for it in range(TRAIN_ITERS):
            tr.set_phase("forward")
            with amp():
                if case["model"] in vision.DETECTION:
                    losses = model(x, y)
                    loss = sum(losses.values())
                    del losses
                else:
                    out = model(x)
                    loss = F.cross_entropy(out, y)
                    del out
            tr.set_phase("backward")
            loss.backward()
            del loss
            tr.set_phase("optimizer")
            tr.default_cat = "optimizer_temp"
            opt.step()
            tr.default_cat = "activations"
            for st in opt.state.values():
                for v in st.values():
                    if isinstance(v, torch.Tensor):
                        tr.relabel(v, "optimizer_state")
            tr.set_phase("zero_grad")
            opt.zero_grad(set_to_none=True)
            iters.append(
                dict(
                    peak_bytes=tr.peak,
                    peak_phase=tr.peak_phase,
                    phase_peaks=dict(tr.phase_peaks),
                    breakdown_at_peak=dict(tr.peak_breakdown),
                )
            )
            if it < TRAIN_ITERS - 1:
                tr.reset_peak()
    steady = iters[-1]
    return dict(
        peak_bytes=max(i["peak_bytes"] for i in iters),
        peak_phase=steady["peak_phase"],
        phase_peaks=steady["phase_peaks"],
        breakdown_at_peak=steady["breakdown_at_peak"],
        iteration_peaks=[dict(peak_bytes=i["peak_bytes"], peak_phase=i["peak_phase"]) for i in iters],
    )


def _infer(case, model, tr, amp, dt):
    model.eval()
    with tr, torch.no_grad():
        x, _ = _inputs(case, dt)
        tr.reset_peak()
        tr.set_phase("forward")
        with amp():
            out = model(x)
        del out
    return dict(
        peak_bytes=tr.peak,
        peak_phase=tr.peak_phase,
        phase_peaks=dict(tr.phase_peaks),
        breakdown_at_peak=dict(tr.peak_breakdown),
    )


# ------------------------------------------------------------------------------------------------
# Validation: the same tiny case with real tensors and under FakeTensorMode
# ------------------------------------------------------------------------------------------------


def _tiny_vit(case):
    from torchvision.models.vision_transformer import VisionTransformer

    with _default_dtype(case["mode"]):
        return VisionTransformer(
            image_size=case["height"], patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=256
        )


def validate() -> list[dict]:
    V = vision.case
    vcases = [
        V("resnet-18", "training", "fp32", 2, 64),
        V("resnet-18", "training", "amp-bf16", 2, 72, "adamw"),
        V("resnet-50", "training", "bf16", 2, 64),
        V("resnet-50", "inference", "fp32", 2, 96),
        V("convnext-tiny", "training", "amp-bf16", 2, 64, "adamw"),
        V("convnext-tiny", "inference", "amp-bf16", 2, 64),
        dict(
            V("vit-b-16", "training", "amp-bf16", 2, 32, "adamw"), name="tiny-vit-train-amp-bf16", _model_fn=_tiny_vit
        ),
        dict(V("vit-b-16", "training", "fp32", 2, 32), name="tiny-vit-train-fp32", _model_fn=_tiny_vit),
        dict(V("vit-b-16", "inference", "bf16", 2, 32), name="tiny-vit-infer-bf16", _model_fn=_tiny_vit),
    ]
    rows = []
    for c in vcases:
        real = run_case(c, fake=False)
        fake = run_case(c, fake=True)
        row = dict(
            name=c["name"],
            real_tracker=real["peak_bytes"],
            fake_tracker=fake["peak_bytes"],
            real_phase=real["peak_phase"],
            fake_phase=fake["peak_phase"],
            fake_vs_real_pct=100.0 * (fake["peak_bytes"] - real["peak_bytes"]) / real["peak_bytes"],
            phase_peaks_equal=real["phase_peaks"] == fake["phase_peaks"],
        )
        rows.append(row)
        print(
            f"  {c['name']:44s} real {real['peak_bytes']:>11d}  fake {fake['peak_bytes']:>11d}  "
            f"{row['fake_vs_real_pct']:+.3f}%  every phase's peak equal: {row['phase_peaks_equal']}  "
            f"phase {real['peak_phase']}/{fake['peak_phase']}",
            flush=True,
        )
    return rows


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------


def summarize(r: dict) -> dict:
    if "error" in r:
        return dict(name=r["case"]["name"], inputs=r["case"], error=r["error"])
    c = {k: v for k, v in r["case"].items() if not k.startswith("_")}
    return dict(
        name=c["name"],
        inputs=c,
        model=r["arch"],
        peak_bytes=r["peak_bytes"],
        peak_gib=round(r["peak_bytes"] / GiB, 3),
        peak_phase=r["peak_phase"],
        phase_peaks=r["phase_peaks"],
        breakdown_at_peak=r["breakdown_at_peak"],
        peak_activation_groups=r["peak_activation_groups"],
        grids=r["grids"],
        iteration_peaks=r.get("iteration_peaks"),
        seconds=r["seconds"],
    )


def table(rows) -> str:
    hdr = (
        f"{'case':58s} {'params':>7s} {'peak GiB':>9s} {'phase':>9s} | {'weights':>8s} {'casts':>7s} "
        f"{'grads':>7s} {'optst':>7s} {'opttmp':>7s} {'act':>8s} {'sec':>6s}"
    )
    lines = [hdr, "-" * len(hdr)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['name']:58s} ERROR {r['error'][:90]}")
            continue
        bd = r["breakdown_at_peak"]
        g = lambda k: bd.get(k, 0) / GiB
        lines.append(
            f"{r['name']:58s} {r['model']['params'] / 1e6:6.1f}M {r['peak_bytes'] / GiB:9.3f} {r['peak_phase']:>9s} | "
            f"{g('parameters'):8.3f} {g('weight_casts'):7.3f} {g('gradients'):7.3f} {g('optimizer_state'):7.3f} "
            f"{g('optimizer_temp'):7.3f} {g('activations'):8.3f} {r['seconds']:6.1f}"
        )
    lines.append("")
    lines.append(
        "GiB = 2^30 bytes. phase = phase of the peak (training: steady-state iteration 2); weights..act = live "
        "bytes at the peak by category."
    )
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--skip-validate", action="store_true")
    ap.add_argument("--only", default=None, help="cases whose name contains one of these (comma-separated)")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    doc = dict(torch=torch.__version__, torchvision=torchvision.__version__, python=platform.python_version())
    path = os.path.join(args.out, "results-vision.json")
    old = json.load(open(path)) if os.path.exists(path) else {}
    doc["validation"] = old.get("validation", [])
    results = {c["name"]: c for c in old.get("cases", [])}
    order = [c["name"] for c in vision.CASES]

    def save():
        doc["cases"] = [results[n] for n in order if n in results]
        doc["method"] = (
            "classification models under FakeTensorMode, the detector with real tensors; peak of live tensor "
            "bytes (each storage once, freed via weakref.finalize); training = 2 iterations of forward / "
            "backward / foreach optimizer step / zero_grad, reported peak = iteration 2; inference = one "
            "forward under torch.no_grad(); CUDA's autocast policy for layer_norm. Bytes, GiB = 2^30."
        )
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)

    if not args.validate:
        # the fake cases first (fast), the detector's real runs after them
        only = args.only.split(",") if args.only else None
        cases = [c for c in vision.CASES if not only or any(o in c["name"] for o in only)]
        cases.sort(key=lambda c: c["model"] in vision.DETECTION)
        for c in cases:
            try:
                r = summarize(run_case(c))
                msg = f"peak {r['peak_bytes'] / GiB:.3f} GiB at {r['peak_phase']} ({r['seconds']} s)"
            except Exception as e:  # record and go on
                r = dict(name=c["name"], inputs=c, error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
                msg = r["error"][:200]
            results[c["name"]] = r
            print(f"  {c['name']:58s} {msg}", flush=True)
            save()
    if not args.skip_validate:
        print("Validation, real vs fake (bytes):", flush=True)
        doc["validation"] = validate()
        save()
    txt = table(doc["cases"])
    with open(os.path.join(args.out, "measured-vision.txt"), "w") as f:
        f.write(txt + f"\n\ntorch {doc['torch']}, torchvision {doc['torchvision']}, {os.cpu_count()} CPUs\n")
    print(txt)


if __name__ == "__main__":
    main()
