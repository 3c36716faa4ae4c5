"""A seeded fuzz of workloads and rule files: every input must give a result or a clean error.

    python tests/fuzz.py [--seed N] [--seconds S] [--kind workloads|rules|configs|serving|overlays|both|all] [--cases N]

Inputs are generated from the seed alone (case i of seed s is always the same input), so a
failure is reproduced with ``--seed s --start i --cases 1``. They run in a worker subprocess; the
parent watches it, so a crash (the worker dies) or a hang (no answer within ``HANG_S``) is counted
against the case that caused it, and the worker is restarted after it.

* workloads: the examples' YAML, mutated: nasty scalars (NaN, inf, huge and tiny numbers, YAML
  tags that fail to construct, dates, control characters, long text), anchors and aliases, deep
  nesting, duplicate and unknown keys, extra documents, truncation, stray bytes;
* rules: overlays of generated rules over the shipped rulebase, from the rule language's grammar:
  tests of every operator on every kind of attribute with edge operands, long ``in`` lists,
  ``ref`` expressions (divisions by zero included), joins, ``not``, ``any``, ``let`` chains; each
  overlay runs under both backends, and under durable-rules with its joins left in its network;
  all three must agree;
* configs: a model's config.json (every family's published one, and gpusizer's fixtures), mutated
  field by field (nasty JSON values, missing and stray keys, dotted keys, quantization_config of any
  method, bits and group size, text_config and vision_config nesting, broken JSON), read by path or
  through a generated Hugging Face cache (refs/main of any text, size or kind; zero, one or many
  snapshots; a config that is a folder or missing);
* serving: serving sections of every engine, with edge and absurd values for every key and target,
  over catalog models, scenarios and owned GPUs;
* overlays: knowledge overlays of the config.json mapping (locate templates, roots and paths, entries
  with fixed values, expressions and checks, some broken on purpose) read with a config.

A clean error is a gpusizer error (exit 2): an input, rule or output error with a message. Any
other exception is a bug, counted as a crash; so is a worker that dies, and a backend disagreement.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HANG_S = 30.0
MEMORY = 3 << 30

# -- workloads -------------------------------------------------------------------------------------

NASTY = [
    ".nan",
    ".NaN",
    ".inf",
    "-.inf",
    "1e999",
    "-1e999",
    "5e-324",
    "-0.0",
    "0",
    "-1",
    "1" + "0" * 400,
    "!!int ''",
    "!!bool maybe",
    "!!float abc",
    "!!timestamp 2020-13-45",
    "2023-02-30",
    "2024-01-01",
    "!!binary aGVsbG8=",
    "!shell id",
    "!!python/object/apply:os.system ['id']",
    "~",
    "''",
    '"\\e[2J"',
    '"\\x00"',
    "0x1F",
    "0o17",
    "1_000",
    "1:30",
    "yes",
    "on",
    ".5",
    "1e-5",
    "70B",
    "6.7b",
    "125M",
    "nan",
    "[]",
    "{}",
    "[1, [2, [3]]]",
    "{a: {b: {c: 1}}}",
    "*undefined",
    "&x 1",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "'\u202e\u0645'",
    "'💥'",
    "|\n  multi\n  line",
    "!!str 12",
    "true",
    "null",
    "'auto'",
    "3.0",
    "1e308",
    "-1e308",
    "9007199254740993",
    "-9223372036854775809",
]
KEYS = ["name", "task", "precision", "batch_size", "sequence_length", "optimizer", "scenario", "needs_fp64", "bogus"]


def _long_text(rng: random.Random) -> str:
    return "'" + rng.choice("ab<>[]|`*&\\") * rng.choice([100, 4097, 70_000]) + "'"


def mutate_workload(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(14)
        i = rng.randrange(len(lines))
        if kind <= 3 and ":" in lines[i]:  # a nasty value for an existing key
            head = lines[i].split(":", 1)[0]
            value = _long_text(rng) if rng.random() < 0.1 else rng.choice(NASTY)
            lines[i] = f"{head}: {value}"
        elif kind == 4:  # an extra key, maybe a duplicate or unknown one
            lines.insert(rng.randrange(len(lines) + 1), f"{rng.choice(KEYS)}: {rng.choice(NASTY)}")
        elif kind == 5:  # deep nesting
            depth = rng.choice([10, 63, 65, 200, 2000])
            open_, close = rng.choice([("[", "]"), ("{a: ", "}")])
            lines.append(f"gpu: {open_ * depth}1{close * depth}")
        elif kind == 6:  # alias expansion
            lines.append("gpu:\n  prefer: &a [x, x, x, x, x, x, x, x, x, x]")
            for j in range(rng.randint(1, 7)):
                lines.append(f"  x{j}: &a{j} [{', '.join(['*a' if j == 0 else f'*a{j - 1}'] * 10)}]")
        elif kind == 7:  # a control character or a stray byte
            pos = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:pos] + rng.choice(["\x01", "\x1b", "\x7f", "\x85", "\ufffe", "\t"]) + lines[i][pos:]
        elif kind == 8:  # truncated
            cut = "\n".join(lines)
            return cut[: rng.randrange(len(cut) + 1)].encode()
        elif kind == 9:  # a second document
            lines.insert(rng.randrange(len(lines) + 1), "---")
        elif kind == 10:  # a merge key
            lines.append("model:\n  <<: " + rng.choice(["{name: gpt2}", "*m", "[{layers: 2}, {layers: 3}]", "1"]))
        elif kind == 11:  # a recursive alias
            lines.append(f"{rng.choice(KEYS)}: &r [*r]")
        elif kind == 12:  # tab indentation
            lines[i] = "\t" + lines[i]
        else:  # bytes flipped
            raw = bytearray("\n".join(lines).encode())
            for _ in range(rng.randint(1, 4)):
                if raw:
                    raw[rng.randrange(len(raw))] = rng.randrange(256)
            return bytes(raw)
    return ("\n".join(lines) + "\n").encode()


def workload_case(seed: int, i: int) -> bytes:
    rng = random.Random(f"w{seed}:{i}")
    examples = sorted((ROOT / "examples").glob("*.yaml"))
    return mutate_workload(rng, rng.choice(examples).read_text(encoding="utf-8"))


# -- rules -----------------------------------------------------------------------------------------

NUMBERS = [0, 1, -1, 2, 0.5, 1e-05, 5e-324, 1e308, -1e308, 2**53 + 1, 2**70, 7e9, 80, 4096, 1.5e-323]
TEXTS = ["inference", "training", "fp16", "sme", "auto", "", "x" * 5000, "h100-sxm-80gb", "☃", "a'b\"c"]
ATTRIBUTES_FILE = """attributes:
  fuzz.max:
    type: number
    combine: max
    description: A fuzzed number.
  fuzz.sum:
    type: number
    combine: sum
    description: A fuzzed total.
  fuzz.notes:
    type: list
    items: string
    combine: union
    description: Fuzzed notes.
  fuzz.label:
    type: string
    description: A fuzzed label.
"""
FUNCS = ["ceil", "floor", "round", "abs", "min", "max", "log2", "sqrt", "next_pow2", "len", "text", "sum"]


class RuleGen:
    def __init__(self, rng: random.Random, names: dict[str, list[str]], catalogs: dict[str, list[tuple[str, str]]]):
        self.rng = rng
        self.names = names
        self.catalogs = catalogs
        self.alias_catalog: dict[str, str] = {}
        self.rule_catalogs: list[str] = []  # the catalogs the rule being made joins, in order

    def literal(self, kind: str | None = None):
        r = self.rng
        kind = kind or r.choice(["number", "text", "bool"])
        if kind == "number":
            return r.choice(NUMBERS)
        if kind == "text":
            return r.choice(TEXTS)
        if kind == "bool":
            return r.choice([True, False])
        return None

    def expr(self, depth: int = 0, aliases: tuple[str, ...] = ()) -> str:
        r = self.rng
        if depth > 4 or r.random() < 0.3:
            pick = r.randrange(5)
            if pick == 0:
                return repr(r.choice(NUMBERS))
            if pick == 1 and aliases:
                alias = r.choice(aliases)
                return f"{alias}.{r.choice(self.catalogs[self.alias_catalog[alias]])[0]}"
            if pick == 2:
                return r.choice(self.names["number"])
            if pick == 3:
                return repr(r.choice(TEXTS[:6]))
            return r.choice(self.names["any"])
        kind = r.randrange(7)
        a, b = self.expr(depth + 1, aliases), self.expr(depth + 1, aliases)
        if kind <= 2:
            return f"({a} {r.choice(['+', '-', '*', '/', '//', '%', '**'])} {b})"
        if kind == 3:
            return f"{r.choice(FUNCS)}({a})" if r.random() < 0.7 else f"{r.choice(['min', 'max'])}({a}, {b})"
        if kind == 4:
            return f"({a} if {b} {r.choice(['<', '==', '!=', '>='])} {a} else {b})"
        if kind == 5:
            return f"[{a}, {b}]" if r.random() < 0.5 else f"({a} in [{b}, {a}])"
        if depth == 0 and r.random() < 0.3:  # long chains of one operator (at the top only: sizes stay bounded)
            leaf = r.choice([repr(r.choice(NUMBERS)), r.choice(self.names["number"])])
            return r.choice(["+", " or ", " and ", " < "]).join([leaf] * r.choice([50, 150, 2000]))
        return f"({a} + {b})"

    def test(self, kind: str | None, is_list: bool = False) -> object:
        r = self.rng
        if is_list:
            op = r.choice(["contains", "not_contains", "empty", "exists"])
            if op in ("empty", "exists"):
                return {op: r.choice([True, False])}
            return {op: {"ref": self.expr(3)} if r.random() < 0.2 else self.literal("text")}
        ops = ["eq", "ne", "in", "not_in", "exists", "ref"] + (
            ["gt", "gte", "lt", "lte"] * 2 if kind == "number" else []
        )
        if r.random() < 0.05:  # now and then an operator that does not fit the attribute
            ops += ["contains", "empty", "gt"]
        op = r.choice(ops)
        if op == "ref":
            return {r.choice(["gt", "eq", "lte", "ne"] if kind == "number" else ["eq", "ne"]): {"ref": self.expr()}}
        if op in ("in", "not_in"):
            n = r.choice([1, 3, 32, 33, 200, 600])
            mixed = r.random() < 0.2
            return {op: [self.literal(r.choice(["number", "text", "bool"]) if mixed else kind) for _ in range(n)]}
        if op in ("exists", "empty"):
            return {op: r.choice([True, False])}
        if op == "contains":
            return {op: self.literal("text")}
        if op == "eq" and r.random() < 0.3:
            return self.literal(kind)
        return {op: self.literal(kind if r.random() < 0.9 else None)}

    def condition(self, aliases: list[str], depth: int = 0) -> dict:
        r = self.rng
        pick = r.randrange(10)
        if pick <= 4:
            kind = r.choice(["number", "text", "bool", "list", "any"])
            name = r.choice(self.names[kind])
            if kind == "any":
                return {name: self.test(None, name in self.names["list"])}
            return {name: self.test("text" if kind == "list" else kind, kind == "list")}
        if pick <= 6:
            # a catalog joined already, now and then: one item may bind two aliases, and a negated
            # join must see the item a join bound (durable-rules got both wrong once)
            joined = sorted(set(self.rule_catalogs))
            catalog = r.choice(joined) if joined and r.random() < 0.3 else r.choice(sorted(self.catalogs))
            self.rule_catalogs.append(catalog)
            alias = f"a{len(self.alias_catalog)}"
            self.alias_catalog[alias] = catalog
            aliases.append(alias)
            where = {}
            for _ in range(r.randint(0, 3)):
                field, ftype = r.choice(self.catalogs[catalog])
                kind = {"integer": "number", "boolean": "bool", "string": "text"}.get(ftype, "number")
                pick = r.random()
                if pick < 0.3:
                    where[field] = {r.choice(["gt", "lte", "eq"]): {"ref": self.expr(2, tuple(aliases[:-1]))}}
                elif pick < 0.45 and self.names[kind]:
                    # a field equal (or not) to an attribute of its kind, which durable-rules joins in its network,
                    # beside the other tests (after an 'in' list it passed items that failed such a test once)
                    where[field] = {r.choice(["eq", "ne"]): {"ref": r.choice(self.names[kind])}}
                else:
                    where[field] = self.test(kind)
            return {"item": catalog, "as": alias, "where": where}
        if pick == 7 and depth == 0:
            inner = self.condition([], depth + 1)
            return {"not": inner}
        if pick == 8 and depth == 0:
            return {"any": [[self.condition([], 1)] for _ in range(r.randint(2, 3))]}
        return {r.choice(self.names["number"]): {"gt": {"ref": self.expr(0, tuple(aliases))}}}

    def rule(self, rid: str) -> dict:
        r = self.rng
        self.rule_catalogs = []
        aliases: list[str] = []
        when = [self.condition(aliases) for _ in range(r.randint(0, 5))]
        then: dict = {}
        lets: dict = {}
        if r.random() < 0.3:
            for j in range(r.randint(1, 30)):
                lets[f"v{j}"] = self.expr(2, tuple(aliases)) if j == 0 else f"v{j - 1} + v{j - 1}"
        for attr in r.sample(["fuzz.max", "fuzz.sum", "fuzz.notes", "fuzz.label"], r.randint(1, 2)):
            if attr in ("fuzz.notes", "fuzz.label"):
                then[attr] = r.choice(["note {batch_size}", "{" + self.expr(3, tuple(aliases)) + "}", "plain", "{{x}}"])
            else:
                then[attr] = f"v{len(lets) - 1}" if lets and r.random() < 0.5 else self.expr(1, tuple(aliases))
        out = {
            "id": rid,
            "summary": "A fuzzed rule.",
            "when": when,
            "then": then,
            "source": {"doc": "fuzz", "note": "generated"},
        }
        if lets:
            out["let"] = lets
        return out


def rule_case(
    seed: int, i: int, names: dict[str, list[str]], catalogs: dict[str, list[tuple[str, str]]]
) -> dict[str, str]:
    """The files of one overlay: its attributes and 1-4 rules (rarely 300), some of them broken on purpose."""
    import yaml

    rng = random.Random(f"r{seed}:{i}")
    gen = RuleGen(rng, names, catalogs)
    count = 300 if rng.random() < 0.02 else rng.randint(1, 4)
    files = {"_attributes.yaml": ATTRIBUTES_FILE}
    for j in range(count):
        text = yaml.safe_dump(gen.rule(f"fz-{j}"), sort_keys=False, allow_unicode=True, width=10_000)
        if rng.random() < 0.1:
            text = mutate_workload(rng, text).decode("utf-8", "replace")
        files[f"fz/fz-{j}.yaml"] = text
    return files


# -- configs, the Hugging Face cache, serving sections, overlays ------------------------------------------

JSON_NASTY: list[object] = [
    None,
    0,
    -1,
    1,
    7,
    3.5,
    -0.0,
    1e308,
    -1e308,
    5e-324,
    2**63,
    10**30,
    True,
    False,
    "",
    "32",
    "auto",
    "x" * 300,
    [],
    [0, 1],
    [1, 1],
    [-1],
    {},
    {"a": 1},
]
QUANT_METHODS = [
    "gptq",
    "awq",
    "bitsandbytes",
    "fp8",
    "fbgemm_fp8",
    "mxfp4",
    "modelopt",
    "compressed-tensors",
    "hqq",
    "aqlm",
    "torchao",
    "",
    None,
    7,
]


def _configs() -> list[Path]:
    return sorted((ROOT / "examples" / "configs").glob("*.json")) + sorted(
        (ROOT / "tests" / "fixtures").glob("*-configs/*.json")
    )


def _quantization(rng: random.Random) -> dict:
    q: dict = {"quant_method": rng.choice(QUANT_METHODS)}
    for key, options in (
        ("bits", [2, 3, 4, 5, 8, 16, 0, -4, "4", 4.0, None]),
        ("group_size", [128, 64, 32, -1, 0, 100, -7, "128", None]),
        ("load_in_4bit", [True, False, "yes", None]),
        ("load_in_8bit", [True, False, None]),
        ("bnb_4bit_use_double_quant", [True, False]),
        ("quant_algo", ["FP8", "NVFP4", "INT4_AWQ", None]),
        ("w_bit", [4, 3, None]),
        ("q_group_size", [128, 64, None]),
    ):
        if rng.random() < 0.4:
            q[key] = rng.choice(options)
    return q


def mutate_config(rng: random.Random, cfg: dict) -> str:
    """A config.json's text after one to four mutations."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(10)
        keys = [k for k in cfg if isinstance(k, str)]
        if kind <= 2 and keys:  # a nasty value for an existing key
            cfg[rng.choice(keys)] = rng.choice(JSON_NASTY)
        elif kind == 3 and keys:  # a key left out
            cfg.pop(rng.choice(keys))
        elif kind == 4:  # a quantization_config, maybe in the wrong place or as a dotted key
            where = rng.random()
            q = _quantization(rng)
            if where < 0.6:
                cfg["quantization_config"] = q
            elif where < 0.8:
                cfg["quantization_config.quant_method"] = q["quant_method"]
            else:
                cfg.setdefault("text_config", {})["quantization_config"] = q
        elif kind == 5:  # nested sub-configs
            cfg[rng.choice(["text_config", "vision_config"])] = {
                k: rng.choice(JSON_NASTY + [1152, 27, 14, 896]) for k in rng.sample(keys, min(len(keys), 5))
            } | {"num_hidden_layers": rng.choice([-27, 0, 27, "27", None])}
        elif kind == 6:  # another model_type
            cfg["model_type"] = rng.choice(
                [
                    "llama",
                    "qwen2_moe",
                    "qwen3_moe",
                    "gemma3",
                    "gemma3_text",
                    "gpt_oss",
                    "deepseek_v3",
                    "falcon",
                    "unknown",
                    3,
                    None,
                ]
            )
        elif kind == 7:  # MoE layer lists
            cfg["mlp_only_layers"] = rng.choice([[0, 1], [1, 1], [-1], [999], "all", [0.5], []])
            cfg["decoder_sparse_step"] = rng.choice([1, 2, 0, -1, 1.5])
        elif kind == 8:  # heads that do not divide
            cfg["num_key_value_heads"] = rng.choice([0, 1, 3, 7, 64, -8])
        else:  # a stray key with a dot, a huge list, deep nesting
            cfg[rng.choice(["a.b", "hidden_size.x", "extra"])] = rng.choice(
                [1, [0] * rng.choice([10, 2000]), {"a": {"b": {"c": 1}}}]
            )
    text = json.dumps(cfg, indent=rng.choice([None, 2]))
    if rng.random() < 0.08:  # broken JSON: truncated, NaN, a duplicate key, deep nesting
        text = rng.choice(
            [
                text[: rng.randrange(len(text) + 1)],
                text.replace("1", "NaN", 1),
                text.replace("{", '{"model_type": "llama", ', 1),
                "[" * 5000 + "]" * 5000,
            ]
        )
    return text


def config_case(seed: int, i: int) -> dict[str, bytes | str | None]:
    """The files of one case under a temporary folder: a workload, its config.json, maybe a cache
    (a value None is a named pipe; a key ending in / is a folder; '->' marks a link)."""
    rng = random.Random(f"c{seed}:{i}")
    source = rng.choice(_configs())
    text = mutate_config(rng, json.loads(source.read_text(encoding="utf-8")))
    task = rng.choice(["inference", "inference", "training", "fine-tuning"])
    extra = rng.choice(["", "precision: fp16\n", "batch_size: 4\n", "model_quantization: int4\n"])
    extra = extra.replace("model_quantization: int4\n", "")
    files: dict[str, bytes | str | None] = {}
    if rng.random() < 0.5:
        files["config.json"] = text
        model = "  config: config.json\n"
    else:
        repo = "hub/models--org--model"
        rev = "0123456789abcdef0123456789abcdef01234567"
        layout = rng.randrange(8)
        ref = rng.choice([rev, rev + "\n", "../../../etc", "", "x" * 5000, "main", "\u202e" + rev, rev + " " + rev])
        if layout <= 3:
            files[f"{repo}/refs/main"] = ref
            files[f"{repo}/snapshots/{rev}/config.json"] = text
        elif layout == 4:  # no refs: one or two snapshots
            files[f"{repo}/snapshots/{rev}/config.json"] = text
            if rng.random() < 0.5:
                files[f"{repo}/snapshots/other/config.json"] = text
        elif layout == 5:  # refs/main a named pipe, a folder or a link
            files[f"{repo}/refs/main"] = rng.choice([None, "/", "->/dev/null", "->/proc/self/environ"])
            files[f"{repo}/snapshots/{rev}/config.json"] = text
        elif layout == 6:  # the config a folder, or missing
            files[f"{repo}/refs/main"] = rev
            files[f"{repo}/snapshots/{rev}/config.json/"] = ""
        else:  # nothing at all
            files["hub/"] = ""
        name = rng.choice(["org/model", "org/model", "org/other", "../model", "org/" + "a" * 200, "org/model/x"])
        model = f"  hf: {name}\n"
    files["w.yaml"] = f"name: fuzz\ntask: {task}\nmodel:\n{model}{extra}"
    return files


# each key's values: those the schema takes (edges and absurd ones among them), then a few it refuses
SERVING_VALUES: dict[str, tuple[list[object], list[object]]] = {
    "concurrent_requests": ([1, 2, 32, 200, 5000, 10**8], [0, -1, 1.5, "auto"]),
    "prompt_tokens": ([1, 128, 2000, 32768, 10**6], [0, "auto"]),
    "output_tokens": ([1, 100, 4096, 10**6], [0]),
    "engine": (["vllm", "sglang", "tgi", "trtllm", "transformers"], ["other"]),
    "kv_cache_dtype": (["auto", "fp8"], ["int4"]),
    "gpu_memory_utilization": (["auto", 1e-9, 0.05, 0.5, 0.9, 1], [1.5, 0]),
    "max_num_batched_tokens": (["auto", 1, 16, 256, 2048, 10**8], [0]),
    "max_num_seqs": (["auto", 1, 8, 256, 10**8], [0]),
    "max_model_len": (["auto", 1, 2048, 10**8], [0]),
    "block_size": (["auto", 1, 16, 4096], [5000]),
    "enforce_eager": ([True, False], ["yes"]),
    "prefix_cache_hit_rate": ([0, 0.5, 0.999999], [1, -0.1]),
}
TARGETS: dict[str, list[object]] = {
    "output_tokens_per_s_per_request": [1e-300, 0.1, 20, 1e6],
    "time_to_first_token_s": [1e-300, 0.001, 2, 1e6],
    "requests_per_s": [1e-300, 1, 1e6],
}
MODELS = [
    "llama-2-7b",
    "llama-3-70b",
    "qwen2.5-7b",
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "gpt-oss-20b",
    "gpt2",
    "deepseek-v3",
    "gemma-3-27b",
    "bert-base-uncased",
    "resnet-50",
]


def serving_case(seed: int, i: int) -> bytes:
    """A workload with a serving section of edge and absurd values."""
    import yaml

    rng = random.Random(f"s{seed}:{i}")
    serving: dict = {}
    for k, (good, bad) in SERVING_VALUES.items():
        if k in ("concurrent_requests", "prompt_tokens", "output_tokens") or rng.random() < 0.3:
            serving[k] = rng.choice(bad if rng.random() < 0.05 else good)
    if rng.random() < 0.6:
        serving["targets"] = {k: rng.choice(v) for k, v in TARGETS.items() if rng.random() < 0.6}
    doc: dict = {
        "name": "fuzz",
        "task": rng.choice(["inference"] * 15 + ["training"]),
        "model": {"name": rng.choice(MODELS)},
        "serving": serving,
    }
    if rng.random() < 0.4:
        doc["scenario"] = rng.choice(["personal", "sme", "cluster", "hpc", "auto"])
    if rng.random() < 0.3:
        doc["gpu"] = rng.choice(
            [
                {"model": "l40s-48gb", "count": rng.choice([1, 2, 3, 8, 64])},
                {"exclude": ["nvidia"]},
                {"prefer": ["consumer"]},
                {"count": 8},
            ]
        )
    if rng.random() < 0.3:
        doc["precision"] = rng.choice(["fp16", "bf16", "fp8", "int4", "gptq-int3", "awq-int4-g64", "mxfp4"])
    if rng.random() < 0.2:
        doc["market"] = "cn"
    return yaml.safe_dump(doc, sort_keys=False).encode()


def overlay_case(seed: int, i: int) -> dict[str, str]:
    """A knowledge overlay of the config.json mapping (files of site/), a config and a workload."""
    import yaml

    rng = random.Random(f"o{seed}:{i}")
    mapping: dict = {"import": "hf-config", "description": "A site's families.", "select": "model_type"}
    if rng.random() < 0.5:
        mapping["locate"] = {
            "pattern": rng.choice(["{org}/{name}", "{org}-{name}", "(a+)+$", "{org}{name}", "x/{name}", "{home}/{x}"]),
            "roots": rng.choice([["{env.SITE_CACHE}"], ["{home}"], ["{nosuch}"], ["/"]]),
            "file": rng.choice(
                [
                    "models--{org}--{name}.json",
                    "../../etc/passwd",
                    "{revision}/x.json",
                    "/abs",
                    "a//b",
                    "{org}/{name}.json",
                ]
            ),
        }
        if rng.random() < 0.3:
            mapping["locate"]["revision"] = rng.choice(["{org}/ref", "../ref", "{nosuch}"])
    entry: dict = {
        "id": "site-entry",
        "name": "A site entry",
        "match": [rng.choice(["site_type", "llama"])],
        "source": {"doc": "site"},
    }
    if rng.random() < 0.7:
        entry["extends"] = rng.choice(["llama", "qwen3-moe", "gemma3", "hf-common", "nope"])
    if rng.random() < 0.4:
        entry["fixed"] = {rng.choice(["mlp", "layers", "family", "nope"]): rng.choice(["swiglu", "bogus", 3, -1])}
    if rng.random() < 0.4:
        entry["set"] = {
            rng.choice(["layers", "hidden_size", "params"]): rng.choice(
                ["num_hidden_layers", "num_hidden_layers * 2", "1 / 0", "missing_key", "(", "num_hidden_layers ** 999"]
            )
        }
    if rng.random() < 0.4:
        entry["checks"] = [
            rng.choice(
                [
                    {"id": "c1", "key": "num_hidden_layers", "schema": {"type": "integer", "minimum": 1}, "help": "h"},
                    {
                        "id": "c2",
                        "key": "hidden_size",
                        "when": "hidden_size % 7 == 0",
                        "message": "m {hidden_size}",
                        "help": "h",
                    },
                    {"id": "c3", "key": "x", "when": "1 / 0", "message": "m", "help": "h"},
                    {"id": "c4", "key": "x", "help": "h"},
                    {"id": "c5", "key": "x", "when": "(", "message": "m", "help": "h"},
                ]
            )
        ]
    if rng.random() < 0.3:
        entry["within"] = "text_config"
        entry["outer"] = rng.choice([["quantization_config"], [], ["bad key"]])
    mapping["entries"] = [entry]
    cfg = json.loads(rng.choice(_configs()).read_text(encoding="utf-8"))
    if rng.random() < 0.6:
        cfg["model_type"] = "site_type"
    files = {
        "site/families.yaml": yaml.safe_dump(mapping, sort_keys=False),
        "config.json": mutate_config(rng, cfg) if rng.random() < 0.3 else json.dumps(cfg),
        "w.yaml": "name: fuzz\ntask: inference\nmodel:\n  "
        + rng.choice(["config: config.json", "hf: org/model", "hf: " + "a" * 41 + "!/b"])
        + "\n",
    }
    return files


def _lay_out(root: Path, files: dict) -> None:
    """Write a case's files: text, a named pipe (None), a folder (a name ending in /), a link ('->target')."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        elif content is None:
            os.mkfifo(path)
        elif isinstance(content, str) and content.startswith("->"):
            path.symlink_to(content[2:])
        elif content == "/":
            path.mkdir()
        else:
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))


def run_document(rec, tmp: Path, files: dict) -> str:
    """A workload and its files (a config, a cache) under tmp: a result or a clean error."""
    import shutil

    case = tmp / "case"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir()
    _lay_out(case, files)
    os.environ["HF_HUB_CACHE"] = str(case / "hub")
    os.environ["SITE_CACHE"] = str(case / "cache")
    try:
        rec.recommend(case / "w.yaml")
        return "ok"
    except Exception as exc:
        return "clean" if _clean(exc) else f"bug: {type(exc).__name__}: {exc}"[:500]


def run_overlay(seed: int, i: int, tmp: Path, shipped_knowledge: Path) -> str:
    import shutil

    from engine import Recommender

    case = tmp / "case"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir()
    _lay_out(case, overlay_case(seed, i))
    os.environ["SITE_CACHE"] = str(case / "cache")
    try:
        rec = Recommender(knowledge=[shipped_knowledge, case / "site"])
    except Exception as exc:
        return "clean" if _clean(exc) else f"bug: load: {type(exc).__name__}: {exc}"[:500]
    with rec:
        try:
            rec.recommend(case / "w.yaml")
            return "ok"
        except Exception as exc:
            return "clean" if _clean(exc) else f"bug: {type(exc).__name__}: {exc}"[:500]


# -- the worker --------------------------------------------------------------------------------------

FIXED_WORKLOADS = [
    "examples/llama2-70b-chat.yaml",
    "examples/gpt2-finetune-personal.yaml",
    "examples/hpc-fp64-bert.yaml",
]


def _names(rb) -> tuple[dict[str, list[str]], dict[str, list[tuple[str, str]]]]:
    names: dict[str, list[str]] = {"number": [], "text": [], "bool": [], "list": [], "any": []}
    for a in rb.attributes.values():
        if a.type in ("number", "integer"):
            names["number"].append(a.name)
        elif a.type == "string":
            names["text"].append(a.name)
        elif a.type == "boolean":
            names["bool"].append(a.name)
        elif a.type == "list":
            names["list"].append(a.name)
        names["any"].append(a.name)
    catalogs = {
        c: [("id", "string"), *((f.name, f.type) for f in cat.fields.values())] for c, cat in rb.catalogs.items()
    }
    return names, catalogs


def _clean(exc: BaseException) -> bool:
    from engine.errors import GpusizerError

    return isinstance(exc, GpusizerError) and exc.exit_code in (2, 73) and bool(exc.render().strip())


def run_workload(rec, path: Path, rng: random.Random) -> str:
    from engine.report.render import render

    try:
        result = rec.recommend(path)
        if rng.random() < 0.3:
            for fmt in ("json", "text", "markdown", "html"):
                render(result, fmt, layout="python")
        return "ok"
    except Exception as exc:
        if _clean(exc):
            return "clean"
        return f"bug: {type(exc).__name__}: {exc}"[:500]


def run_rules(seed: int, i: int, tmp: Path, shipped, names, catalogs) -> str:
    from engine import Recommender
    from engine.backends import get_backend
    from engine.backends.durable import DurableBackend
    from engine.plan.rulebase import load_rulebase
    from engine.report.document import document

    site = tmp / f"site-{i}"
    for name, text in rule_case(seed, i, names, catalogs).items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text, encoding="utf-8")
    try:
        rb = load_rulebase([shipped, site])
    except Exception as exc:
        return "clean" if _clean(exc) else f"bug: load: {type(exc).__name__}: {exc}"[:500]
    answers: dict[str, list[str]] = {}
    for backend in ("durable", "python", "durable-network-joins"):
        try:
            engine = DurableBackend(network_joins=True) if backend == "durable-network-joins" else get_backend(backend)
            rec = Recommender(rulebase=rb, backend=engine)
        except Exception as exc:
            return f"bug: compile ({backend}): {type(exc).__name__}: {exc}"[:500]
        with rec:
            for w in FIXED_WORKLOADS:
                try:
                    answers.setdefault(backend, []).append(
                        json.dumps(document(rec.recommend(ROOT / w)), sort_keys=True)
                    )
                except Exception as exc:
                    if not _clean(exc):
                        return f"bug: {backend} on {w}: {type(exc).__name__}: {exc}"[:500]
                    answers.setdefault(backend, []).append(exc.render())
    if answers["durable"] != answers["python"]:
        return "mismatch: the durable and python backends disagree"
    if answers["durable"] != answers["durable-network-joins"]:
        return "mismatch: durable-rules with joins in Python and with joins in its network disagree"
    return "ok" if all(not a.startswith(("/", "site")) for a in answers["durable"]) else "clean"


def worker(kind: str, seed: int, start: int) -> None:  # pragma: no cover - runs in the subprocess
    if "asan" not in os.environ.get("LD_PRELOAD", ""):  # AddressSanitizer maps terabytes of shadow memory
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    from engine import Recommender
    from engine.load.resources import data_dir
    from engine.plan.rulebase import load_rulebase

    shipped = data_dir("rules")
    rb = load_rulebase()
    names, catalogs = _names(rb)
    rec = Recommender(rulebase=rb) if kind in ("workloads", "configs", "serving") else None
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(start, 10**9):
            print(f"start {i}", flush=True)
            if kind == "workloads":
                path = Path(tmp) / f"w{i}.yaml"
                path.write_bytes(workload_case(seed, i))
                outcome = run_workload(rec, path, random.Random(i))
                path.unlink()
            elif kind == "configs":
                outcome = run_document(rec, Path(tmp), config_case(seed, i))
            elif kind == "serving":
                outcome = run_document(rec, Path(tmp), {"w.yaml": serving_case(seed, i)})
            elif kind == "overlays":
                outcome = run_overlay(seed, i, Path(tmp), data_dir("knowledge"))
            else:
                outcome = run_rules(seed, i, Path(tmp), shipped, names, catalogs)
            print(f"done {i} {json.dumps(outcome)}", flush=True)


# -- the parent -------------------------------------------------------------------------------------


def fuzz(kind: str, seed: int, seconds: float, cases: int | None = None, start: int = 0) -> dict:
    """Run cases until the time or the case count is spent; counts of every outcome, and the failures."""
    stats = {"kind": kind, "seed": seed, "tried": 0, "ok": 0, "clean": 0, "crashes": 0, "hangs": 0, "mismatches": 0}
    failures: list[str] = []
    deadline = time.monotonic() + seconds
    i = start
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    while time.monotonic() < deadline and (cases is None or stats["tried"] < cases):
        proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, "--seed", str(seed), "--start", str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        current = None
        started = time.monotonic()
        while True:
            if cases is not None and stats["tried"] >= cases:
                break
            if time.monotonic() >= deadline and current is None:
                break
            wait = HANG_S - (time.monotonic() - started) if current is not None else 60.0
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, wait))
            if not ready:
                if current is not None:
                    stats["hangs"] += 1
                    stats["tried"] += 1
                    failures.append(f"case {current}: hang (no answer in {HANG_S:.0f} s)")
                    i = current + 1
                break
            line = proc.stdout.readline()
            if not line:  # the worker died
                if current is not None:
                    stats["crashes"] += 1
                    stats["tried"] += 1
                    proc.wait()
                    failures.append(
                        f"case {current}: the worker died (exit {proc.returncode}) {proc.stderr.read()[-300:]}"
                    )
                    i = current + 1
                break
            word, n, *rest = line.split(" ", 2)
            if word == "start":
                current, started = int(n), time.monotonic()
                continue
            outcome = json.loads(rest[0])
            stats["tried"] += 1
            current = None
            i = int(n) + 1
            if outcome in ("ok", "clean"):
                stats[outcome] += 1
            elif outcome.startswith("mismatch"):
                stats["mismatches"] += 1
                failures.append(f"case {n}: {outcome}")
            else:
                stats["crashes"] += 1
                failures.append(f"case {n}: {outcome}")
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    stats["failures"] = failures
    return stats


KINDS = ("workloads", "rules", "configs", "serving", "overlays")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--cases", type=int)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--kind", choices=[*KINDS, "both", "all"], default="both")
    ap.add_argument("--worker", choices=KINDS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.seed, args.start)
        return
    kinds = ["workloads", "rules"] if args.kind == "both" else list(KINDS) if args.kind == "all" else [args.kind]
    for kind in kinds:
        stats = fuzz(kind, args.seed, args.seconds / len(kinds), args.cases, args.start)
        print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
