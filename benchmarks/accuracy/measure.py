"""Measure the peak of live tensor bytes of real model shapes, without a GPU.

Models are built from transformers config objects with random weights (never a hub download)
under torch's FakeTensorMode, so 7B-70B shapes run with no memory; a TorchDispatchMode
(tracker.LiveBytesTracker) counts every distinct storage once and subtracts it when freed.

    /tmp/accvenv/bin/python benchmarks/accuracy/measure.py             # validate + all cases
    /tmp/accvenv/bin/python benchmarks/accuracy/measure.py --validate  # tracker validation only
    /tmp/accvenv/bin/python benchmarks/accuracy/measure.py --only llama2-7b   # cases whose name contains it
    ... measure.py --families            # families.py's cases -> results-families.json (FAMILIES.md)
    ... measure.py --validate-families   # tiny real-vs-fake runs of the families' new code paths

Writes results.json and measured.txt beside this file. See README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fakepatches  # noqa: E402
import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from tracker import LiveBytesTracker  # noqa: E402

GiB = 1024**3
N_DECODE = 4  # decode steps after the prefill in generation cases
TRAIN_ITERS = 2  # the second iteration is the steady state (optimizer state alive in fwd/bwd)

# ------------------------------------------------------------------------------------------------
# Models: config objects with real architecture numbers
# ------------------------------------------------------------------------------------------------

MODELS = {
    "gpt2-124m": ("gpt2", dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024)),
    "gpt2-1.5b": ("gpt2", dict(n_layer=48, n_embd=1600, n_head=25, vocab_size=50257, n_positions=1024)),
    "bert-base": (
        "bert",
        dict(
            num_hidden_layers=12,
            hidden_size=768,
            num_attention_heads=12,
            intermediate_size=3072,
            vocab_size=30522,
            max_position_embeddings=512,
        ),
    ),
    "bert-large": (
        "bert",
        dict(
            num_hidden_layers=24,
            hidden_size=1024,
            num_attention_heads=16,
            intermediate_size=4096,
            vocab_size=30522,
            max_position_embeddings=512,
        ),
    ),
    "llama2-7b": (
        "llama",
        dict(
            num_hidden_layers=32,
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=32,
            intermediate_size=11008,
            vocab_size=32000,
            max_position_embeddings=4096,
        ),
    ),
    "llama2-13b": (
        "llama",
        dict(
            num_hidden_layers=40,
            hidden_size=5120,
            num_attention_heads=40,
            num_key_value_heads=40,
            intermediate_size=13824,
            vocab_size=32000,
            max_position_embeddings=4096,
        ),
    ),
    "llama2-70b": (
        "llama",
        dict(
            num_hidden_layers=80,
            hidden_size=8192,
            num_attention_heads=64,
            num_key_value_heads=8,
            intermediate_size=28672,
            vocab_size=32000,
            max_position_embeddings=4096,
        ),
    ),
    "llama3-8b": (
        "llama",
        dict(
            num_hidden_layers=32,
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=8,
            intermediate_size=14336,
            vocab_size=128256,
            max_position_embeddings=8192,
            rope_theta=500000.0,
        ),
    ),
    "mistral-7b": (
        "mistral",
        dict(
            num_hidden_layers=32,
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=8,
            intermediate_size=14336,
            vocab_size=32000,
            max_position_embeddings=32768,
            sliding_window=4096,
        ),
    ),
    "mixtral-8x7b": (
        "mixtral",
        dict(
            num_hidden_layers=32,
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=8,
            intermediate_size=14336,
            vocab_size=32000,
            max_position_embeddings=32768,
            num_local_experts=8,
            num_experts_per_tok=2,
            sliding_window=None,
        ),
    ),
    # held out: no calibration run (calibrate.py) uses these shapes
    "qwen2.5-7b": (
        "qwen2",
        dict(
            num_hidden_layers=28,
            hidden_size=3584,
            num_attention_heads=28,
            num_key_value_heads=4,
            intermediate_size=18944,
            vocab_size=152064,
            max_position_embeddings=32768,
            tie_word_embeddings=False,
        ),
    ),
    "llama3-70b": (
        "llama",
        dict(
            num_hidden_layers=80,
            hidden_size=8192,
            num_attention_heads=64,
            num_key_value_heads=8,
            intermediate_size=28672,
            vocab_size=128256,
            max_position_embeddings=8192,
            rope_theta=500000.0,
        ),
    ),
    "gpt2-medium": ("gpt2", dict(n_layer=24, n_embd=1024, n_head=16, vocab_size=50257, n_positions=1024)),
    # eager (unfused) attention: the softmax of the score matrix is materialised and saved
    "llama2-7b-eager": (
        "llama",
        dict(
            num_hidden_layers=32,
            hidden_size=4096,
            num_attention_heads=32,
            num_key_value_heads=32,
            intermediate_size=11008,
            vocab_size=32000,
            max_position_embeddings=4096,
            attn="eager",
        ),
    ),
    "gpt2-124m-eager": (
        "gpt2",
        dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024, attn="eager"),
    ),
    # tiny configs for the tracker validation (real tensors)
    "tiny-llama": (
        "llama",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=172,
            vocab_size=1000,
            max_position_embeddings=512,
        ),
    ),
    "tiny-gpt2": ("gpt2", dict(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=512)),
    "tiny-bert": (
        "bert",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            intermediate_size=256,
            vocab_size=1000,
            max_position_embeddings=512,
        ),
    ),
    "tiny-mistral": (
        "mistral",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=172,
            vocab_size=1000,
            max_position_embeddings=1024,
            sliding_window=64,
        ),
    ),
}


# The families of families.py (measure.py --families): built from their model_type with
# AutoConfig.for_model, attention left to the model class's own default.
import families  # noqa: E402

for _name, (_mt, _kw, _src) in families.MODELS.items():
    MODELS[_name] = (_mt, dict(_kw, attn="default", generic=True))


def make_config(model_name: str, fake: bool = True):
    import transformers as tf

    family, kw = MODELS[model_name]
    kw = dict(kw)
    attn = kw.pop("attn", "sdpa")  # calibrate.py's eager variants
    if kw.pop("generic", False):
        cfg = tf.AutoConfig.for_model(family, **kw)
        if attn != "default":
            cfg._attn_implementation = attn
        return family, cfg
    if family == "gpt2":
        # Attention dropout set to 0: with it, CPU SDPA falls back to the "math" path and stores the
        # attention matrix, while CUDA's fused kernels apply dropout with no stored matrix. The
        # residual / embedding dropouts (and their masks) are kept.
        cfg = tf.GPT2Config(attn_pdrop=0.0, **kw)
    elif family == "bert":
        cfg = tf.BertConfig(attention_probs_dropout_prob=0.0, **kw)
    elif family == "llama":
        cfg = tf.LlamaConfig(**kw)
    elif family == "mistral":
        cfg = tf.MistralConfig(**kw)
    elif family == "qwen2":
        cfg = tf.Qwen2Config(**kw)
    elif family == "mixtral":
        cfg = tf.MixtralConfig(experts_implementation="balanced_fake" if fake else "eager", **kw)
    else:
        raise ValueError(family)
    cfg._attn_implementation = attn
    return family, cfg


def model_class(family: str, task: str):
    import transformers as tf

    if family not in ("gpt2", "bert", "llama", "mistral", "mixtral", "qwen2"):
        return tf.AutoModelForCausalLM.from_config
    if family == "bert":
        return tf.BertForMaskedLM
    return {
        "gpt2": tf.GPT2LMHeadModel,
        "llama": tf.LlamaForCausalLM,
        "mistral": tf.MistralForCausalLM,
        "mixtral": tf.MixtralForCausalLM,
        "qwen2": tf.Qwen2ForCausalLM,
    }[family]


def arch_numbers(model_name: str, cfg, model) -> dict:
    family, kw = MODELS[model_name]
    if kw.get("generic"):
        return generic_arch_numbers(family, cfg, model)
    g = lambda *names: next(getattr(cfg, n) for n in names if getattr(cfg, n, None) is not None)
    layers = g("num_hidden_layers", "n_layer")
    hidden = g("hidden_size", "n_embd")
    heads = g("num_attention_heads", "n_head")
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    inter = getattr(cfg, "intermediate_size", None) or getattr(cfg, "n_inner", None) or 4 * hidden
    d = dict(
        family=family,
        params=sum(p.numel() for p in model.parameters()),
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv,
        intermediate_size=inter,
        mlp="swiglu" if family in ("llama", "mistral", "mixtral", "qwen2") else "gelu",
        vocab_size=cfg.vocab_size,
        kind="encoder" if family == "bert" else "decoder",
        tied_embeddings=bool(getattr(cfg, "tie_word_embeddings", False)),
    )
    if family == "mistral":
        d["sliding_window"] = cfg.sliding_window
    if family == "mixtral":
        d["experts"] = cfg.num_local_experts
        d["experts_per_token"] = cfg.num_experts_per_tok
    return d


_ARCH_KEYS = (
    "head_dim",
    "intermediate_size",
    "ffn_dim",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "n_shared_experts",
    "num_experts_per_tok",
    "first_k_dense_replace",
    "decoder_sparse_step",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window",
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "multi_query",
    "parallel_attn",
    "use_parallel_residual",
    "rotary_pct",
    "hidden_act",
    "hidden_activation",
    "activation_function",
    "dropout",
    "word_embed_proj_dim",
)


def generic_arch_numbers(family, cfg, model) -> dict:
    """Architecture numbers of a families.py model, as its config and the built model have them."""
    base = getattr(model, "base_model", model)
    base = getattr(base, "model", base) if hasattr(model, "peft_config") else model
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    if family == "falcon":
        kv = 1 if cfg.multi_query and not cfg.new_decoder_architecture else (cfg.num_kv_heads or heads)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    params = sum(p.numel() for p in model.parameters())
    d = dict(
        family=family,
        params=params,
        trainable_params=sum(p.numel() for p in model.parameters() if p.requires_grad),
        layers=cfg.num_hidden_layers,
        hidden_size=cfg.hidden_size,
        attention_heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=(
            getattr(cfg, "intermediate_size", None)
            or getattr(cfg, "ffn_dim", None)
            or getattr(cfg, "ffn_hidden_size", None)
        ),
        vocab_size=cfg.vocab_size,
        kind="decoder",
        tied_embeddings=bool(getattr(cfg, "tie_word_embeddings", False)),
        attn_implementation=cfg._attn_implementation,
        experts_implementation=getattr(cfg, "_experts_implementation", None),
    )
    for k in _ARCH_KEYS:
        v = getattr(cfg, k, None)
        if v is not None and k not in d:
            d[k] = v
    # parameter groups the memory formulas need: the input embedding (autocast never casts it, an
    # untied lm_head it does), the 3-D expert tensors (grouped_mm: never cast by autocast)
    emb = model.get_input_embeddings().weight
    d["embedding_params"] = emb.numel()
    head = model.get_output_embeddings()
    d["lm_head_params"] = 0 if head is None or head.weight is emb else head.weight.numel()
    d["expert_params"] = sum(p.numel() for n, p in model.named_parameters() if p.dim() == 3 and ".experts." in n)
    d["trainable_dtype_bytes"] = sorted({p.element_size() for p in model.parameters() if p.requires_grad})
    lt = getattr(cfg, "layer_types", None)
    if lt:
        d["layer_types"] = {t: lt.count(t) for t in sorted(set(lt))}
    return d


# ------------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------------


def _attn(model):
    return MODELS[model][1].get("attn", "sdpa") if model in MODELS else "sdpa"


def T(name, model, precision, batch, seq, ckpt=False):
    return dict(
        name=name,
        model=model,
        task="training",
        precision=precision,
        batch=batch,
        seq=seq,
        gradient_checkpointing=ckpt,
        attention=_attn(model),
        optimizer="adamw-foreach",
    )


def I(name, model, precision, batch, seq, decode=N_DECODE):
    return dict(
        name=name,
        model=model,
        task="inference",
        precision=precision,
        batch=batch,
        seq=seq,
        decode_steps=decode,
        gradient_checkpointing=False,
        attention=_attn(model),
    )


CASES = [
    # ---- training (AdamW foreach, 2 iterations, steady state = iteration 2) ----
    T("gpt2-124m-train-fp32-b8-s1024", "gpt2-124m", "fp32", 8, 1024),
    T("gpt2-124m-train-mixed-b16-s1024-ckpt", "gpt2-124m", "mixed", 16, 1024, True),
    T("gpt2-1.5b-train-mixed-b4-s1024", "gpt2-1.5b", "mixed", 4, 1024),
    T("gpt2-1.5b-train-bf16-b8-s1024-ckpt", "gpt2-1.5b", "bf16", 8, 1024, True),
    T("bert-base-train-fp32-b32-s512", "bert-base", "fp32", 32, 512),
    T("bert-large-train-mixed-b16-s512", "bert-large", "mixed", 16, 512),
    T("bert-large-train-bf16-b64-s512-ckpt", "bert-large", "bf16", 64, 512, True),
    T("llama2-7b-train-bf16-b1-s2048-ckpt", "llama2-7b", "bf16", 1, 2048, True),
    T("llama2-7b-train-mixed-b1-s4096", "llama2-7b", "mixed", 1, 4096),
    T("llama2-7b-train-bf16-b8-s4096", "llama2-7b", "bf16", 8, 4096),
    T("llama2-7b-train-fp32-b2-s2048-ckpt", "llama2-7b", "fp32", 2, 2048, True),
    T("llama2-13b-train-bf16-b4-s4096-ckpt", "llama2-13b", "bf16", 4, 4096, True),
    T("llama2-13b-train-mixed-b2-s2048", "llama2-13b", "mixed", 2, 2048),
    T("llama3-8b-train-bf16-b4-s8192-ckpt", "llama3-8b", "bf16", 4, 8192, True),
    T("llama3-8b-train-mixed-b2-s4096", "llama3-8b", "mixed", 2, 4096),
    T("mistral-7b-train-bf16-b2-s8192-ckpt", "mistral-7b", "bf16", 2, 8192, True),
    T("mistral-7b-train-mixed-b4-s2048", "mistral-7b", "mixed", 4, 2048),
    T("mixtral-8x7b-train-bf16-b1-s2048-ckpt", "mixtral-8x7b", "bf16", 1, 2048, True),
    # ---- inference: generation with a KV cache, prefill + decode steps ----
    I("gpt2-124m-gen-bf16-b64-s1000", "gpt2-124m", "bf16", 64, 1000),
    I("gpt2-1.5b-gen-fp32-b16-s1000", "gpt2-1.5b", "fp32", 16, 1000),
    I("llama2-7b-gen-bf16-b1-s4096", "llama2-7b", "bf16", 1, 4092),
    I("llama2-7b-gen-bf16-b32-s2048", "llama2-7b", "bf16", 32, 2048),
    I("llama2-7b-gen-fp32-b4-s1024", "llama2-7b", "fp32", 4, 1024),
    I("llama2-7b-gen-mixed-b4-s2048", "llama2-7b", "mixed", 4, 2048),
    I("llama2-13b-gen-bf16-b16-s4000", "llama2-13b", "bf16", 16, 4000),
    I("llama3-8b-gen-bf16-b64-s4096", "llama3-8b", "bf16", 64, 4096),
    I("mistral-7b-gen-bf16-b8-s8192", "mistral-7b", "bf16", 8, 8192),
    I("mixtral-8x7b-gen-bf16-b8-s4096", "mixtral-8x7b", "bf16", 8, 4096),
    I("llama2-70b-gen-bf16-b1-s4000", "llama2-70b", "bf16", 1, 4000),
    I("llama2-70b-gen-bf16-b16-s4000", "llama2-70b", "bf16", 16, 4000),
    # ---- held out from the calibration: shapes no calibrate.py run used ----
    T("qwen2.5-7b-train-bf16-b8-s4096-ckpt", "qwen2.5-7b", "bf16", 8, 4096, True),
    T("qwen2.5-7b-train-mixed-b2-s4096", "qwen2.5-7b", "mixed", 2, 4096),
    T("gpt2-medium-train-fp32-b4-s1024", "gpt2-medium", "fp32", 4, 1024),
    I("qwen2.5-7b-gen-bf16-b16-s4096", "qwen2.5-7b", "bf16", 16, 4096),
    I("llama3-70b-gen-bf16-b8-s8192", "llama3-70b", "bf16", 8, 8192),
    # ---- eager attention (the coefficients come from calibrate.py's eager variants) ----
    T("llama2-7b-eager-train-bf16-b2-s2048", "llama2-7b-eager", "bf16", 2, 2048),
    T("llama2-7b-eager-train-mixed-b8-s4096-ckpt", "llama2-7b-eager", "mixed", 8, 4096, True),
    T("gpt2-124m-eager-train-fp32-b8-s1024", "gpt2-124m-eager", "fp32", 8, 1024),
    I("llama2-7b-eager-gen-bf16-b8-s2048", "llama2-7b-eager", "bf16", 8, 2048),
]


# ------------------------------------------------------------------------------------------------
# Running one case
# ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def default_dtype(dt):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dt)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def build(model_name, task, precision, fake, lora=None):
    family, cfg = make_config(model_name, fake=fake)
    dt = torch.bfloat16 if precision == "bf16" else torch.float32
    with default_dtype(dt):
        model = model_class(family, task)(cfg)
    if lora is not None:
        # peft as a user calls it: the base model in its dtype, adapters made by get_peft_model
        # (autocast_adapter_dtype=True, its default, keeps 16-bit models' adapters in fp32)
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **lora))
        cfg = model.config
    return family, cfg, model


def run_case(case: dict, fake: bool = True, tracker_cls=LiveBytesTracker, external_tracker=None) -> dict:
    """Run one case; return measurements. ``external_tracker`` (validation) replaces ours."""
    fakepatches.apply()
    fakepatches.set_cuda_dropout(fake and case.get("dropout_kernel") == "fused")
    t0 = time.time()
    torch.manual_seed(0)
    fake_mode = FakeTensorMode(allow_non_fake_inputs=False) if fake else contextlib.nullcontext()
    with fake_mode:
        family, cfg, model = build(case["model"], case["task"], case["precision"], fake, case.get("lora"))
        arch = arch_numbers(case["model"], cfg, model)
        tr = tracker_cls()
        for p in model.parameters():
            tr.track(p, "parameters")
        for b in model.buffers():
            tr.track(b, "parameters")
        mixed = case["precision"] == "mixed"
        tr.autocast_weight_casts = mixed
        amp = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if mixed else contextlib.nullcontext
        b, s = case["batch"], case["seq"]
        res = dict(case=case, arch=arch)
        ext = external_tracker(model) if external_tracker else None
        if case["task"] == "training":
            res.update(_train(case, model, tr, amp, b, s, cfg, ext))
        else:
            res.update(_generate(case, model, tr, amp, b, s, cfg, ext))
    res["seconds"] = round(time.time() - t0, 1)
    return res


def _train(case, model, tr, amp, b, s, cfg, ext):
    model.train()
    if case["gradient_checkpointing"]:
        model.gradient_checkpointing_enable()  # transformers default: use_reentrant=False
    # PyTorch's default AdamW on CUDA is the foreach implementation; on CPU the default is the
    # for-loop one, so ask for foreach explicitly to get the CUDA allocation pattern.
    # Only what trains gets an optimizer (all parameters, or a LoRA model's adapters).
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-5, weight_decay=0.01, foreach=True)
    for p in trainable:
        p.register_post_accumulate_grad_hook(lambda p: tr.relabel(p.grad, "gradients"))
    if ext is not None:
        ext.track_external(model, opt)
    iters = []
    with ext if ext is not None else contextlib.nullcontext(), tr:
        input_ids = torch.randint(0, cfg.vocab_size, (b, s))
        labels = input_ids.clone()
        tr.relabel(input_ids, "activations")
        tr.reset_peak()
        for it in range(TRAIN_ITERS):
            if ext is not None:
                ext.reset_mod_stats()  # MemTracker refuses a second forward otherwise
            tr.set_phase("forward")
            with amp():
                out = model(input_ids=input_ids, labels=labels)
            loss = out.loss
            del out  # keep only the loss, as a training loop does (the logits are dropped)
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
                    activation_peaks=dict(tr.activation_peaks),
                    end_bytes=tr.total,
                )
            )
            if it < TRAIN_ITERS - 1:
                tr.reset_peak()
    steady = iters[-1]
    out = dict(
        peak_bytes=max(i["peak_bytes"] for i in iters),
        peak_phase=steady["peak_phase"],
        phase_peaks=steady["phase_peaks"],
        breakdown_at_peak=steady["breakdown_at_peak"],
        activation_peaks=steady["activation_peaks"],
        iteration_peaks=[
            dict(peak_bytes=i["peak_bytes"], peak_phase=i["peak_phase"], phase_peaks=i["phase_peaks"]) for i in iters
        ],
    )
    if ext is not None:
        out["external_peak_bytes"] = ext_peak(ext)
    return out


def _generate(case, model, tr, amp, b, s, cfg, ext):
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    model.eval()
    # Label the KV cache as it is stored (torch.cat makes a new storage at each step).
    patched = []
    for cls in (DynamicLayer, DynamicSlidingWindowLayer):
        orig = cls.__dict__["update"]

        def update(self, k, v, *a, _orig=orig, **kw):
            r = _orig(self, k, v, *a, **kw)
            tr.relabel(self.keys, "kv_cache")
            tr.relabel(self.values, "kv_cache")
            return r

        cls.update = update
        patched.append((cls, orig))
    if ext is not None:
        ext.track_external(model)
    try:
        with ext if ext is not None else contextlib.nullcontext(), tr, torch.inference_mode():
            input_ids = torch.randint(0, cfg.vocab_size, (b, s))
            tr.reset_peak()
            cache = DynamicCache(config=cfg)
            tr.set_phase("prefill")
            with amp():
                out = model(input_ids=input_ids, cache=cache, use_cache=True, logits_to_keep=1)
            # as generate(): the last position's logits, copied to fp32, then greedy choice
            logits = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
            del out
            nxt = torch.argmax(logits, dim=-1, keepdim=True)
            del logits
            for _ in range(case["decode_steps"]):
                tr.set_phase("decode")
                if ext is not None:
                    ext.reset_mod_stats()
                with amp():
                    out = model(input_ids=nxt, cache=cache, use_cache=True, logits_to_keep=1)
                logits = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
                del out
                nxt = torch.argmax(logits, dim=-1, keepdim=True)
                del logits
            kv = sum(l.keys.untyped_storage().nbytes() + l.values.untyped_storage().nbytes() for l in cache.layers)
    finally:
        for cls, orig in patched:
            cls.update = orig
    out = dict(
        peak_bytes=tr.peak,
        peak_phase=tr.peak_phase,
        phase_peaks=dict(tr.phase_peaks),
        breakdown_at_peak=dict(tr.peak_breakdown),
        activation_peaks=dict(tr.activation_peaks),
        kv_cache_bytes_end=kv,
    )
    if ext is not None:
        out["external_peak_bytes"] = ext_peak(ext)
    return out


def ext_peak(mt):
    snap = mt.get_tracker_snapshot("peak")
    return max(v.get("Total", 0) for v in snap.values())


# ------------------------------------------------------------------------------------------------
# Validation on tiny real models
# ------------------------------------------------------------------------------------------------


def _real_with_allocator_counter(case):
    """Run a real case under the profiler and replay the CPU allocator's own alloc/free events.

    The allocator counter starts before the model is built, so its maximum also covers the
    construction; on these tiny models the training/generation peak is higher anyway."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        res = run_case(case, fake=False)
    evs = [
        e
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch._C._autograd.DeviceType.CPU
    ]
    evs.sort(key=lambda e: e.start_ns())
    cur = peak = 0
    for e in evs:
        cur += e.nbytes()
        peak = max(peak, cur)
    return res, peak


def validate() -> list[dict]:
    from torch.distributed._tools.mem_tracker import MemTracker

    vcases = [
        T("tiny-llama-train-fp32", "tiny-llama", "fp32", 2, 128),
        T("tiny-llama-train-mixed", "tiny-llama", "mixed", 2, 128),
        T("tiny-llama-train-bf16-ckpt", "tiny-llama", "bf16", 2, 128, True),
        T("tiny-gpt2-train-fp32", "tiny-gpt2", "fp32", 2, 128),
        T("tiny-bert-train-mixed", "tiny-bert", "mixed", 2, 128),
        T("tiny-mistral-train-bf16", "tiny-mistral", "bf16", 2, 128),
        I("tiny-llama-gen-bf16", "tiny-llama", "bf16", 3, 100),
        I("tiny-llama-gen-fp32", "tiny-llama", "fp32", 3, 100),
        I("tiny-gpt2-gen-fp32", "tiny-gpt2", "fp32", 3, 100),
        I("tiny-mistral-gen-bf16", "tiny-mistral", "bf16", 3, 100),
    ]
    rows = []
    for c in vcases:
        real, alloc_peak = _real_with_allocator_counter(c)
        fake = run_case(c, fake=True)
        mt = run_case(c, fake=False, external_tracker=lambda m: MemTracker())
        row = dict(
            name=c["name"],
            real_tracker=real["peak_bytes"],
            fake_tracker=fake["peak_bytes"],
            memtracker_real=mt["external_peak_bytes"],
            cpu_allocator_real=alloc_peak,
            real_phase=real["peak_phase"],
            fake_phase=fake["peak_phase"],
            real_phase_peaks=real["phase_peaks"],
            fake_phase_peaks=fake["phase_peaks"],
        )
        row["fake_vs_real_pct"] = 100.0 * (fake["peak_bytes"] - real["peak_bytes"]) / real["peak_bytes"]
        row["allocator_vs_real_pct"] = 100.0 * (alloc_peak - real["peak_bytes"]) / real["peak_bytes"]
        row["memtracker_vs_real_pct"] = 100.0 * (mt["external_peak_bytes"] - real["peak_bytes"]) / real["peak_bytes"]
        rows.append(row)
        print(
            f"  {c['name']:28s} real {real['peak_bytes']:>10d}  fake {fake['peak_bytes']:>10d}  "
            f"MemTracker {mt['external_peak_bytes']:>10d}  CPU allocator {alloc_peak:>10d}  "
            f"phase {real['peak_phase']}/{fake['peak_phase']}",
            flush=True,
        )
    return rows


# tiny configs of the families whose code paths are new here (grouped_mm experts, eager soft-capping,
# attention sinks, peft LoRA), run with real tensors and under FakeTensorMode (validate_families)
FAMILY_TINY = {
    "tiny-qwen3moe": (
        "qwen3_moe",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,
            intermediate_size=128,
            moe_intermediate_size=48,
            num_experts=8,
            num_experts_per_tok=2,
            vocab_size=1000,
            max_position_embeddings=512,
        ),
    ),
    "tiny-gemma2": (
        "gemma2",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,
            intermediate_size=128,
            vocab_size=1000,
            max_position_embeddings=512,
            sliding_window=64,
        ),
    ),
    "tiny-gptoss": (
        "gpt_oss",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            intermediate_size=64,
            num_local_experts=4,
            num_experts_per_tok=2,
            vocab_size=1000,
            max_position_embeddings=512,
            sliding_window=16,
        ),
    ),
    "tiny-llama-lora": (
        "llama",
        dict(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=172,
            vocab_size=1000,
            max_position_embeddings=512,
        ),
    ),
}


def validate_families() -> list[dict]:
    """Real run vs fake run (our tracker on both) and torch's MemTracker on the real run."""
    from torch.distributed._tools.mem_tracker import MemTracker

    for name, (mt, kw) in FAMILY_TINY.items():
        MODELS[name] = (mt, dict(kw, attn="default", generic=True))
    lora = dict(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.1)
    vcases = [
        T("tiny-qwen3moe-train-fp32", "tiny-qwen3moe", "fp32", 2, 128),
        T("tiny-qwen3moe-train-mixed", "tiny-qwen3moe", "mixed", 2, 128),
        T("tiny-qwen3moe-train-bf16-ckpt", "tiny-qwen3moe", "bf16", 2, 128, True),
        I("tiny-qwen3moe-gen-bf16", "tiny-qwen3moe", "bf16", 3, 100),
        T("tiny-gemma2-train-bf16", "tiny-gemma2", "bf16", 2, 128),
        I("tiny-gemma2-gen-fp32", "tiny-gemma2", "fp32", 3, 100),
        T("tiny-gptoss-train-fp32", "tiny-gptoss", "fp32", 2, 128),
        I("tiny-gptoss-gen-bf16", "tiny-gptoss", "bf16", 3, 100),
        dict(T("tiny-llama-lora-train-bf16", "tiny-llama-lora", "bf16", 2, 128), lora=lora),
        dict(T("tiny-llama-lora-train-mixed-ckpt", "tiny-llama-lora", "mixed", 2, 128, True), lora=lora),
    ]
    rows = []
    for c in vcases:
        c["attention"] = "default"
        real = run_case(c, fake=False)
        fake = run_case(c, fake=True)
        try:  # MemTracker hooks every parameter, which frozen (LoRA base) weights refuse
            mtp = run_case(c, fake=False, external_tracker=lambda m: MemTracker())["external_peak_bytes"]
        except RuntimeError:
            mtp = None
        row = dict(
            name=c["name"],
            real_tracker=real["peak_bytes"],
            fake_tracker=fake["peak_bytes"],
            memtracker_real=mtp,
            real_phase=real["peak_phase"],
            fake_phase=fake["peak_phase"],
        )
        row["fake_vs_real_pct"] = 100.0 * (fake["peak_bytes"] - real["peak_bytes"]) / real["peak_bytes"]
        rows.append(row)
        print(
            f"  {c['name']:34s} real {real['peak_bytes']:>10d}  fake {fake['peak_bytes']:>10d}  "
            f"MemTracker {mtp if mtp is not None else 'n/a':>10}  phase {real['peak_phase']}/{fake['peak_phase']}",
            flush=True,
        )
    return rows


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------


def _worker(case):
    torch.set_num_threads(1)
    try:
        return run_case(case, fake=True)
    except Exception as e:  # keep the run going; record the failure
        return dict(case=case, error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())


def gb(x):
    return x / GiB


def table(results) -> str:
    lines = []
    hdr = (
        f"{'case':42s} {'params':>7s} {'peak GiB':>9s} {'phase':>9s} | {'fwd/pre':>8s} {'bwd/dec':>8s} "
        f"{'opt':>8s} | {'weights':>8s} {'grads':>8s} {'optst':>8s} {'opttmp':>7s} {'casts':>7s} "
        f"{'kv':>7s} {'act':>8s} {'sec':>5s}"
    )
    lines.append(hdr)
    lines.append("-" * len(hdr))
    for r in results:
        c = r["case"]
        if "error" in r:
            lines.append(f"{c['name']:42s} ERROR {r['error'][:100]}")
            continue
        pp, bd = r["phase_peaks"], r["breakdown_at_peak"]
        if c["task"] == "training":
            a, b_, o = pp.get("forward", 0), pp.get("backward", 0), pp.get("optimizer", 0)
        else:
            a, b_, o = pp.get("prefill", 0), pp.get("decode", 0), 0
        lines.append(
            f"{c['name']:42s} {r['arch']['params'] / 1e9:6.2f}B {gb(r['peak_bytes']):9.2f} {r['peak_phase']:>9s} | "
            f"{gb(a):8.2f} {gb(b_):8.2f} {gb(o):8.2f} | {gb(bd.get('parameters', 0)):8.2f} "
            f"{gb(bd.get('gradients', 0)):8.2f} {gb(bd.get('optimizer_state', 0)):8.2f} "
            f"{gb(bd.get('optimizer_temp', 0)):7.2f} {gb(bd.get('weight_casts', 0)):7.2f} "
            f"{gb(bd.get('kv_cache', 0)):7.2f} {gb(bd.get('activations', 0)):8.2f} {r['seconds']:5.1f}"
        )
    lines.append("")
    lines.append(
        "GiB = 2^30 bytes. phase = phase of the peak (training: steady-state iteration 2). "
        "fwd/pre, bwd/dec, opt = each phase's own peak of live bytes. "
        "weights..act = breakdown of live bytes at the peak."
    )
    return "\n".join(lines)


def summarize(r: dict) -> dict:
    """results.json entry: inputs, peak, phase, per-phase peaks, breakdown."""
    if "error" in r:
        return r
    bd = r["breakdown_at_peak"]
    four = dict(
        parameters=bd.get("parameters", 0),
        gradients=bd.get("gradients", 0),
        optimizer_state=bd.get("optimizer_state", 0),
        activations_other=sum(v for k, v in bd.items() if k not in ("parameters", "gradients", "optimizer_state")),
    )
    out = dict(
        name=r["case"]["name"],
        inputs=r["case"],
        model=r["arch"],
        peak_bytes=r["peak_bytes"],
        peak_gib=round(gb(r["peak_bytes"]), 3),
        peak_phase=r["peak_phase"],
        phase_peaks=r["phase_peaks"],
        breakdown_at_peak=four,
        breakdown_at_peak_detail=bd,
        seconds=r["seconds"],
    )
    for k in ("iteration_peaks", "kv_cache_bytes_end", "activation_peaks"):
        if k in r:
            out[k] = r[k]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--validate", action="store_true", help="only run the tracker validation")
    ap.add_argument("--skip-validate", action="store_true")
    ap.add_argument(
        "--validate-families",
        action="store_true",
        help="tiny real-vs-fake runs of the new families' code paths, into results-families.json",
    )
    ap.add_argument("--only", default=None, help="run cases whose name contains this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=HERE)
    ap.add_argument(
        "--llm-analysis-python",
        default=None,
        help="the Python of llm-analysis's own environment; with it, a full run also asks "
        "llm-analysis (and always accelerate) for the same cases, into peers.json",
    )
    ap.add_argument(
        "--vramcalc-python",
        default=None,
        help="the Python of vramcalc's own environment (a third peer, for --families)",
    )
    ap.add_argument(
        "--families",
        action="store_true",
        help="run families.py's cases instead (validation skipped); a full run writes "
        "results-families.json and measured-families.txt, and asks the peers for them",
    )
    args = ap.parse_args()
    if args.families:
        args.skip_validate = True
    stem = "-families" if args.families else ""

    t_start = time.time()
    doc = dict(torch=torch.__version__, python=platform.python_version())
    import transformers

    doc["transformers"] = transformers.__version__

    if args.validate_families:
        print("Family tracker validation (tiny real models vs fake, bytes):", flush=True)
        rows = validate_families()
        if os.path.exists(os.path.join(args.out, "results-families.json")):
            fam = json.load(open(os.path.join(args.out, "results-families.json")))
            fam["validation"] = rows
            with open(os.path.join(args.out, "results-families.json"), "w") as f:
                json.dump(fam, f, indent=1)
        return

    if not args.skip_validate:
        print("Tracker validation (tiny real models, bytes):", flush=True)
        doc["validation"] = validate()
        if args.validate:
            print(json.dumps(doc["validation"], indent=1))
            return

    cases = [c for c in (families.CASES if args.families else CASES) if not args.only or args.only in c["name"]]
    results = {}
    # Longest first, to balance the two workers.
    order = sorted(cases, key=lambda c: -MODELS[c["model"]][1].get("num_hidden_layers", 12))
    with ProcessPoolExecutor(max_workers=args.jobs) as ex:
        futs = {ex.submit(_worker, c): c["name"] for c in order}
        for f in as_completed(futs):
            r = f.result()
            results[futs[f]] = r
            msg = r.get("error") or f"peak {gb(r['peak_bytes']):.2f} GiB at {r['peak_phase']} ({r['seconds']} s)"
            print(f"  {futs[f]:42s} {msg}", flush=True)
    ordered = [results[c["name"]] for c in cases]
    txt = table(ordered)
    print()
    print(txt)
    doc["run_seconds"] = round(time.time() - t_start, 1)
    doc["method"] = (
        "FakeTensorMode, full depth (no layer extrapolation); peak of live tensor bytes "
        "(each storage counted once, freed via weakref.finalize); training = 2 iterations "
        "of forward/backward/AdamW(foreach) step/zero_grad, reported peak = steady state "
        "(iteration 2); generation = prefill (logits_to_keep=1) + decode steps with a "
        "DynamicCache, no attention_mask (unpadded), greedy. Bytes, GiB = 2^30."
    )
    doc["cases"] = [summarize(r) for r in ordered]
    if args.families:
        doc["sources"] = {c["model"]: families.MODELS[c["model"]][2] for c in cases}
    if args.only is None:
        with open(os.path.join(args.out, f"results{stem}.json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(args.out, f"measured{stem}.txt"), "w") as f:
            f.write(
                txt + f"\n\nrun time {doc['run_seconds']} s (torch {doc['torch']}, "
                f"transformers {doc['transformers']}, {os.cpu_count()} CPUs)\n"
            )
    print(f"\nrun time {doc['run_seconds']} s")
    if args.only is None and args.out == HERE:
        # the peers, in the same run: accelerate here, llm-analysis in its own environment
        import subprocess

        for python, peer in (
            (sys.executable, "accelerate"),
            (args.llm_analysis_python, "llm-analysis"),
            (args.vramcalc_python, "vramcalc"),
        ):
            if python is None:
                print(f"{peer}: skipped (give --{peer}-python to include it)")
                continue
            cmd = [python, os.path.join(HERE, "peers.py"), peer] + (["--families"] if args.families else [])
            p = subprocess.run(cmd, capture_output=True, text=True)
            print(p.stdout.strip() or p.stderr.strip()[-500:])


if __name__ == "__main__":
    main()
