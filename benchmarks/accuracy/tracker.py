"""Peak-of-live-tensor-bytes tracker (a TorchDispatchMode).

Every tensor an ATen op returns is looked at; its untyped storage is counted once (keyed by the
StorageImpl pointer) and a ``weakref.finalize`` on the storage subtracts it when the storage is
freed. The running total and its maximum give the peak of live tensor bytes, on real tensors and
on FakeTensors alike (a FakeTensor's storage is a meta storage with the real byte size).

Each storage carries a category (parameters, gradients, optimizer state, ...) so that the totals
per category can be snapshotted at the peak, and a phase (forward, backward, optimizer, prefill,
decode) is kept by the caller so that each phase's own peak is known.
"""

from __future__ import annotations

import weakref
from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

aten = torch.ops.aten

CATEGORIES = (
    "parameters",  # model weights (and the model's buffers: rotary inv_freq, position ids)
    "weight_casts",  # autocast's bf16 copies of fp32 weights, alive through forward+backward
    "gradients",  # .grad of the parameters
    "optimizer_state",  # AdamW exp_avg, exp_avg_sq, step
    "optimizer_temp",  # temporaries made inside optimizer.step() (foreach sqrt, ...)
    "kv_cache",  # generation key/value cache
    "activations",  # everything else: saved activations, temporaries, logits, inputs
)


def _storage_of(t):
    try:
        return t.untyped_storage()
    except Exception:  # sparse or storage-less tensor
        return None


class LiveBytesTracker(TorchDispatchMode):
    """Counts live storage bytes, their per-category split and the peak, with phase tags."""

    def __init__(self, decompose_in_inference_mode: bool = True):
        super().__init__()
        self.decompose_in_inference_mode = decompose_in_inference_mode
        self.live: dict[int, list] = {}  # key -> [nbytes, category]
        self._fin: dict[int, weakref.finalize] = {}
        self.cat_bytes: dict[str, int] = defaultdict(int)
        self.total = 0
        self.phase = "init"
        self.default_cat = "activations"
        self.autocast_weight_casts = False
        self.reset_peak()

    # ---- bookkeeping -------------------------------------------------------------------------
    def reset_peak(self):
        self.peak = self.total
        self.peak_phase = self.phase
        self.peak_breakdown = dict(self.cat_bytes)
        self.phase_peaks: dict[str, int] = {}
        # per phase, the peak of the "activations" category alone (everything not labelled as
        # parameters, gradients, optimizer state, weight casts or KV cache): calibrate.py fits it
        self.activation_peaks: dict[str, int] = {}

    def set_phase(self, phase: str):
        self.phase = phase
        self.phase_peaks[phase] = max(self.phase_peaks.get(phase, 0), self.total)

    def _freed(self, key):
        ent = self.live.pop(key, None)
        self._fin.pop(key, None)
        if ent is not None:
            self.total -= ent[0]
            self.cat_bytes[ent[1]] -= ent[0]

    def _note_peak(self):
        tot = self.total
        ph = self.phase
        if tot > self.phase_peaks.get(ph, 0):
            self.phase_peaks[ph] = tot
        act = self.cat_bytes["activations"]
        if act > self.activation_peaks.get(ph, 0):
            self.activation_peaks[ph] = act
        if tot > self.peak:
            self.peak = tot
            self.peak_phase = ph
            self.peak_breakdown = dict(self.cat_bytes)

    def track(self, t, cat: str | None = None):
        """Count tensor ``t``'s storage if it is new (or its size changed); return its key."""
        st = _storage_of(t)
        if st is None:
            return None
        key = st._cdata
        nb = st.nbytes()
        ent = self.live.get(key)
        if ent is None:
            c = cat or self.default_cat
            self.live[key] = [nb, c]
            self.total += nb
            self.cat_bytes[c] += nb
            self._fin[key] = weakref.finalize(st, self._freed, key)
            self._note_peak()
        elif ent[0] != nb:  # resized in place
            self.total += nb - ent[0]
            self.cat_bytes[ent[1]] += nb - ent[0]
            ent[0] = nb
            self._note_peak()
        return key

    def relabel(self, t, cat: str):
        if t is None:
            return
        key = self.track(t, cat)
        ent = self.live.get(key)
        if ent is not None and ent[1] != cat:
            self.cat_bytes[ent[1]] -= ent[0]
            self.cat_bytes[cat] += ent[0]
            ent[1] = cat

    def category_of(self, t):
        st = _storage_of(t)
        ent = self.live.get(st._cdata) if st is not None else None
        return ent[1] if ent else None

    # ---- dispatch ----------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # Eval dropout is the identity in the real kernel: no allocation.
        if func is aten.dropout.default:
            p = args[1] if len(args) > 1 else kwargs["p"]
            train = args[2] if len(args) > 2 else kwargs["train"]
            if not train or p == 0:
                return args[0]
        # Under inference_mode a CompositeImplicitAutograd op (SDPA above all) reaches the modes
        # whole; the FakeTensorMode below would decompose it out of our sight. Decompose it here,
        # with this mode re-entered, so its internal temporaries are counted as on a real run.
        if self.decompose_in_inference_mode and torch.is_inference_mode_enabled() and func.namespace == "aten":
            if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
                with self:
                    r = func.decompose(*args, **kwargs)
                if r is not NotImplemented:
                    return r
        out = func(*args, **kwargs)
        cat = None
        if self.autocast_weight_casts and func is aten._to_copy.default and self.category_of(args[0]) == "parameters":
            cat = "weight_casts"
        flat, _ = tree_flatten(out)
        for t in flat:
            if isinstance(t, torch.Tensor):
                self.track(t, cat)
        return out
