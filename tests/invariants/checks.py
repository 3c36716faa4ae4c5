"""The invariants every recommendation holds, each a named check over one run (or, for quantizing, over
the runs of one workload at each precision).

A check returns the failures it found; each failure has a ``key`` that groups failures of one cause
(the rule that failed, the card that was missed, the attribute that disagrees) and a message that
says what was expected and what came out. The sweep adds the case's workload as YAML.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.format import text as as_text
from engine.lang.expr import Template

from . import brute
from .space import PRECISIONS, Case, catalog

# name -> what it holds, in the order the counts are printed
INVARIANTS: dict[str, str] = {
    "runs": "exit 0, or an input error of gpusizer's own with a help line; never a rule failure or an exception",
    "none-fits-confirmed": "'none fits' only where a search of the catalog finds no card, count and platform that "
    "hold the need the report states (and the need is stated)",
    "params-agree": "model.* agree with inspect-model and knowledge/models.yaml; perf.expert_params is the model's "
    "expert parameters and perf.active_params lies in (0, params]",
    "quantizing-cost": "bf16 -> fp8 -> int4 with all else equal never raises cost.total when both have a machine "
    "(bf16 -> fp8 only where the bf16 card runs fp8)",
    "owned-pin-kept": "GPUs pinned as owned are the machine's GPUs (model and count), cost nothing, and a 'none fits' "
    "for them says so",
    "text-numbers": "every number a warning or note quotes from a conclusion, a catalog item or a computed value is "
    "that value (as the report formats it)",
    "cost-sum": "cost.total is the sum of its parts (GPUs, platforms, CPUs, memory, storage, network)",
    "machine-offered": "the machine is one the catalog sells this workload: an allowed card, a platform that takes it, "
    "a count the platform is sold with; every part of the machine is there",
    "fits-card": "the memory each GPU needs is within the card's memory; counts and totals agree "
    "(count = nodes x per node, total memory = count x card)",
    "numbers-sane": "no conclusion is NaN, infinite or negative; speeds and times are positive",
    "alternatives-labelled": "an alternative equal to the choice is not described as saving or costing more, one "
    "labelled 'the choice' is the choice, and the cheapest fit costs no more than the choice",
    "ram-layout": "the memory layout holds ram.system_gb, at least ram.floor_gb, within the platform's slots and "
    "maximum",
    "currency": "prices are in the market's currency (USD globally, CNY in China)",
}


@dataclass
class Failure:
    invariant: str
    key: str  # groups failures of one cause
    message: str


@dataclass
class Outcome:
    """What one case produced, as the checks and the report need it (picklable)."""

    case: Case
    status: str  # ok | input-error | crash
    error: str = ""
    checked: set[str] = field(default_factory=set)
    failures: list[Failure] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """What the checks share: the rulebase and what inspect-model says of each catalog model."""

    rulebase: Any
    inspected: dict[str, dict[str, Any]]  # model id -> {model.KEY: value}


Check = Callable[[Case, Any, Context], Iterator[Failure]]
Applies = Callable[[Case, Mapping[str, Any]], bool]
CHECKS: dict[str, tuple[Applies, Check]] = {}


def check(name: str, applies: Applies | None = None) -> Callable[[Check], Check]:
    """Register a check; ``applies(case, values)`` says whether it has anything to check in a run."""

    def register(fn: Check) -> Check:
        assert name in INVARIANTS, name
        CHECKS[name] = (applies or (lambda case, v: True), fn)
        return fn

    return register


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1.0)


def has_machine(v: Mapping[str, Any]) -> bool:
    return "gpu.model" in v


def _machine(case: Case, v: Mapping[str, Any]) -> bool:
    return has_machine(v)


def _no_machine(case: Case, v: Mapping[str, Any]) -> bool:
    return not has_machine(v)


# -- none fits ----------------------------------------------------------------------------------------
@check("none-fits-confirmed", _no_machine)
def none_fits_confirmed(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    if has_machine(v):
        return
    need = v.get("memory.vram_required_gb")
    if not (_is_num(need) and need > 0):
        yield Failure("none-fits-confirmed", "no need stated", "no machine, and no memory.vram_required_gb stated")
        return
    fit = brute.find_fit(v)
    if fit is not None:
        serving = bool(v.get("serving.concurrent_requests"))
        if serving:
            stated = (
                f"weights {v.get('memory.weights_gb'):.4g} GB, activations {v.get('memory.activations_gb') or 0:.4g} "
                f"GB, one request of {v.get('serving.request_tokens')} tokens"
            )
        else:
            stated = (
                f"{v.get('memory.replicated_gb'):.4g} GB whole on every GPU + {v.get('memory.sharded_gb'):.4g} GB "
                "split over them"
            )
        yield Failure(
            "none-fits-confirmed",
            _missed_why(fit, v),
            f"the report says none fits ({need:.4g} GB needed: {stated}), but {fit} holds it",
        )


def _missed_why(fit: brute.Fit, v: Mapping[str, Any]) -> str:
    """Where the rules lost the machine the search found: the group a failure belongs to."""
    card = catalog("gpus")[fit.gpu]
    if v.get("serving.concurrent_requests"):
        if fit.gpu not in (v.get("serving.cards") or ()):
            missing = [f for f in ("price", "fp16_tflops", "memory_bandwidth_gbs") if not card.get(f)]
            return f"serving: {fit.gpu} is no serving card (no {', '.join(missing) or '?'})"
        plan = v.get("serving.plan")
        if not isinstance(plan, Mapping):
            return "serving: no serving plan at all"
        per_node = plan.get("per_node") or plan.get("count")
        if not any(per_node in brute.node_counts(plan["gpu"], p) for p in brute.platforms_for(plan["gpu"], v)):
            return f"serving: no {v.get('scenario.effective')} platform takes the plan's {per_node} x {plan['gpu']}"
        if not plan.get("fits"):
            return f"serving: the plan on {plan['gpu']} does not fit"
        return f"serving: the plan ({plan['count']} x {plan['gpu']}) got no machine"
    if fit.gpu in (v.get("gpu.excluded") or ()):
        return f"static: {fit.gpu} excluded by a rule"
    if f"{fit.gpu} on {fit.platform}" in (v.get("gpu.platform_unfit") or ()):
        return f"static: {fit.gpu} unfit for {fit.platform}"
    if fit.platform in (v.get("platform.excluded") or ()):
        return f"static: {fit.platform} excluded"
    return f"static: {fit.gpu} on {fit.platform} not a candidate"


# -- parameters ----------------------------------------------------------------------------------------
PARAM_KEYS = ("model.params", "model.expert_params", "model.embedding_params")


@check("params-agree")
def params_agree(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    want = ctx.inspected[case.model]
    entry = catalog("models")[case.model]
    for key in sorted(want):
        if key in v and _is_num(want[key]) and _is_num(v[key]) and not _close(v[key], want[key]):
            yield Failure("params-agree", key, f"{key} = {v[key]!r} here, {want[key]!r} from inspect-model")
    for key in PARAM_KEYS:
        field_name = key.split(".", 1)[1]
        if field_name in entry and key in want and not _close(entry[field_name], want[key]):
            yield Failure(
                "params-agree",
                f"catalog {key}",
                f"knowledge/models.yaml gives {field_name} {entry[field_name]!r}, inspect-model {want[key]!r}",
            )
    params, experts = want.get("model.params"), want.get("model.expert_params")
    if "perf.expert_params" in v and _is_num(experts) and not _close(v["perf.expert_params"], experts):
        yield Failure(
            "params-agree",
            "perf.expert_params",
            f"perf.expert_params = {v['perf.expert_params']:.6g}, but the model's expert parameters are "
            f"{experts:.6g} (inspect-model model.expert_params)",
        )
    if "perf.active_params" in v and _is_num(params):
        active = v["perf.active_params"]
        e, k = want.get("model.experts") or 1, want.get("model.experts_per_token") or 1
        expected = params - (experts or 0) * (e - k) / e
        if not (0 < active <= params) or not _close(active, expected, 1e-6):
            yield Failure(
                "params-agree",
                "perf.active_params",
                f"perf.active_params = {active:.6g}; the model has {params:.6g} parameters of which "
                f"{experts or 0:.6g} in {e} experts, {k} routed per token: {expected:.6g} active",
            )


# -- owned GPUs --------------------------------------------------------------------------------------------
@check("owned-pin-kept", lambda case, v: case.card is not None)
def owned_pin_kept(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    if case.card is None:
        return
    v = r.values
    n = case.owned_count()
    if has_machine(v):
        if v.get("gpu.model") != case.card or v.get("gpu.count") != n:
            yield Failure(
                "owned-pin-kept",
                "model or count changed",
                f"owned {n} x {case.card}; the machine has {v.get('gpu.count')} x {v.get('gpu.model')}",
            )
        if v.get("gpu.owned") is not True:
            yield Failure("owned-pin-kept", "gpu.owned", f"gpu.owned = {v.get('gpu.owned')!r} for GPUs pinned as owned")
        if v.get("cost.gpus", 0) != 0:
            yield Failure("owned-pin-kept", "owned GPUs billed", f"cost.gpus = {v.get('cost.gpus')} for owned GPUs")
    else:
        name = catalog("gpus")[case.card].get("name", case.card)
        # a warning, or an alert (shown first), that names the owned card says what it lacks
        said = [w for w in (*v.get("alerts", ()), *v.get("warnings", ())) if case.card in w or name in w]
        if not said and "gpu.owned_note" not in v:
            kind = "serving" if v.get("serving.concurrent_requests") else "static"
            yield Failure(
                "owned-pin-kept",
                f"{kind}: none fits without naming the owned GPUs",
                f"none fits on the {n} x {case.card} owned, and no warning or note says what they lack",
            )


# -- numbers quoted in text ----------------------------------------------------------------------------------
_NUMBER = re.compile(r"^-?\d[\d,]*(\.\d+)?(e[+-]?\d+)?$")


def _tolerance(shown: str) -> float:
    """Half a unit of the last digit shown."""
    mant, _, exp = shown.lower().partition("e")
    decimals = len(mant.split(".", 1)[1]) if "." in mant else 0
    return 0.5 * 10.0 ** (-decimals) * (10.0 ** int(exp) if exp else 1.0)


def _agrees(shown: str, value: Any, digits: int | None) -> bool:
    """``shown`` is how the report writes ``value`` (numbers to the shown digits)."""
    if _is_num(value):
        s = shown.strip().replace(",", "")
        if not _NUMBER.match(s):
            return False
        got = float(s)
        tol = _tolerance(s) + 1e-9 * abs(value)
        if digits is not None:
            tol = max(tol, 0.5 * 10.0 ** (-digits))
        return abs(got - value) <= tol
    return shown == as_text(value)


def _unwrap(source: str) -> tuple[str, int | None] | None:
    """``X``, ``text(X)``, ``text(X, d)``, ``round(X, d)``, ``text(round(X, d))``: the dotted name X and
    the decimals a rounding keeps; None for anything computed.
    """
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    digits: int | None = None
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("text", "round"):
        if not node.args:
            return None
        if node.func.id == "round":
            d = node.args[1] if len(node.args) > 1 else None
            digits = d.value if isinstance(d, ast.Constant) and isinstance(d.value, int) else 0
        node = node.args[0]
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts)), digits


def _field(value: Any, path: list[str]) -> Any:
    for p in path:
        if not isinstance(value, Mapping) or p not in value:
            return _MISSING
        value = value[p]
    return value


_MISSING = object()


def named_value(dotted: str, firing: Any, rb: Any, final: Mapping[str, Any]) -> tuple[str, Any]:
    """What a placeholder names, and its value as the report has it: a let (the firing's), a catalog
    item's field (the knowledge file's), or a conclusion or input (its final value, record fields
    included).
    """
    head, *rest = dotted.split(".")
    if head in firing.lets:
        return f"let {head}", _field(firing.lets[head], rest)
    if head in firing.items:
        cat, iid = firing.items[head]
        item = rb.catalogs[cat].items[iid]
        fields = {"id": item.id, "name": item.name, **dict(item.fields)}
        return f"{cat} {iid}", _field(fields, rest)
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        attr = ".".join(parts[:cut])
        if attr in rb.attributes:
            if attr not in final:
                return attr, _MISSING
            return attr, _field(final[attr], parts[cut:])
    return dotted, _MISSING


def _template_of(rb: Any, rule_id: str, attr: str) -> Template | None:
    for c in rb.rules[rule_id].rule.then:
        if c.attribute == attr and isinstance(c.value, Template):
            return c.value
    return None


def _split(template: Template, rendered: str) -> list[str] | None:
    """The rendered text of each placeholder, aligned on the template's literal text."""
    pattern = "".join(re.escape(p) if isinstance(p, str) else "(.*?)" for p in template.parts)
    m = re.fullmatch(pattern, rendered, flags=re.S)
    return list(m.groups()) if m else None


def texts(r: Any) -> Iterator[tuple[str, str, Any]]:
    """(attribute, text, firing) for every warning and every note a template wrote."""
    rb = r.rulebase
    for attr, c in r.conclusions.items():
        a = rb.attributes[attr]
        if attr != "warnings" and not (a.type == "string" and attr.endswith("_note")):
            continue
        for contrib in c.contributions:
            firing = r.firings[contrib.firing]
            value = contrib.value
            for t in value if isinstance(value, list) else [value]:
                if isinstance(t, str):
                    yield attr, t, firing


@check("text-numbers")
def text_numbers(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    rb = r.rulebase
    final = r.values
    for attr, rendered, firing in texts(r):
        template = _template_of(rb, firing.rule, attr)
        if template is None or all(isinstance(p, str) for p in template.parts):
            continue
        pieces = _split(template, rendered)
        if pieces is None:
            yield Failure("text-numbers", f"{firing.rule}: text", f"'{rendered}' does not follow {firing.rule}'s text")
            continue
        exprs = [p for p in template.parts if not isinstance(p, str)]
        for expr, shown in zip(exprs, pieces, strict=True):
            named = _unwrap(expr.source)
            if named is None:
                continue  # a value computed in the text: nothing it names to compare with
            dotted, digits = named
            what, value = named_value(dotted, firing, rb, final)
            if value is _MISSING:
                if what in rb.attributes:
                    yield Failure(
                        "text-numbers",
                        f"{firing.rule}: {dotted}",
                        f"{attr} from {firing.rule} quotes {dotted} as '{shown}', but the report has no {what}",
                    )
                continue
            if not _agrees(shown, value, digits):
                yield Failure(
                    "text-numbers",
                    f"{firing.rule}: {dotted}",
                    f"{attr} from {firing.rule} quotes {dotted} as '{shown}', but {what} is {as_text(value)}: "
                    f"'{rendered[:300]}'",
                )
            if dotted in firing.attrs and firing.attrs[dotted] != final.get(dotted, _MISSING):
                yield Failure(
                    "text-numbers",
                    f"{firing.rule}: stale {dotted}",
                    f"{firing.rule} read {dotted} = {firing.attrs[dotted]!r}; the report's is {final.get(dotted)!r}",
                )


# -- cost ---------------------------------------------------------------------------------------------------
COST_PARTS = ("cost.gpus", "cost.platforms", "cost.cpus", "cost.memory", "cost.storage", "network.cost")


@check("cost-sum", lambda case, v: "cost.total" in v)
def cost_sum(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    if "cost.total" not in v:
        return
    parts = {k: v.get(k) for k in COST_PARTS}
    missing = [k for k, x in parts.items() if not _is_num(x)]
    if missing:
        yield Failure("cost-sum", "part missing", f"cost.total {v['cost.total']} without {', '.join(missing)}")
        return
    total = sum(parts.values())
    if abs(total - v["cost.total"]) > 1:
        yield Failure("cost-sum", "sum", f"cost.total {v['cost.total']} but its parts add up to {total} ({parts})")


# -- the machine --------------------------------------------------------------------------------------------
MACHINE_PARTS = (
    "platform.model",
    "cpu.model",
    "ram.system_gb",
    "storage.drives",
    "network.interconnect",
    "power.supplies",
)


@check("machine-offered", _machine)
def machine_offered(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    if not has_machine(v):
        return
    missing = [k for k in MACHINE_PARTS if k not in v]
    card = catalog("gpus")[v["gpu.model"]]
    if card.get("vendor") == "nvidia" and "software.min_cuda" not in v:
        missing.append("software.min_cuda")
    if missing:
        yield Failure(
            "machine-offered", "part missing: " + ", ".join(missing), f"a machine without {', '.join(missing)}"
        )
    if card.get("vendor") != "nvidia" and not any(card.get("name", "?") in w for w in v.get("warnings", ())):
        yield Failure(
            "machine-offered",
            f"no software stack named: {card.get('vendor')}",
            f"a {card.get('name')} machine with no CUDA version and no warning that names the card's software stack",
        )
    gid, pid, per_node, nodes = v["gpu.model"], v.get("platform.model"), v.get("gpu.per_node"), v.get("nodes", 1)
    offered = {(g, p, n) for g, p, n, _ in brute.machines(v)}
    multinode = {(g, p) for g, p, n, _ in brute.machines(v) if n == 0 or (nodes > 1 and n == v.get("gpu.count"))}
    if (gid, pid, per_node) not in offered and not (nodes > 1 and (gid, pid) in multinode):
        if gid not in brute.allowed_cards(v):
            key = f"card not allowed: {gid}"
        elif pid not in brute.platforms_for(gid, v):
            key = f"platform does not take it: {gid} on {pid}"
        else:
            key = f"count not sold: {gid} on {pid}"
        yield Failure(
            "machine-offered",
            key,
            f"{v.get('gpu.count')} x {gid} ({per_node} per node, {nodes} node(s)) on {pid}: not a machine the catalog "
            f"offers this workload (scenario {v.get('scenario.effective')}, market {v.get('market')})",
        )
    if nodes > 1 and not v.get("serving.concurrent_requests") and (v.get("network.adapters") or 0) < (per_node or 0):
        yield Failure(
            "machine-offered",
            "nodes without fabric",
            f"{nodes} nodes with {v.get('network.adapters')} compute adapters per node for {per_node} GPUs",
        )


@check("fits-card", _machine)
def fits_card(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    if not has_machine(v):
        return
    card = catalog("gpus")[v["gpu.model"]]
    vram = card["vram_bytes"] / 1e9
    per_gpu = v.get("memory.per_gpu_gb")
    if not _is_num(per_gpu):
        yield Failure("fits-card", "no per-GPU need", "a machine without memory.per_gpu_gb")
    elif per_gpu > vram * (1 + 1e-9):
        yield Failure("fits-card", "over the card", f"{per_gpu:.4g} GB per GPU on a {vram:.4g} GB {v['gpu.model']}")
    count, nodes, per_node = v.get("gpu.count"), v.get("nodes"), v.get("gpu.per_node")
    if _is_num(nodes) and _is_num(per_node) and count != nodes * per_node:
        yield Failure("fits-card", "count", f"gpu.count {count} but {nodes} nodes x {per_node} per node")
    total = v.get("gpu.vram_total_gb")
    if _is_num(count) and _is_num(total) and not _close(total, count * vram, 1e-6):
        yield Failure("fits-card", "total", f"gpu.vram_total_gb {total:.6g} but {count} x {vram:.6g} GB")
    if (
        not v.get("serving.concurrent_requests")
        and _is_num(per_gpu)
        and _is_num(count)
        and _is_num(v.get("memory.vram_required_gb"))
        and per_gpu * count < v["memory.vram_required_gb"] * (1 - 1e-9)
    ):
        yield Failure(
            "fits-card",
            "need not covered",
            f"{count} GPUs x {per_gpu:.4g} GB < the {v['memory.vram_required_gb']:.4g} GB needed",
        )


# record fields that are negative by design: an argmax over cost ranks by minus the cost
SIGNED_FIELDS = {("gpu.cheapest", "cheapness"), ("gpu.roomiest", "cheapness"), ("gpu.preferred", "cheapness")}
# what a machine's plan must give: speeds, times and the cache (not parameter counts, which a dense model has 0 of)
POSITIVE = ("perf.output", "perf.ttft", "perf.requests", "perf.decode", "perf.train", "perf.epoch", "perf.active")
POSITIVE_SERVING = ("serving.kv_cache", "serving.max_concurrency", "serving.replicas", "serving.tensor_parallel")


def _numbers(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if _is_num(value):
        yield path, value
    elif isinstance(value, Mapping):
        for k, x in value.items():
            yield from _numbers(x, f"{path}.{k}")
    elif isinstance(value, list):
        for i, x in enumerate(value):
            yield from _numbers(x, f"{path}[{i}]")


@check("numbers-sane")
def numbers_sane(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    machine = has_machine(r.values)
    for attr, c in r.conclusions.items():
        bad = False
        for path, x in _numbers(c.value, attr):
            if isinstance(x, float) and not math.isfinite(x):
                yield Failure("numbers-sane", f"not finite: {attr}", f"{path} = {x}")
                bad = True
            elif x < 0 and (attr, path.rsplit(".", 1)[-1]) not in SIGNED_FIELDS:
                yield Failure("numbers-sane", f"negative: {attr}", f"{path} = {x:.6g}")
                bad = True
        if bad or not machine or not _is_num(c.value):
            continue
        if attr.startswith(POSITIVE) or attr.startswith(POSITIVE_SERVING):
            if not c.value > 0:
                yield Failure("numbers-sane", f"not positive: {attr}", f"{attr} = {c.value!r} on the machine chosen")


ALTERNATIVES = ("gpu.cheapest", "gpu.roomiest", "gpu.preferred")
_DIFFERS = re.compile(r"(saves|costs) ")


@check("alternatives-labelled", lambda case, v: has_machine(v) and not v.get("gpu.owned"))
def alternatives_labelled(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    sel = v.get("gpu.selection")
    if not isinstance(sel, Mapping) or v.get("gpu.owned"):
        return
    for key in ALTERNATIVES:
        alt, note = v.get(key), v.get(f"{key}_note")
        if not isinstance(alt, Mapping) or note is None:
            continue
        same = all(alt.get(f) == sel.get(f) for f in ("gpu", "platform", "count"))
        # the rules say how an alternative differs ("saves ...", "costs ...") or that it is the choice
        if (same and _DIFFERS.match(note)) or (not same and note == "the choice"):
            yield Failure(
                "alternatives-labelled",
                f"{key}: label",
                f"{key} is {alt.get('count')} x {alt.get('gpu')} on {alt.get('platform')}, the choice "
                f"{sel.get('count')} x {sel.get('gpu')} on {sel.get('platform')}; its note says '{note}'",
            )
    cheapest = v.get("gpu.cheapest")
    if (
        isinstance(cheapest, Mapping)
        and sel.get("priced")
        and not cheapest.get("unpriced")
        and cheapest.get("cost", 0) > sel.get("cost", 0) + 0.5
    ):
        yield Failure(
            "alternatives-labelled",
            "cheapest costs more",
            f"the cheapest fit costs {cheapest.get('cost')}, the choice {sel.get('cost')}",
        )


@check("ram-layout", _machine)
def ram_layout(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    if not has_machine(v) or "ram.system_gb" not in v:
        return
    layout, system = v.get("ram.layout"), v["ram.system_gb"]
    p = catalog("platforms").get(v.get("platform.model"), {})
    if _is_num(v.get("ram.floor_gb")) and system < v["ram.floor_gb"]:
        yield Failure("ram-layout", "below floor", f"ram.system_gb {system} < ram.floor_gb {v['ram.floor_gb']}")
    if not isinstance(layout, Mapping):
        return
    if layout.get("total_gb") != system or layout.get("dimm_count", 0) * layout.get("dimm_gb", 0) != system:
        yield Failure("ram-layout", "layout total", f"ram.system_gb {system} but the layout is {layout}")
    if p and layout.get("dimm_count", 0) > p.get("dimm_slots", 0):
        yield Failure(
            "ram-layout",
            f"slots: {v.get('platform.model')}",
            f"{layout.get('dimm_count')} DIMMs on a platform with {p.get('dimm_slots')} slots",
        )
    if p and system > p.get("max_memory_gb", math.inf):
        yield Failure(
            "ram-layout",
            f"maximum: {v.get('platform.model')}",
            f"{system} GB of RAM on a platform that takes {p.get('max_memory_gb')} GB",
        )


@check("currency")
def currency(case: Case, r: Any, ctx: Context) -> Iterator[Failure]:
    v = r.values
    want = catalog("markets")[case.market]["currency"]
    if "price.currency" in v and v["price.currency"] != want:
        yield Failure(
            "currency", f"market {case.market}", f"price.currency {v['price.currency']} in market {case.market}"
        )


# -- across precisions ----------------------------------------------------------------------------------------
def summary(v: Mapping[str, Any]) -> dict[str, Any]:
    """What the cross-case check needs of one run."""
    return {
        "machine": has_machine(v),
        "total": v.get("cost.total"),
        "currency": v.get("price.currency"),
        "gpu": v.get("gpu.model"),
        "count": v.get("gpu.count"),
        "platform": v.get("platform.model"),
        "parts": {k: v.get(k) for k in COST_PARTS if k in v},
        "scenario": v.get("scenario.effective"),
    }


def quantizing(outcomes: Iterable[Outcome]) -> tuple[int, list[tuple[Case, Failure]]]:
    """Compare each workload across precisions: (pairs compared, failures, each on the higher-precision case)."""
    by_rest: dict[tuple[Any, ...], dict[str, Outcome]] = {}
    for o in outcomes:
        c = o.case
        if o.status == "ok":
            rest = (c.model, c.task, c.scenario, c.market, c.gpu, c.card)
            by_rest.setdefault(rest, {})[c.precision] = o
    compared, failures = 0, []
    for group in by_rest.values():
        for i, hi in enumerate(PRECISIONS):
            for lo in PRECISIONS[i + 1 :]:
                a, b = group.get(hi), group.get(lo)
                if a is None or b is None:
                    continue
                sa, sb = a.summary, b.summary
                if not (sa["machine"] and sb["machine"]) or sa["total"] is None or sb["total"] is None:
                    continue
                if sa["currency"] != sb["currency"]:
                    continue
                if lo == "fp8" and catalog("gpus")[sa["gpu"]].get("supports_fp8") is False:
                    continue  # the bf16 card does not run fp8: fp8 may need a dearer one
                compared += 1
                if sb["total"] > sa["total"]:
                    what = "same GPUs" if (sa["gpu"], sa["count"]) == (sb["gpu"], sb["count"]) else "other GPUs"
                    failures.append(
                        (
                            a.case,
                            Failure(
                                "quantizing-cost",
                                f"{hi}->{lo}: {what}",
                                f"{hi}: {sa['count']} x {sa['gpu']} on {sa['platform']} ({sa['scenario']}) = "
                                f"{sa['total']:,} {sa['currency']} {sa['parts']}; {lo}: {sb['count']} x {sb['gpu']} on "
                                f"{sb['platform']} ({sb['scenario']}) = {sb['total']:,} {sb['currency']} {sb['parts']}",
                            ),
                        )
                    )
    return compared, failures


def inspected(rec: Any, model: str) -> dict[str, Any]:
    """What ``gpusizer inspect-model`` reports of a catalog model: its model.* inputs and conclusions."""
    from engine.cli.inspect_model import _importer, report

    obj, spec = _importer(rec.rulebase.inputs.schema)
    workload = {**spec.get("inspect", {}), "name": f"inspect-{model}", obj: {"name": model}}
    doc = report(rec.recommend(workload), obj, model)
    out = {a: x["value"] for a, x in doc["inputs"].items()}
    out.update({a: x["value"] for a, x in doc["conclusions"].items()})
    return out


def run_checks(case: Case, r: Any, ctx: Context) -> tuple[set[str], list[Failure]]:
    checked: set[str] = {"runs"}
    failures: list[Failure] = []
    for name, (applies, fn) in CHECKS.items():
        if not applies(case, r.values):
            continue
        checked.add(name)
        try:
            failures.extend(fn(case, r, ctx))
        except Exception as exc:  # a check that cannot read the run is a finding too, not a crash of the sweep
            failures.append(Failure(name, "check failed", f"{type(exc).__name__}: {exc}"))
    return checked, failures
