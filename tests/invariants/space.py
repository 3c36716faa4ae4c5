"""The workload space the invariant sweep covers, read from the shipped knowledge files.

Dimensions: every catalog model x task (training, LoRA fine-tuning, inference, serving with each
engine of knowledge/serving_engines.yaml) x precision (bf16, fp8, int4) x scenario (personal, sme,
cluster, auto) x market (global, cn) x GPUs (the tool's choice, or one card of each card family
pinned as owned). The full product is the ``full`` tier; ``pairs`` is a covering subset in which
every pair of values of any two dimensions occurs, each row run at every precision so that the
quantization invariant has its triples.

A case is a plain tuple of dimension values; ``workload(case)`` is the workload it runs, the same
mapping the failure messages print as YAML.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
KNOWLEDGE = ROOT / "knowledge"

PRECISIONS = ("bf16", "fp8", "int4")  # in the order quantizing goes
SCENARIOS = ("personal", "sme", "cluster", "auto")
MARKETS = ("global", "cn")
AUTO = "auto"  # the GPU dimension's value for the tool's choice
DIMENSIONS = ("model", "task", "precision", "scenario", "market", "gpu")

# A serving goal every engine and card can be asked for: a chat service of 16 users at once.
SERVING = {"concurrent_requests": 16, "prompt_tokens": 1024, "output_tokens": 256}
# GPUs owned on a PCIe platform, by scenario (a board of SXM or OAM modules is owned whole).
OWNED_PCIE = {"personal": 1, "auto": 2, "sme": 4, "cluster": 8}


@cache
def catalog(name: str) -> dict[str, dict[str, Any]]:
    """A knowledge catalog's items by id, read straight from its file (not through the engine)."""
    doc = yaml.safe_load((KNOWLEDGE / f"{name}.yaml").read_text(encoding="utf-8"))
    return {item["id"]: item for item in doc["items"]}


@cache
def constant(name: str) -> Any:
    """A named constant's value from knowledge/constants.yaml."""
    doc = yaml.safe_load((KNOWLEDGE / "constants.yaml").read_text(encoding="utf-8"))
    return doc["constants"][name]["value"]


def models() -> tuple[str, ...]:
    return tuple(catalog("models"))


def tasks() -> tuple[str, ...]:
    return ("training", "lora", "inference") + tuple(f"serve-{e}" for e in catalog("serving_engines"))


def family_of(card: Mapping[str, Any]) -> str:
    """A card's family: its vendor, architecture, segment and whether it is a PCIe card or a module on a
    board (an SXM/OAM board is sold, cooled and powered differently from a PCIe card of the same chip).
    """
    form = "pcie" if card.get("form_factor") == "pcie" else "board"
    return f"{card.get('vendor')}-{card.get('architecture')}-{card.get('segment')}-{form}"


@cache
def families() -> dict[str, tuple[str, ...]]:
    """Card family -> its cards (sorted ids), every card of knowledge/gpus.yaml in exactly one."""
    out: dict[str, list[str]] = {}
    for gid, card in catalog("gpus").items():
        out.setdefault(family_of(card), []).append(gid)
    return {f: tuple(sorted(ids)) for f, ids in sorted(out.items())}


def gpu_values() -> tuple[str, ...]:
    return (AUTO,) + tuple(families())


def values() -> dict[str, tuple[str, ...]]:
    """Each dimension's values, in order."""
    return {
        "model": models(),
        "task": tasks(),
        "precision": PRECISIONS,
        "scenario": SCENARIOS,
        "market": MARKETS,
        "gpu": gpu_values(),
    }


@dataclass(frozen=True, order=True)
class Case:
    """One workload of the space: a value of each dimension, and the card a pinned family stands for."""

    model: str
    task: str
    precision: str
    scenario: str
    market: str
    gpu: str  # AUTO or a card family
    card: str | None = None  # the family's card pinned as owned

    @property
    def id(self) -> str:
        pin = f"{self.card}x{self.owned_count()}" if self.card else AUTO
        return ".".join((self.model, self.task, self.precision, self.scenario, self.market, pin))

    def dims(self) -> dict[str, str]:
        return {d: getattr(self, d) for d in DIMENSIONS}

    def owned_count(self) -> int:
        """How many of the pinned card are owned: a whole board of modules (its purchase unit), or a
        number of PCIe cards that suits the scenario.
        """
        assert self.card is not None
        card = catalog("gpus")[self.card]
        if card.get("form_factor") != "pcie":
            return int(card.get("purchase_unit") or 1)
        return OWNED_PCIE[self.scenario]

    def workload(self) -> dict[str, Any]:
        """The workload this case runs: what a user would write."""
        w: dict[str, Any] = {"name": self.id}
        if self.task == "training":
            w["task"] = "training"
        elif self.task == "lora":
            w["task"] = "fine-tuning"
        else:
            w["task"] = "inference"
        w["model"] = {"name": self.model}
        w["precision"] = self.precision
        if self.task == "lora":
            w["fine_tuning"] = {"method": "lora"}
        if self.task.startswith("serve-"):
            w["serving"] = {"engine": self.task[len("serve-") :], **SERVING}
        w["scenario"] = self.scenario
        w["market"] = self.market
        if self.card is not None:
            w["gpu"] = {"model": self.card, "count": self.owned_count()}
        return w

    def yaml(self) -> str:
        return yaml.safe_dump(self.workload(), sort_keys=False)


def make_case(dims: Mapping[str, str], turn: int) -> Case:
    """A case from dimension values; a pinned family's card is its ``turn``-th card (round robin), so that
    every card of a family is pinned in some cases.
    """
    card = None
    if dims["gpu"] != AUTO:
        members = families()[dims["gpu"]]
        card = members[turn % len(members)]
    return Case(**{d: dims[d] for d in DIMENSIONS}, card=card)


# -- combinations that cannot be expressed ---------------------------------------------------------
# name -> (why the combination cannot be written as a workload, which cases it is). Each is refused by
# an input check of knowledge/model_inference.yaml with its fix; every other combination (an owned card
# outside its market, say) is run and must get a machine, a "none fits" the catalog confirms, or a
# documented input error. test_sweep.py checks that every untrimmed case of the covering tier loads
# and that each trim is refused.
TRIMS: dict[str, tuple[str, Callable[[Case], bool]]] = {
    "integer-full-training": (
        "full training in an integer format "
        "(check full-training-needs-floating-point-weights: use bf16, fp8 or adapters)",
        lambda case: case.task == "training" and case.precision == "int4",
    ),
    "serving-a-non-generator": (
        "a serving: section on an encoder or vision model "
        "(check serving-needs-a-text-generator: they generate no tokens)",
        lambda case: (
            case.task.startswith("serve-") and catalog("models")[case.model].get("kind", "decoder") != "decoder"
        ),
    ),
}


def trimmed(case: Case) -> str | None:
    """Why ``case`` cannot be expressed (a trim's name), or None."""
    for name, (_reason, applies) in TRIMS.items():
        if applies(case):
            return name
    return None


# -- tiers --------------------------------------------------------------------------------------------
def full() -> Iterator[Case]:
    """The full product, in a fixed order; a pinned family's card turns with the model."""
    vals = values()
    model_index = {m: i for i, m in enumerate(vals["model"])}
    scenario_index = {s: i for i, s in enumerate(vals["scenario"])}
    for combo in itertools.product(*(vals[d] for d in DIMENSIONS)):
        dims = dict(zip(DIMENSIONS, combo, strict=True))
        yield make_case(dims, model_index[dims["model"]] + scenario_index[dims["scenario"]])


def covering_rows(dims: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Rows over ``dims`` in which every pair of values of any two dimensions occurs at least once
    (IPOG: the product of the two largest dimensions, then one dimension at a time, each row given the
    value that covers most of the pairs still missing, then rows added for the pairs left). Deterministic.
    """
    names = sorted(dims, key=lambda d: (-len(dims[d]), d))
    first, second = names[0], names[1]
    rows: list[dict[str, str | None]] = [{first: a, second: b} for a, b in itertools.product(dims[first], dims[second])]
    done = [first, second]
    for d in names[2:]:
        missing = {(p, pv, v) for p in done for pv in dims[p] for v in dims[d]}
        # horizontal: give each existing row the value that covers most missing pairs (ties taken in turn)
        for i, row in enumerate(rows):
            best, gain = dims[d][0], -1
            k = len(dims[d])
            for j in range(k):
                v = dims[d][(i + j) % k]
                g = sum((p, row[p], v) in missing for p in done if row[p] is not None)
                if g > gain:
                    best, gain = v, g
            row[d] = best
            for p in done:
                if row[p] is not None:
                    missing.discard((p, row[p], best))
        # vertical: each pair still missing goes into a row whose slots are free, or a new row
        for p, pv, v in sorted(missing):
            for row in rows:
                if row[d] == v and row[p] is None:
                    row[p] = pv
                    break
                if row[d] is None and row[p] in (None, pv):
                    row[d], row[p] = v, pv
                    break
            else:
                new: dict[str, str | None] = dict.fromkeys(done + [d])
                new[p], new[d] = pv, v
                rows.append(new)
        done.append(d)
    # a free slot takes the values in turn (any value keeps the pairs covered; turns spread the triples)
    return [{d: (row.get(d) or dims[d][i % len(dims[d])]) for d in names} for i, row in enumerate(rows)]


def pairs() -> Iterator[Case]:
    """The covering tier: every pair of dimension values at least once, and for the tool's own choice of
    GPUs every model with every task (scenarios and markets in turn); each row at every precision.
    """
    vals = values()
    rest = {d: vals[d] for d in DIMENSIONS if d != "precision"}
    rows = covering_rows(rest) + [row for _, _, row in _model_task(vals)]
    seen: set[tuple[str, ...]] = set()
    turns: dict[str, int] = {}
    for row in rows:
        key = tuple(row[d] for d in sorted(row))
        if key in seen:
            continue
        seen.add(key)
        # the pinned family's cards take turns over its rows (the same card at every precision)
        turn = turns.get(row["gpu"], 0)
        turns[row["gpu"]] = turn + 1
        for p in PRECISIONS:
            yield make_case({**row, "precision": p}, turn)


def _model_task(vals: Mapping[str, Sequence[str]]) -> Iterator[tuple[int, int, dict[str, str]]]:
    """Every model with every task on the tool's choice of GPUs, scenarios and markets in turn: the model's
    index, the task's and the row (without a precision)."""
    for (i, m), (j, t) in itertools.product(enumerate(vals["model"]), enumerate(vals["task"])):
        scenario = vals["scenario"][(i + j) % len(vals["scenario"])]
        market = vals["market"][(i // len(vals["scenario"]) + j) % len(vals["market"])]
        yield i, j, {"model": m, "task": t, "scenario": scenario, "market": market, "gpu": AUTO}


def _auto_rows(vals: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Every model with every task on the tool's choice of GPUs (precisions in turn), and for each model one
    task at every precision, so that the quantization invariant has a triple of every model."""
    rows = []
    tasks_ = vals["task"]
    for i, j, auto in _model_task(vals):
        if auto["task"] == tasks_[i % len(tasks_)]:  # this model's triple
            rows.extend({**auto, "precision": p} for p in PRECISIONS)
        else:
            rows.append({**auto, "precision": PRECISIONS[(i + j) % len(PRECISIONS)]})
    return rows


def _cases(rows: Iterable[Mapping[str, str]]) -> Iterator[Case]:
    """The rows' cases, each once; a pinned family's cards take turns over its rows."""
    seen: set[tuple[str, ...]] = set()
    turns: dict[str, int] = {}
    for row in rows:
        key = tuple(row[d] for d in DIMENSIONS)
        if key in seen:
            continue
        seen.add(key)
        turn = turns.get(row["gpu"], 0)
        turns[row["gpu"]] = turn + 1
        yield make_case(row, turn)


def cover() -> Iterator[Case]:
    """About a third of ``pairs``: every pair of values of any two dimensions (precision one of them), and
    ``_auto_rows`` (every model with every task on the tool's choice, a triple of precisions of every model).
    ``pairs`` runs each pinned row at every precision too. Both are in the slow tier.
    """
    vals = values()
    yield from _cases([*covering_rows(vals), *_auto_rows(vals)])


def quick() -> Iterator[Case]:
    """The default run's tier, about half of ``cover``: every pair of values of any two dimensions but the
    model (the models take turns over those rows: every card family with every task, precision, scenario and
    market, and every card pinned), and ``_auto_rows``. What it leaves to ``cover`` is each model with each
    pinned family.
    """
    vals = values()
    models = vals["model"]
    pinned = covering_rows({d: vals[d] for d in DIMENSIONS if d != "model"})
    yield from _cases([*({**row, "model": models[i % len(models)]} for i, row in enumerate(pinned)), *_auto_rows(vals)])


TIERS = {"quick": quick, "cover": cover, "pairs": pairs, "full": full}


def parse_only(text: str | None) -> dict[str, set[str]]:
    """``model=a,b task=serve-vllm`` (spaces or semicolons between dimensions) -> the values kept."""
    out: dict[str, set[str]] = {}
    for part in (text or "").replace(";", " ").split():
        key, sep, vals = part.partition("=")
        if not sep or key not in DIMENSIONS + ("card",):
            raise ValueError(f"'{part}' is not DIMENSION=VALUE[,VALUE] (dimensions: {', '.join(DIMENSIONS)}, card)")
        out.setdefault(key, set()).update(v for v in vals.split(",") if v)
    return out


def select(cases: Iterable[Case], only: Mapping[str, set[str]]) -> list[Case]:
    """The cases whose every named dimension has one of the values kept (``card`` matches the pinned card,
    ``id`` a case id).
    """
    out = []
    for c in cases:
        keep = True
        for key, kept in only.items():
            value = c.card if key == "card" else c.id if key == "id" else getattr(c, key)
            if (value or AUTO) not in kept:
                keep = False
                break
        if keep:
            out.append(c)
    return out


def only_from_env() -> dict[str, set[str]]:
    return parse_only(os.environ.get("GPUSIZER_SWEEP"))
