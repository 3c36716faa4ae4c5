"""Vision models (torchvision) and the cases vision_measure.py runs on them.

Every model is a torchvision builder with random weights (``weights=None``): ResNet 18/34/50/101/152,
ConvNeXt-Tiny, ViT-B/16, ViT-L/16, ViT-H/14 and Faster R-CNN with a ResNet-50 FPN backbone. A case is
(model, task, mode, optimizer, batch, image height x width):

* task ``training``: two iterations of forward, cross-entropy (the detector's own losses), backward,
  optimizer step (foreach, as on CUDA), zero_grad(set_to_none=True); the reported peak is iteration 2,
  the steady state (the optimizer state alive through forward and backward).
* task ``inference``: ``model.eval()`` and ``torch.no_grad()``, one forward pass of the batch.
* mode ``fp32``; ``amp-fp16`` / ``amp-bf16`` (fp32 weights, ``torch.autocast`` with CUDA's op lists,
  see vision_measure.py); ``fp16`` / ``bf16`` (the model and the batch cast to 16 bits).

``CALIBRATION`` cases are the ones the coefficients in knowledge/vision_profiles.yaml are derived from
(derive_vision.py); ``HELD_OUT`` cases (other batch sizes, image sizes, optimizers, 16-bit formats) were
not used to derive anything and test the transfer.
"""

from __future__ import annotations

# id -> (torchvision builder, keyword arguments, source of the architecture)
TV = "https://github.com/pytorch/vision/blob/v0.29.1/torchvision/models/{}.py"
MODELS = {
    "resnet-18": ("resnet18", {}, TV.format("resnet")),
    "resnet-34": ("resnet34", {}, TV.format("resnet")),
    "resnet-50": ("resnet50", {}, TV.format("resnet")),
    "resnet-101": ("resnet101", {}, TV.format("resnet")),
    "resnet-152": ("resnet152", {}, TV.format("resnet")),
    "convnext-tiny": ("convnext_tiny", {}, TV.format("convnext")),
    "vit-b-16": ("vit_b_16", {}, TV.format("vision_transformer")),
    "vit-l-16": ("vit_l_16", {}, TV.format("vision_transformer")),
    "vit-h-14": ("vit_h_14", {}, TV.format("vision_transformer")),
    "fasterrcnn-resnet50-fpn": (
        "detection.fasterrcnn_resnet50_fpn",
        {"weights_backbone": None},
        TV.format("detection/faster_rcnn"),
    ),
}

DETECTION = {"fasterrcnn-resnet50-fpn"}


def case(model, task, mode, batch, size, optimizer="sgd-momentum", held_out=False):
    h, w = size if isinstance(size, tuple) else (size, size)
    opt = optimizer if task == "training" else None
    name = f"{model}-{'train' if task == 'training' else 'infer'}-{mode}{'-' + opt if opt else ''}-b{batch}-{h}" + (
        f"x{w}" if w != h else ""
    )
    return dict(
        name=name, model=model, task=task, mode=mode, optimizer=opt, batch=batch, height=h, width=w, held_out=held_out
    )


T, I = "training", "inference"
CNN = ["resnet-18", "resnet-34", "resnet-50", "resnet-101", "resnet-152", "convnext-tiny"]
VIT = ["vit-b-16", "vit-l-16", "vit-h-14"]

CALIBRATION = []
for m in CNN + VIT:
    b = 32 if m not in ("vit-l-16", "vit-h-14") else 16
    CALIBRATION += [
        case(m, T, "fp32", b, 224),
        case(m, T, "amp-fp16", b, 224),
        case(m, T, "bf16", b, 224, "adamw"),
        case(m, I, "fp32", 64, 224),
        case(m, I, "amp-fp16", 64, 224),
        case(m, I, "fp16", 64, 224),
    ]
# the detector runs with real tensors (its proposals are data-dependent, which fake tensors cannot
# follow), and only in fp32: the CPU's 16-bit convolution kernels are too slow for an 800 x 1333
# training step on the 2 cores it was measured on (derive_vision.py sizes its 16-bit modes with the
# fp32 profile, an upper bound);
# the detector at its stated size: torchvision resizes every image to a shorter side of 800 (longer at
# most 1333) and pads the batch to a multiple of 32, so 800 x 1333 is what it runs at
DET = (800, 1333)
CALIBRATION += [case("fasterrcnn-resnet50-fpn", T, "fp32", 2, DET), case("fasterrcnn-resnet50-fpn", I, "fp32", 2, DET)]

HELD_OUT = [
    # other batch sizes, optimizers and 16-bit formats at 224
    case("resnet-50", T, "amp-bf16", 256, 224, "sgd-momentum", True),
    case("resnet-50", T, "amp-fp16", 128, 224, "adamw", True),
    case("resnet-50", T, "fp32", 8, 224, "adamw", True),
    case("resnet-50", I, "fp32", 1, 224, held_out=True),
    case("resnet-50", I, "bf16", 256, 224, held_out=True),
    case("resnet-18", T, "bf16", 128, 224, "sgd-momentum", True),
    case("resnet-101", T, "amp-bf16", 64, 224, "adamw", True),
    case("resnet-152", I, "amp-bf16", 128, 224, held_out=True),
    case("resnet-34", I, "fp32", 16, 224, held_out=True),
    case("convnext-tiny", T, "amp-bf16", 128, 224, "adamw", True),
    case("convnext-tiny", I, "bf16", 256, 224, held_out=True),
    case("vit-b-16", T, "amp-bf16", 128, 224, "adamw", True),
    case("vit-b-16", T, "fp32", 64, 224, "sgd-momentum", True),
    case("vit-b-16", I, "amp-bf16", 256, 224, held_out=True),
    case("vit-l-16", T, "amp-bf16", 32, 224, "adamw", True),
    case("vit-l-16", I, "bf16", 1, 224, held_out=True),
    case("vit-h-14", T, "amp-bf16", 8, 224, "adamw", True),
    case("vit-h-14", I, "fp32", 32, 224, held_out=True),
    # other image sizes (the stride arithmetic: sides that are not multiples of 32, ViT at 384)
    case("resnet-50", T, "amp-fp16", 64, 160, "sgd-momentum", True),
    case("resnet-50", T, "amp-fp16", 32, 240, "sgd-momentum", True),
    case("resnet-50", I, "amp-fp16", 64, 300, held_out=True),
    case("resnet-152", T, "fp32", 16, 288, "sgd-momentum", True),
    case("convnext-tiny", T, "amp-fp16", 16, 384, "adamw", True),
    case("convnext-tiny", I, "fp32", 32, 260, held_out=True),
    case("vit-b-16", T, "amp-fp16", 32, 384, "adamw", True),
    case("vit-b-16", I, "fp32", 32, 384, held_out=True),
    case("vit-l-16", T, "amp-fp16", 8, 384, "adamw", True),
    # the detector at another batch size
    case("fasterrcnn-resnet50-fpn", I, "fp32", 1, DET, held_out=True),
]

CASES = CALIBRATION + HELD_OUT
