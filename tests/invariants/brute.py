"""An independent search of the catalog for a machine that holds a workload's stated need.

Written from the knowledge files, not from the rules: which cards the market, the precision, the
task and the workload allow; which platforms take a card (baseboard, power per card, cooling, slots,
the scenario's kind of machine); which counts a platform takes; and nodes of 8-GPU boards joined by a
compute fabric. A card holds the need at a count when the memory every GPU must hold whole plus its
share of the rest is within the card's memory. Prices and speeds play no part: a card with no price
or no published rate still holds what fits in its memory.

A serving workload states its need differently (weights, activations, the KV cache of one request);
the search there asks whether one request fits on one replica of 1, 2, 4 or 8 cards within
``SERVING_SHARE`` of their memory, a share below every engine's default memory budget, so that a
"fits" found here is one no engine would dispute.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .space import catalog, constant

GIB = 1024**3
# share of a card's memory a serving engine may be held to: below vLLM's and TGI's 0.9 of what CUDA
# reports (itself 0.925-0.99 of the card, knowledge/constants.yaml) and SGLang's static fraction
SERVING_SHARE = 0.8
TP_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Fit:
    """A machine the search found: the card, how many, on which platform, over how many nodes, and the
    memory each GPU must hold there.
    """

    gpu: str
    count: int
    platform: str
    nodes: int
    per_gpu_gb: float

    def __str__(self) -> str:
        where = f"{self.nodes} nodes of {self.platform}" if self.nodes > 1 else self.platform
        return f"{self.count} x {self.gpu} on {where}, {self.per_gpu_gb:.4g} GB per GPU"


def _vram_gb(card: Mapping[str, Any]) -> float:
    return float(card["vram_bytes"]) / 1e9


def allowed_cards(v: Mapping[str, Any]) -> list[str]:
    """The cards a workload may use, from its inputs (``v``: the run's values)."""
    pinned = v.get("request.gpu_model")
    exclude = set(v.get("request.gpu_exclude") or ())
    market = v.get("market", "global")
    precision = v.get("precision")
    training = v.get("task") in ("training", "fine-tuning")
    out = []
    for gid, g in catalog("gpus").items():
        if pinned is not None and gid != pinned:
            continue
        # a card sold in the other market only is not offered, unless it is the one the workload pins
        if pinned is None and g.get("sold_global" if market == "global" else "sold_cn") is False:
            continue
        if gid in exclude or g.get("segment") in exclude or g.get("vendor") in exclude:
            continue
        if precision == "bf16" and g.get("supports_bf16") is False:
            continue
        if precision == "fp8" and g.get("supports_fp8") is False:
            continue
        # training in a 16- or 8-bit float format runs on tensor cores
        if training and precision in ("fp16", "bf16", "fp8") and g.get("tensor_cores") is False:
            continue
        if v.get("needs_fp64") and (g.get("segment") == "consumer" or g.get("fp64_tflops") is None):
            continue
        # the guides' per-card floor applies only where the need could not be computed
        if v.get("gpu.floor_binds") is True and g["vram_bytes"] < (v.get("gpu.min_vram_gb") or 0) * GIB:
            continue
        out.append(gid)
    return out


def platforms_for(gid: str, v: Mapping[str, Any]) -> list[str]:
    """The platforms that take card ``gid`` for this workload: its baseboard and power, the airflow its
    cooling needs, the kind of machine the scenario buys, and room for the RAM the workload needs.
    """
    g = catalog("gpus")[gid]
    scenario = v.get("scenario.effective")
    extra = v.get("ram.extra_gb") or 0
    out = []
    for pid, p in catalog("platforms").items():
        if p.get("baseboard") != g.get("baseboard"):
            continue
        if (p.get("max_gpu_watts") or 0) < (g.get("tdp_watts") or 0):
            continue
        if g.get("cooling") == "open-air" and not p.get("open_air"):
            continue
        if g.get("cooling") == "passive" and not p.get("passive_cooling"):
            continue
        if scenario == "personal" and p.get("kind") == "server":
            continue
        if scenario in ("sme", "cluster", "hpc") and p.get("kind") in ("workstation", "desktop"):
            continue
        if extra > 0 and (p.get("max_memory_gb") or 0) < extra + 64:
            continue
        out.append(pid)
    return out


def _room(g: Mapping[str, Any], p: Mapping[str, Any]) -> int:
    """Cards of this kind one platform holds (a PCIe card wider than two slots takes 1.5 or 2 places)."""
    width = g.get("slot_width") or 2
    if g.get("form_factor") == "pcie" and width > 2:
        return int(p["max_gpus"] * 2 // width)
    return int(p["max_gpus"])


def node_counts(gid: str, pid: str) -> list[int]:
    """The counts of card ``gid`` one node of platform ``pid`` is sold with."""
    g, p = catalog("gpus")[gid], catalog("platforms")[pid]
    low = max(int(p.get("min_gpus") or 1), int(g.get("purchase_unit") or 1))
    high = max(_room(g, p), 1 if p["max_gpus"] >= 1 else 0)
    return list(range(low, high + 1))


def fabric_ok(gid: str) -> bool:
    """A card that spans nodes: a data-centre module on an NVLink or Infinity Fabric board whose
    generation has a compute adapter in knowledge/nics.yaml.
    """
    g = catalog("gpus")[gid]
    if g.get("segment") != "datacenter" or g.get("form_factor") not in ("sxm", "oam"):
        return False
    if g.get("interconnect") not in ("nvlink", "infinity-fabric") or not (g.get("fabric_gbps") or 0) > 0:
        return False
    return any(n.get("role") == "compute" and n.get("gbps") == g["fabric_gbps"] for n in catalog("nics").values())


def machines(v: Mapping[str, Any]) -> Iterator[tuple[str, str, int, int]]:
    """(card, platform, GPUs, nodes) the catalog offers this workload, at the pinned count if it pins one.
    Across nodes the count is unbounded; ``nodes=0`` stands for "as many nodes as needed".
    """
    want = v.get("request.gpu_count")
    fixed = want if isinstance(want, int) and not isinstance(want, bool) else None
    per_node_max = int(constant("max_gpus_per_node"))
    for gid in allowed_cards(v):
        g = catalog("gpus")[gid]
        for pid in platforms_for(gid, v):
            p = catalog("platforms")[pid]
            counts = node_counts(gid, pid)
            if fixed is None:
                for n in counts:
                    yield gid, pid, n, 1
                if fabric_ok(gid) and p.get("kind") == "server" and p.get("min_gpus") == per_node_max:
                    yield gid, pid, 0, 0
            elif fixed <= per_node_max:
                if fixed in counts or (fixed == 1 and p.get("min_gpus", 1) <= 1):
                    yield gid, pid, fixed, 1
            elif (
                fabric_ok(gid)
                and p.get("kind") == "server"
                and p.get("min_gpus", 1) >= (g.get("purchase_unit") or 1)
                and fixed % p["max_gpus"] == 0
            ):
                yield gid, pid, fixed, fixed // p["max_gpus"]


def find_fit(v: Mapping[str, Any]) -> Fit | None:
    """A machine that holds the stated need, or None (None also when the run states no need)."""
    if v.get("serving.concurrent_requests"):
        return _serving_fit(v)
    replicated, sharded = v.get("memory.replicated_gb"), v.get("memory.sharded_gb")
    if replicated is None or sharded is None:
        # a need the report does not split: every GPU must hold all of it (the least the search can assume)
        replicated, sharded = v.get("memory.vram_required_gb"), 0.0
        if replicated is None:
            return None
    for gid, pid, n, nodes in machines(v):
        vram = _vram_gb(catalog("gpus")[gid])
        if n == 0:  # as many nodes of 8 as it takes: holds when one GPU holds what it must hold whole
            if vram > replicated:
                per_node = catalog("platforms")[pid]["max_gpus"]
                need = max(1, -(-sharded // (vram - replicated)))
                nodes = int(-(-need // per_node))
                count = nodes * per_node
                return Fit(gid, count, pid, nodes, replicated + sharded / count)
            continue
        per_gpu = replicated + sharded / n
        if per_gpu <= vram:
            return Fit(gid, n, pid, nodes, per_gpu)
    return None


def serving_need_gb(v: Mapping[str, Any], t: int) -> float | None:
    """What one GPU of a replica of ``t`` must hold for one request: its share of the weights and of the
    request's KV cache (KV heads fewer than ``t`` are copied, not split), the activations the report
    states (whole on every GPU: an engine's reserve such as SGLang's is per GPU), the CUDA context, the
    allocator's margin, and the engine's memory outside PyTorch on every GPU (knowledge/serving_engines.yaml:
    vLLM's communication buffers take about 2 GiB on each GPU of a tensor-parallel group).
    """
    weights = v.get("memory.weights_gb")
    kvbpt = v.get("serving.kv_bytes_per_token")
    tokens = v.get("serving.request_tokens")
    if weights is None or kvbpt is None or tokens is None:
        return None
    kv_heads = v.get("model.kv_heads") or 1
    kv_split = t if t <= kv_heads else kv_heads
    kv = kvbpt * tokens / 1e9 / kv_split
    act = v.get("memory.activations_gb") or 0
    working = weights / t + act + kv
    engine = catalog("serving_engines").get(str(v.get("serving.engine")), {})
    outside = float(engine.get("non_torch_tp_gib" if t > 1 else "non_torch_gib") or 0) * GIB / 1e9
    return float(constant("cuda_context_gb")) + outside + (1 + float(constant("allocator_margin"))) * working


def _serving_fit(v: Mapping[str, Any]) -> Fit | None:
    heads = v.get("model.attention_heads")
    kv_heads = v.get("model.kv_heads")
    want = v.get("request.gpu_count")
    fixed = want if isinstance(want, int) and not isinstance(want, bool) else None
    for t in TP_SIZES:
        if heads and heads % t:
            continue
        if kv_heads and kv_heads % t and t % kv_heads:
            continue
        if fixed is not None and t > fixed:
            continue
        need = serving_need_gb(v, t)
        if need is None:
            return None
        for gid in allowed_cards(v):
            g = catalog("gpus")[gid]
            if need > SERVING_SHARE * _vram_gb(g):
                continue
            for pid in platforms_for(gid, v):
                counts = node_counts(gid, pid)
                n = fixed if fixed is not None else max(t, counts[0] if counts else t)
                if fixed is not None and fixed > int(constant("max_gpus_per_node")):
                    continue  # owned GPUs over several nodes: left to the non-serving search
                if n in counts or (n == 1 and counts and counts[0] <= 1):
                    return Fit(gid, n, pid, 1, need)
    return None
