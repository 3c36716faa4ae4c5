"""Patches that make a FakeTensor run allocate exactly what a real run allocates.

1. transformers treats a FakeTensor as "tracing" (is_tracing -> is_fake_tensor) and then builds a
   full causal mask and repeats K/V instead of using SDPA's is_causal / enable_gqa. We make its
   check answer as it does for real tensors.
2. transformers' packed-sequence check ends in a data-dependent ``.all()``; under fake tensors it
   answers "not packed" (what it answers on real unpacked inputs).
3. AdamW reads its step counter with ``.item()``; under fake tensors it gets a constant.
4. SDPA under inference_mode and eval dropout are handled in the tracker itself (tracker.py).
5. Mixtral's experts loop over the experts actually hit, with data-dependent token counts; under
   fake tensors we route a balanced load (tokens*top_k/num_experts tokens to each expert), which
   allocates what the eager loop allocates for a perfectly balanced router.
6. transformers 5's default MoE path (``grouped_mm``) calls ``torch._grouped_mm``, whose meta
   kernel copies the CUDA fast path's bf16-only check; the CPU kernel (and CUDA's fallback) take
   fp32 as well and return (tokens x top_k, out) in the input dtype, which is what the patched
   meta kernel returns for fp32 / fp16 inputs (bf16 goes through the original unchanged).
7. ``nn.Module.to()`` swaps a FakeTensor parameter in place (``torch.utils.swap_tensors``), which
   FakeTensorMode's own weak references forbid; peft moves / casts every new adapter that way. For
   modules holding FakeTensors the converted tensor is put in the module's slot instead (what
   ``.to()`` does for ordinary tensors when swapping is off): same shapes, dtypes, bytes.
8. SDPA with a value head size different from the query / key one (DeepSeek's multi-head latent
   attention: q, k 192 wide, v 128) has no fused kernel on the CPU, which falls back to the math
   path and stores the score matrix; on CUDA (sm80+) the memory-efficient kernel takes it (its
   head-size check wants q and k equal and each size aligned, not v equal: PyTorch
   aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, check_head_dim_size_mem_efficient) and
   stores only its output and log-sum-exp. Under fake tensors such calls (no mask, no dropout) go to
   ``aten._scaled_dot_product_efficient_attention``, i.e. what CUDA runs.
9. Training dropout (0 < p < 1): on CUDA ``F.dropout`` is the fused ``native_dropout``, which keeps
   a bool mask (1 byte per element) for backward; on the CPU ATen multiplies by a noise tensor of the
   input's dtype (4 bytes per element in fp32) and keeps that (aten/src/ATen/native/Dropout.cpp,
   is_fused_kernel_acceptable: CUDA / XPU / lazy / privateuse1 only). A case with
   ``"dropout_kernel": "fused"`` (the families of families.py) gets CUDA's ``native_dropout`` under
   fake tensors; the cases of results.json keep the CPU behaviour they were measured with.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor

_applied = False
_state = {"cuda_dropout": False}


def set_cuda_dropout(on: bool):
    """Fake runs use CUDA's fused dropout (bool mask) when on, the CPU's (dtype-wide noise) when off."""
    _state["cuda_dropout"] = bool(on)


def apply():
    global _applied
    if _applied:
        return
    _applied = True

    import transformers.masking_utils as mu
    import transformers.utils.import_utils as iu

    iu.is_fake_tensor = lambda x: False  # is_tracing() looks it up at call time

    orig_packed = mu.find_packed_sequence_indices

    def find_packed_sequence_indices(position_ids):
        if isinstance(position_ids, FakeTensor):
            return None
        return orig_packed(position_ids)

    mu.find_packed_sequence_indices = find_packed_sequence_indices

    import torch.optim.adam as adam_mod
    import torch.optim.adamw as adamw_mod
    import torch.optim.optimizer as opt_mod

    orig_get_value = opt_mod._get_value

    def _get_value(x):
        if isinstance(x, FakeTensor):
            return 1.0
        return orig_get_value(x)

    for m in (opt_mod, adam_mod, adamw_mod):
        if hasattr(m, "_get_value"):
            m._get_value = _get_value

    orig_apply = torch.nn.Module._apply

    def _apply(self, fn, recurse=True):
        fake = any(isinstance(t, FakeTensor) for t in list(self._parameters.values()) + list(self._buffers.values()))
        if not fake:
            return orig_apply(self, fn, recurse)
        if recurse:
            for m in self.children():
                m._apply(fn)
        for k, p in list(self._parameters.items()):
            if p is None:
                continue
            with torch.no_grad():
                q = fn(p)
            if q is not p:
                self._parameters[k] = torch.nn.Parameter(q, requires_grad=p.requires_grad)
        for k, b in list(self._buffers.items()):
            if b is not None:
                self._buffers[k] = fn(b)
        return self

    torch.nn.Module._apply = _apply

    import torch.nn.functional as F

    orig_sdpa = F.scaled_dot_product_attention

    def scaled_dot_product_attention(
        query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
    ):
        if (
            isinstance(query, FakeTensor)
            and attn_mask is None
            and dropout_p == 0.0
            and not enable_gqa
            and query.shape[-1] == key.shape[-1] != value.shape[-1]
            and query.shape[1] == key.shape[1]
        ):
            need_lse = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                query, key, value, None, need_lse, 0.0, is_causal, scale=scale
            )[0]
        return orig_sdpa(
            query,
            key,
            value,
            attn_mask=attn_mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
        )

    F.scaled_dot_product_attention = scaled_dot_product_attention
    torch.nn.functional.scaled_dot_product_attention = scaled_dot_product_attention

    orig_dropout = F.dropout

    def dropout(input, p=0.5, training=True, inplace=False):
        if _state["cuda_dropout"] and training and 0.0 < p < 1.0 and not inplace and isinstance(input, FakeTensor):
            return torch.ops.aten.native_dropout(input, p, True)[0]
        return orig_dropout(input, p, training, inplace)

    F.dropout = dropout

    # grouped_mm in fp32 / fp16 (the meta kernel refuses anything but bf16, the real kernels don't)
    import torch._meta_registrations as metareg

    orig_common = metareg._meta_grouped_mm_common

    def _meta_grouped_mm_common(
        mat_a, mat_b, scale_a, scale_b, offs=None, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False
    ):
        if (
            scale_a is None
            and scale_b is None
            and mat_a.dtype == mat_b.dtype
            and mat_a.dtype in (torch.float32, torch.float16)
            and bias is None
        ):
            return metareg._create_grouped_mm_output_tensor(mat_a, mat_b, offs, out_dtype)
        return orig_common(
            mat_a,
            mat_b,
            scale_a,
            scale_b,
            offs=offs,
            bias=bias,
            scale_result=scale_result,
            out_dtype=out_dtype,
            use_fast_accum=use_fast_accum,
        )

    metareg._meta_grouped_mm_common = _meta_grouped_mm_common

    # Mixtral: balanced routing under fake tensors.
    try:
        from transformers.integrations.moe import ExpertsInterface

        def balanced_experts_forward(self, hidden_states, top_k_index, top_k_weights):
            if not isinstance(hidden_states, FakeTensor):
                raise RuntimeError("balanced routing is for fake runs only")
            final = torch.zeros_like(hidden_states)
            T = hidden_states.shape[0]
            k = top_k_index.shape[-1]
            E = self.num_experts
            n = (T * k + E - 1) // E
            with torch.no_grad():
                _expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=E + 1).permute(2, 1, 0)
                pass  # the real loop keeps expert_mask to the end; it is small (int64 (E+1)*k*T)
            for e in range(E):
                token_idx = torch.randint(0, T, (n,), device=hidden_states.device)
                top_k_pos = torch.randint(0, k, (n,), device=hidden_states.device)
                cur = hidden_states[token_idx]
                gate, up = torch.nn.functional.linear(cur, self.gate_up_proj[e]).chunk(2, dim=-1)
                h = self.act_fn(gate) * up
                h = torch.nn.functional.linear(h, self.down_proj[e])
                h = h * top_k_weights[token_idx, top_k_pos, None]
                final.index_add_(0, token_idx, h.to(final.dtype))
            return final

        ExpertsInterface._global_mapping["balanced_fake"] = balanced_experts_forward
    except Exception:  # pragma: no cover - older transformers
        pass
