"""Model families outside the calibration set of results.json, at their published shapes.

Every entry is (transformers model_type, config kwargs, source of the numbers). The kwargs are the
architecture numbers of the published Hugging Face ``config.json`` named in the third field (the
files themselves are not downloaded; tests/fixtures/hf-configs/ holds the copies that could be found,
see its SOURCES.md); everything not given keeps transformers' default for that model_type.

Training dropout is CUDA's fused kernel (a bool mask), see fakepatches.py (9).
Attention is whatever the model class picks by default (``attn="default"``): SDPA where the class
supports it, eager where it does not (Gemma-2's soft-capping, gpt-oss's attention sinks). MoE experts
run transformers 5's default ``grouped_mm`` path. measure.py --families runs CASES.
"""

from __future__ import annotations

HF = "https://huggingface.co/{}/blob/main/config.json"

# name -> (model_type, kwargs, source)
MODELS = {
    # ---- llama: Llama-3.2-1B (tied embeddings, head_dim 64) ----
    "llama3.2-1b": ("llama", dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32,
                                  num_key_value_heads=8, head_dim=64, intermediate_size=8192,
                                  vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
                                  tie_word_embeddings=True),
                    HF.format("meta-llama/Llama-3.2-1B")),
    # Llama-3-8B for the peft LoRA cases (measure.py's llama3-8b, default attention)
    "llama3-8b-peft": ("llama", dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                                     num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                                     max_position_embeddings=8192, rope_theta=500000.0,
                                     tie_word_embeddings=False),
                       HF.format("meta-llama/Meta-Llama-3-8B")),
    # ---- mistral: Mistral-Small-24B (head_dim 128 while hidden / heads = 160) ----
    "mistral-small-24b": ("mistral", dict(num_hidden_layers=40, hidden_size=5120, num_attention_heads=32,
                                          num_key_value_heads=8, head_dim=128, intermediate_size=32768,
                                          vocab_size=131072, max_position_embeddings=32768,
                                          rope_theta=100000000.0, sliding_window=None,
                                          tie_word_embeddings=False),
                          HF.format("mistralai/Mistral-Small-24B-Base-2501")),
    # ---- mixtral: Mixtral-8x7B with transformers 5's default grouped_mm experts ----
    "mixtral-8x7b-gmm": ("mixtral", dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                                         num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
                                         max_position_embeddings=32768, num_local_experts=8,
                                         num_experts_per_tok=2, sliding_window=None, rope_theta=1e6,
                                         tie_word_embeddings=False),
                         HF.format("mistralai/Mixtral-8x7B-v0.1")),
    # ---- qwen2: Qwen2.5-1.5B (tied, QKV bias, 6:1 GQA) ----
    "qwen2.5-1.5b": ("qwen2", dict(num_hidden_layers=28, hidden_size=1536, num_attention_heads=12,
                                   num_key_value_heads=2, intermediate_size=8960, vocab_size=151936,
                                   max_position_embeddings=131072, rope_theta=1000000.0,
                                   tie_word_embeddings=True, use_sliding_window=False),
                     HF.format("Qwen/Qwen2.5-1.5B")),
    # ---- qwen2_moe: Qwen1.5-MoE-A2.7B (60 experts top-4 + a gated shared expert) ----
    "qwen1.5-moe-a2.7b": ("qwen2_moe", dict(num_hidden_layers=24, hidden_size=2048, num_attention_heads=16,
                                            num_key_value_heads=16, intermediate_size=5632,
                                            moe_intermediate_size=1408, shared_expert_intermediate_size=5632,
                                            num_experts=60, num_experts_per_tok=4, norm_topk_prob=False,
                                            decoder_sparse_step=1, vocab_size=151936,
                                            max_position_embeddings=8192, rope_theta=1000000.0,
                                            tie_word_embeddings=False, use_sliding_window=False),
                          HF.format("Qwen/Qwen1.5-MoE-A2.7B")),
    # ---- qwen3: Qwen3-0.6B (head_dim 128 while hidden / heads = 64, QK-norm) and Qwen3-8B ----
    "qwen3-0.6b": ("qwen3", dict(num_hidden_layers=28, hidden_size=1024, num_attention_heads=16,
                                 num_key_value_heads=8, head_dim=128, intermediate_size=3072,
                                 vocab_size=151936, max_position_embeddings=40960, rope_theta=1000000.0,
                                 tie_word_embeddings=True),
                   HF.format("Qwen/Qwen3-0.6B")),
    "qwen3-8b": ("qwen3", dict(num_hidden_layers=36, hidden_size=4096, num_attention_heads=32,
                               num_key_value_heads=8, head_dim=128, intermediate_size=12288,
                               vocab_size=151936, max_position_embeddings=40960, rope_theta=1000000.0,
                               tie_word_embeddings=False),
                 HF.format("Qwen/Qwen3-8B")),
    # ---- qwen3_moe: Qwen3-30B-A3B (128 experts top-8, no shared expert) ----
    "qwen3-30b-a3b": ("qwen3_moe", dict(num_hidden_layers=48, hidden_size=2048, num_attention_heads=32,
                                        num_key_value_heads=4, head_dim=128, intermediate_size=6144,
                                        moe_intermediate_size=768, num_experts=128, num_experts_per_tok=8,
                                        norm_topk_prob=True, decoder_sparse_step=1, vocab_size=151936,
                                        max_position_embeddings=40960, rope_theta=1000000.0,
                                        tie_word_embeddings=False),
                      HF.format("Qwen/Qwen3-30B-A3B")),
    # ---- gemma: Gemma-2B (multi-query, head_dim 256, gated tanh-GELU, 256k vocabulary, tied) ----
    "gemma-2b": ("gemma", dict(num_hidden_layers=18, hidden_size=2048, num_attention_heads=8,
                               num_key_value_heads=1, head_dim=256, intermediate_size=16384,
                               vocab_size=256000, max_position_embeddings=8192,
                               hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
                 HF.format("google/gemma-2b")),
    # ---- gemma2: Gemma-2-2B and Gemma-2-9B (soft-capping -> eager attention, sliding window 4096) ----
    "gemma2-2b": ("gemma2", dict(num_hidden_layers=26, hidden_size=2304, num_attention_heads=8,
                                 num_key_value_heads=4, head_dim=256, intermediate_size=9216,
                                 vocab_size=256000, max_position_embeddings=8192, sliding_window=4096,
                                 attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                                 query_pre_attn_scalar=256, hidden_activation="gelu_pytorch_tanh",
                                 tie_word_embeddings=True),
                  HF.format("google/gemma-2-2b")),
    "gemma2-9b": ("gemma2", dict(num_hidden_layers=42, hidden_size=3584, num_attention_heads=16,
                                 num_key_value_heads=8, head_dim=256, intermediate_size=14336,
                                 vocab_size=256000, max_position_embeddings=8192, sliding_window=4096,
                                 attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                                 query_pre_attn_scalar=256, hidden_activation="gelu_pytorch_tanh",
                                 tie_word_embeddings=True),
                  HF.format("google/gemma-2-9b")),
    # ---- gemma3 (text-only model): Gemma-3-1B (5 sliding layers of 512 : 1 global) ----
    "gemma3-1b": ("gemma3_text", dict(num_hidden_layers=26, hidden_size=1152, num_attention_heads=4,
                                      num_key_value_heads=1, head_dim=256, intermediate_size=6912,
                                      vocab_size=262144, max_position_embeddings=32768, sliding_window=512,
                                      sliding_window_pattern=6, query_pre_attn_scalar=256,
                                      rope_theta=1000000.0, rope_local_base_freq=10000.0,
                                      hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
                  HF.format("google/gemma-3-1b-pt")),
    # ---- phi3: Phi-3-mini-4k (fused qkv_proj and gate_up_proj) ----
    "phi3-mini": ("phi3", dict(num_hidden_layers=32, hidden_size=3072, num_attention_heads=32,
                               num_key_value_heads=32, intermediate_size=8192, vocab_size=32064,
                               max_position_embeddings=4096, original_max_position_embeddings=4096,
                               sliding_window=2047, rope_theta=10000.0, tie_word_embeddings=False),
                  HF.format("microsoft/Phi-3-mini-4k-instruct")),
    # ---- falcon: Falcon-7B (multi-query, parallel attention + MLP, 71 heads) ----
    "falcon-7b": ("falcon", dict(num_hidden_layers=32, hidden_size=4544, num_attention_heads=71,
                                 multi_query=True, parallel_attn=True, new_decoder_architecture=False,
                                 bias=False, alibi=False, vocab_size=65024, hidden_dropout=0.0,
                                 attention_dropout=0.0, tie_word_embeddings=True),
                  HF.format("tiiuae/falcon-7b")),
    # ---- gpt_neox: Pythia-1.4B (parallel residual, rotary on 25% of head_dim, untied) ----
    "pythia-1.4b": ("gpt_neox", dict(num_hidden_layers=24, hidden_size=2048, num_attention_heads=16,
                                     intermediate_size=8192, vocab_size=50304, max_position_embeddings=2048,
                                     rotary_pct=0.25, use_parallel_residual=True, hidden_act="gelu",
                                     attention_dropout=0.0, hidden_dropout=0.0, tie_word_embeddings=False),
                    HF.format("EleutherAI/pythia-1.4b")),
    # ---- opt: OPT-1.3B (ReLU MLP, learned positions, dropout 0.1) ----
    "opt-1.3b": ("opt", dict(num_hidden_layers=24, hidden_size=2048, num_attention_heads=32, ffn_dim=8192,
                             vocab_size=50272, max_position_embeddings=2048, word_embed_proj_dim=2048,
                             do_layer_norm_before=True, dropout=0.1, attention_dropout=0.0,
                             activation_function="relu", tie_word_embeddings=True),
                 HF.format("facebook/opt-1.3b")),
    # ---- deepseek_v2: DeepSeek-V2-Lite (MLA without q LoRA, 64 experts top-6, 2 shared, 1 dense layer) ----
    "deepseek-v2-lite": ("deepseek_v2", dict(num_hidden_layers=27, hidden_size=2048, num_attention_heads=16,
                                             num_key_value_heads=16, intermediate_size=10944,
                                             moe_intermediate_size=1408, n_routed_experts=64,
                                             n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1,
                                             kv_lora_rank=512, q_lora_rank=None, qk_rope_head_dim=64,
                                             qk_nope_head_dim=128, v_head_dim=128, n_group=1, topk_group=1,
                                             topk_method="greedy", norm_topk_prob=False,
                                             routed_scaling_factor=1.0, vocab_size=102400,
                                             max_position_embeddings=163840, rope_theta=10000.0,
                                             tie_word_embeddings=False),
                         HF.format("deepseek-ai/DeepSeek-V2-Lite")),
    # ---- deepseek_v3: DeepSeek-V3 (MLA with q LoRA, 256 experts top-8, 1 shared, 3 dense layers) ----
    "deepseek-v3": ("deepseek_v3", dict(num_hidden_layers=61, hidden_size=7168, num_attention_heads=128,
                                        num_key_value_heads=128, intermediate_size=18432,
                                        moe_intermediate_size=2048, n_routed_experts=256, n_shared_experts=1,
                                        num_experts_per_tok=8, first_k_dense_replace=3, kv_lora_rank=512,
                                        q_lora_rank=1536, qk_rope_head_dim=64, qk_nope_head_dim=128,
                                        v_head_dim=128, n_group=8, topk_group=4, norm_topk_prob=True,
                                        routed_scaling_factor=2.5, vocab_size=129280,
                                        max_position_embeddings=163840, rope_theta=10000.0,
                                        tie_word_embeddings=False),
                    HF.format("deepseek-ai/DeepSeek-V3")),
    # ---- gpt_oss: gpt-oss-20b (attention sinks -> eager; alternating 128-token sliding window) ----
    "gpt-oss-20b": ("gpt_oss", dict(num_hidden_layers=24, hidden_size=2880, num_attention_heads=64,
                                    num_key_value_heads=8, head_dim=64, intermediate_size=2880,
                                    num_local_experts=32, num_experts_per_tok=4, vocab_size=201088,
                                    max_position_embeddings=131072, sliding_window=128,
                                    rope_theta=150000.0, swiglu_limit=7.0, tie_word_embeddings=False),
                    HF.format("openai/gpt-oss-20b")),
}

LORA = dict(r=16, lora_alpha=32, target_modules="all-linear")


def _T(name, model, precision, batch, seq, ckpt=False, lora=None):
    c = dict(name=name, model=model, task="training", precision=precision, batch=batch, seq=seq,
             gradient_checkpointing=ckpt, attention="default", optimizer="adamw-foreach",
             dropout_kernel="fused")
    if lora is not None:
        c["lora"] = dict(LORA, lora_dropout=lora)
    return c


def _I(name, model, precision, batch, seq, decode=4):
    return dict(name=name, model=model, task="inference", precision=precision, batch=batch, seq=seq,
                decode_steps=decode, gradient_checkpointing=False, attention="default")


CASES = [
    _T("llama3.2-1b-train-fp32-b4-s2048", "llama3.2-1b", "fp32", 4, 2048),
    _T("llama3.2-1b-train-mixed-b8-s4096-ckpt", "llama3.2-1b", "mixed", 8, 4096, True),
    _I("llama3.2-1b-gen-bf16-b32-s4096", "llama3.2-1b", "bf16", 32, 4096),
    # peft LoRA r=16 on every linear layer of Llama-3-8B (base frozen)
    _T("llama3-8b-lora-bf16-b4-s4096", "llama3-8b-peft", "bf16", 4, 4096, lora=0.0),
    _T("llama3-8b-lora-bf16-b4-s4096-drop", "llama3-8b-peft", "bf16", 4, 4096, lora=0.05),
    _T("llama3-8b-lora-bf16-b8-s4096-ckpt", "llama3-8b-peft", "bf16", 8, 4096, True, lora=0.0),
    _T("llama3-8b-lora-bf16-b8-s4096-ckpt-drop", "llama3-8b-peft", "bf16", 8, 4096, True, lora=0.05),
    _T("llama3-8b-lora-mixed-b2-s4096-drop", "llama3-8b-peft", "mixed", 2, 4096, lora=0.05),
    _T("mistral-small-24b-train-bf16-b2-s4096-ckpt", "mistral-small-24b", "bf16", 2, 4096, True),
    _T("mistral-small-24b-train-mixed-b1-s4096", "mistral-small-24b", "mixed", 1, 4096),
    _I("mistral-small-24b-gen-bf16-b8-s8192", "mistral-small-24b", "bf16", 8, 8192),
    _T("mixtral-8x7b-gmm-train-bf16-b1-s2048-ckpt", "mixtral-8x7b-gmm", "bf16", 1, 2048, True),
    _T("mixtral-8x7b-gmm-train-mixed-b1-s2048", "mixtral-8x7b-gmm", "mixed", 1, 2048),
    _I("mixtral-8x7b-gmm-gen-bf16-b8-s4096", "mixtral-8x7b-gmm", "bf16", 8, 4096),
    _T("qwen2.5-1.5b-train-fp32-b4-s2048", "qwen2.5-1.5b", "fp32", 4, 2048),
    _T("qwen2.5-1.5b-train-bf16-b8-s4096", "qwen2.5-1.5b", "bf16", 8, 4096),
    _I("qwen2.5-1.5b-gen-bf16-b32-s2048", "qwen2.5-1.5b", "bf16", 32, 2048),
    _T("qwen1.5-moe-train-bf16-b4-s2048", "qwen1.5-moe-a2.7b", "bf16", 4, 2048),
    _T("qwen1.5-moe-train-mixed-b2-s2048-ckpt", "qwen1.5-moe-a2.7b", "mixed", 2, 2048, True),
    _I("qwen1.5-moe-gen-bf16-b16-s2048", "qwen1.5-moe-a2.7b", "bf16", 16, 2048),
    _T("qwen3-0.6b-train-fp32-b8-s2048", "qwen3-0.6b", "fp32", 8, 2048),
    _T("qwen3-0.6b-train-mixed-b8-s4096", "qwen3-0.6b", "mixed", 8, 4096),
    _I("qwen3-0.6b-gen-bf16-b64-s2048", "qwen3-0.6b", "bf16", 64, 2048),
    _T("qwen3-8b-train-bf16-b2-s4096-ckpt", "qwen3-8b", "bf16", 2, 4096, True),
    _T("qwen3-8b-train-bf16-b2-s4096", "qwen3-8b", "bf16", 2, 4096),
    _T("qwen3-8b-train-mixed-b2-s4096", "qwen3-8b", "mixed", 2, 4096),
    _I("qwen3-8b-gen-bf16-b16-s4096", "qwen3-8b", "bf16", 16, 4096),
    _T("qwen3-30b-a3b-train-bf16-b2-s4096-ckpt", "qwen3-30b-a3b", "bf16", 2, 4096, True),
    _T("qwen3-30b-a3b-train-mixed-b1-s4096", "qwen3-30b-a3b", "mixed", 1, 4096),
    _I("qwen3-30b-a3b-gen-bf16-b16-s4096", "qwen3-30b-a3b", "bf16", 16, 4096),
    _T("gemma-2b-train-bf16-b4-s4096", "gemma-2b", "bf16", 4, 4096),
    _T("gemma-2b-train-mixed-b4-s2048-ckpt", "gemma-2b", "mixed", 4, 2048, True),
    _I("gemma-2b-gen-bf16-b32-s2048", "gemma-2b", "bf16", 32, 2048),
    _T("gemma2-2b-train-bf16-b4-s4096", "gemma2-2b", "bf16", 4, 4096),
    _T("gemma2-2b-train-mixed-b2-s4096-ckpt", "gemma2-2b", "mixed", 2, 4096, True),
    _I("gemma2-2b-gen-bf16-b16-s4096", "gemma2-2b", "bf16", 16, 4096),
    _T("gemma2-9b-train-bf16-b1-s4096-ckpt", "gemma2-9b", "bf16", 1, 4096, True),
    _T("gemma2-9b-train-bf16-b2-s4096", "gemma2-9b", "bf16", 2, 4096),
    _T("gemma2-9b-train-fp32-b1-s2048", "gemma2-9b", "fp32", 1, 2048),
    _I("gemma2-9b-gen-bf16-b8-s4096", "gemma2-9b", "bf16", 8, 4096),
    _T("gemma3-1b-train-bf16-b8-s4096", "gemma3-1b", "bf16", 8, 4096),
    _T("gemma3-1b-train-fp32-b4-s2048-ckpt", "gemma3-1b", "fp32", 4, 2048, True),
    _I("gemma3-1b-gen-bf16-b32-s4096", "gemma3-1b", "bf16", 32, 4096),
    _T("phi3-mini-train-bf16-b4-s4096", "phi3-mini", "bf16", 4, 4096),
    _T("phi3-mini-train-mixed-b2-s4096-ckpt", "phi3-mini", "mixed", 2, 4096, True),
    _I("phi3-mini-gen-bf16-b32-s4000", "phi3-mini", "bf16", 32, 4000),
    _T("falcon-7b-train-bf16-b2-s2048", "falcon-7b", "bf16", 2, 2048),
    _T("falcon-7b-train-mixed-b4-s2048-ckpt", "falcon-7b", "mixed", 4, 2048, True),
    _I("falcon-7b-gen-bf16-b16-s2048", "falcon-7b", "bf16", 16, 2048),
    _T("pythia-1.4b-train-fp32-b8-s2048", "pythia-1.4b", "fp32", 8, 2048),
    _T("pythia-1.4b-train-mixed-b16-s2048-ckpt", "pythia-1.4b", "mixed", 16, 2048, True),
    _I("pythia-1.4b-gen-bf16-b32-s2040", "pythia-1.4b", "bf16", 32, 2040),
    _T("opt-1.3b-train-fp32-b8-s2040", "opt-1.3b", "fp32", 8, 2040),
    _T("opt-1.3b-train-bf16-b16-s2040-ckpt", "opt-1.3b", "bf16", 16, 2040, True),
    _I("opt-1.3b-gen-bf16-b32-s2040", "opt-1.3b", "bf16", 32, 2040),
    _T("deepseek-v2-lite-train-bf16-b4-s4096", "deepseek-v2-lite", "bf16", 4, 4096),
    _T("deepseek-v2-lite-train-mixed-b2-s4096-ckpt", "deepseek-v2-lite", "mixed", 2, 4096, True),
    _I("deepseek-v2-lite-gen-bf16-b16-s4096", "deepseek-v2-lite", "bf16", 16, 4096),
    _T("deepseek-v3-train-bf16-b1-s4096-ckpt", "deepseek-v3", "bf16", 1, 4096, True),
    _I("deepseek-v3-gen-bf16-b4-s4096", "deepseek-v3", "bf16", 4, 4096),
    _T("gpt-oss-20b-train-bf16-b2-s4096-ckpt", "gpt-oss-20b", "bf16", 2, 4096, True),
    _T("gpt-oss-20b-train-mixed-b1-s4096", "gpt-oss-20b", "mixed", 1, 4096),
    _I("gpt-oss-20b-gen-bf16-b16-s4096", "gpt-oss-20b", "bf16", 16, 4096),
]
