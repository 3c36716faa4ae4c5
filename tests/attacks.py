"""The attack corpus: hostile and oversized inputs, each with its exact exit code and message.

Every case builds its inputs in a temporary directory (workloads, rule and knowledge overlays,
decision records, output paths), runs ``gpusizer`` on them in a process of its own (so that a
crash or a hang fails the case instead of killing the test run: a child forked from a process with
the rulebase loaded, tests/attack_zygote.py, or with GPUSIZER_ATTACKS_FRESH=1 a fresh interpreter), and
is compared with
``tests/attacks/expected/<case>.txt``: the exit code, standard error, and for the cases that must
still deliver a report, the first line of standard output. ``python tests/update_golden.py``
writes the expected files; review the diff.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = ROOT / "tests" / "attacks" / "expected"
EXAMPLE = "examples/llama2-70b-chat.yaml"
TIMEOUT = 120  # seconds; a case that takes longer is a hang
MEMORY = 3 << 30  # bytes of address space a case may use


@dataclass
class Case:
    """One attack: what it builds, how gpusizer is run on it, and what must come back."""

    name: str
    kind: str  # workload, rules, knowledge, record, output
    build: Callable[[Path], list[str]]  # writes the inputs under tmp, returns the argv
    env: dict[str, str] = field(default_factory=dict)
    stdout: str | None = None  # a file that standard output goes to, e.g. /dev/full or <tmp>/log.txt
    append: bool = False  # standard output opened for appending (the shell's >>), not truncated
    show_stdout: bool = False  # the expectation includes standard output's first line
    whole_stdout: bool = False  # ... or all of it
    stdout_lines: tuple[str, ...] = ()  # ... or its lines that start with these words (and their next line)
    show_files: str | None = None  # a folder under tmp whose listing the expectation includes
    show_file: tuple[str, ...] = ()  # files under tmp whose kind, mode and first line the expectation includes


@dataclass
class Outcome:
    code: int | str  # the exit code, or 'crash (signal N)' / 'hang'
    out: str
    err: str


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    os.umask(0o022)  # the mode of a new file is part of some expectations


class _Zygote:
    """tests/attack_zygote.py: one per thread of a test process (tests/update_golden.py runs cases on
    several), started on first use and again if it dies."""

    local = threading.local()

    @classmethod
    def run(cls, req: dict[str, object]) -> Outcome:
        runner = getattr(cls.local, "runner", None)
        if runner is None:
            runner = cls.local.runner = _Zygote()
        return runner._run(req)

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def _run(self, req: dict[str, object]) -> Outcome:
        for _ in (1, 2):
            if self.proc is None or self.proc.poll() is not None:
                self.proc = subprocess.Popen(
                    [sys.executable, str(ROOT / "tests" / "attack_zygote.py")],
                    cwd=ROOT,
                    env={k: v for k, v in os.environ.items() if k != "GPUSIZER_DEBUG"},
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
            assert self.proc.stdin is not None and self.proc.stdout is not None
            try:
                self.proc.stdin.write(json.dumps(req).encode() + b"\n")
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            except BrokenPipeError:
                line = b""
            if line:
                reply = json.loads(line)
                code = reply["code"]
                out, err = (base64.b64decode(reply[k]).decode("utf-8", "replace") for k in ("out", "err"))
                return Outcome("hang", "", "") if code is None else Outcome(_ended(code), out, err)
            self.proc = None
        raise RuntimeError("the attack runner (tests/attack_zygote.py) died twice in a row")


def run(
    argv: list[str], tmp: Path, env: dict[str, str] | None = None, stdout: str | None = None, append: bool = False
) -> Outcome:
    """gpusizer in a process of its own, from the repository root, bounded in time and memory: a
    child forked from a process that has gpusizer and the shipped rulebase loaded (tests/attack_zygote.py),
    or with GPUSIZER_ATTACKS_FRESH=1 a fresh interpreter (``python -m engine``)."""
    full = dict(os.environ, **{k: v.replace("<tmp>", str(tmp)) for k, v in (env or {}).items()})
    full.pop("GPUSIZER_DEBUG", None)
    if stdout:
        stdout = stdout.replace("<tmp>", str(tmp))
    if os.environ.get("GPUSIZER_ATTACKS_FRESH") == "1":
        outcome = _fresh(argv, full, stdout, append)
    else:
        outcome = _Zygote.run({"argv": argv, "env": full, "stdout": stdout, "append": append, "timeout": TIMEOUT})
    return Outcome(outcome.code, normalise(outcome.out, tmp), normalise(outcome.err, tmp))


def _ended(returncode: int) -> int | str:
    """An exit code as the expectations write it: the code, or the signal that killed the process."""
    return returncode if returncode >= 0 else f"crash (signal {-returncode})"


def _fresh(argv: list[str], env: dict[str, str], stdout: str | None, append: bool) -> Outcome:
    """``python -m engine`` in a fresh interpreter; its outputs as they came."""
    sink = open(stdout, "ab" if append else "wb") if stdout else subprocess.PIPE
    try:
        p = subprocess.run(
            [sys.executable, "-m", "engine", *argv],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            preexec_fn=_limit,
        )
    except subprocess.TimeoutExpired:
        return Outcome("hang", "", "")
    finally:
        if stdout:
            sink.close()
    out = "" if stdout else p.stdout.decode("utf-8", "replace")
    return Outcome(_ended(p.returncode), out, p.stderr.decode("utf-8", "replace"))


_HEX = re.compile(r"\b(?=[0-9]*[a-f])[0-9a-f]{12,64}\b")  # a hash has a letter; a long number need not


def normalise(text: str, tmp: Path) -> str:
    """Temporary paths as <tmp>, hashes as <hex> (they change with every rulebase)."""
    return _HEX.sub("<hex>", text.replace(str(tmp), "<tmp>"))


def expectation(case: Case, outcome: Outcome, tmp: Path) -> str:
    text = f"exit {outcome.code}\n{outcome.err}"
    if case.show_stdout:
        first = outcome.out.splitlines()[0] if outcome.out else ""
        text += f"--- first line of standard output\n{first}\n"
    if case.whole_stdout:
        text += f"--- standard output\n{outcome.out}"
    if case.stdout_lines:
        lines = outcome.out.splitlines()
        picked = []
        for i, line in enumerate(lines):
            if line.strip().startswith(case.stdout_lines):
                more = itertools.takewhile(lambda x: x.startswith("   "), lines[i + 1 :])
                picked.append("\n".join([line, *more]))
        text += (
            "--- standard output, lines of " + ", ".join(case.stdout_lines) + "\n" + "".join(f"{p}\n" for p in picked)
        )
    for name in case.show_file:
        path = tmp / name
        if path.is_symlink():
            kind = f"a link to {normalise(os.readlink(path), tmp)}"
        elif path.is_file():
            kind = f"a file of mode {stat.S_IMODE(path.stat().st_mode):o}"
        else:
            kind = "(missing)" if not path.exists() else "(not a file)"
        first = path.read_text(errors="replace").splitlines()[:2] if path.is_file() else []
        text += f"--- {name}: {kind}\n" + "".join(f"{line}\n" for line in first)
    if case.show_files is not None:
        folder = tmp / case.show_files
        listing = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else ["(no folder)"]
        text += f"--- files in {case.show_files}/\n" + "".join(f"{name}\n" for name in listing)
    return text


# -- builders --------------------------------------------------------------------------------------

WORKLOAD = "name: attack\ntask: inference\nmodel: {name: llama-2-7b}\n"


def workload(text: str, *extra: str) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        path = tmp / "w.yaml"
        path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        return ["recommend", str(path), *extra]

    return build


def raw_workload(data: bytes) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        path = tmp / "w.yaml"
        path.write_bytes(data)
        return ["recommend", str(path)]

    return build


def laughs() -> str:
    lines = ['  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 9):
        prev, me = chr(96 + i), chr(97 + i)
        lines.append(f"  {me}: &{me} [{', '.join(['*' + prev] * 9)}]")
    return WORKLOAD + "gpu:\n  prefer:\n" + "\n".join("  " + ln for ln in lines) + "\n"


def config(text: str | None) -> Callable[[Path], list[str]]:
    """A workload whose model is read from a config.json beside it (None: a named pipe there)."""

    def build(tmp: Path) -> list[str]:
        if text is None:
            os.mkfifo(tmp / "config.json")
        else:
            (tmp / "config.json").write_text(text)
        (tmp / "w.yaml").write_text("name: attack\ntask: inference\nmodel:\n  config: config.json\n")
        return ["recommend", str(tmp / "w.yaml")]

    return build


LLAMA_CONFIG = (ROOT / "examples" / "configs" / "Llama-3.1-8B.config.json").read_text(encoding="utf-8")


def llama_config(old: str, new: str) -> str:
    """The Llama config.json with one edit (which must apply)."""
    assert old in LLAMA_CONFIG, old
    return LLAMA_CONFIG.replace(old, new, 1)


HUB = {"HF_HUB_CACHE": "<tmp>/hub"}
SITE_CACHE = {"SITE_CACHE": "<tmp>/cache"}
REVISION = "0123456789abcdef0123456789abcdef01234567"


def hf_cache(make: Callable[[Path], None], name: str = "org/model") -> Callable[[Path], list[str]]:
    """A workload naming ``name`` in a Hugging Face cache under <tmp>/hub, which ``make`` lays out
    (it gets the model's folder, models--org--model)."""

    def build(tmp: Path) -> list[str]:
        repo = tmp / "hub" / "models--org--model"
        (repo / "refs").mkdir(parents=True)
        make(repo)
        (tmp / "w.yaml").write_text(f"name: attack\ntask: inference\nmodel:\n  hf: {name}\n")
        return ["recommend", str(tmp / "w.yaml")]

    return build


def snapshot(repo: Path, text: str = "") -> Path:
    folder = repo / "snapshots" / REVISION
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(text or LLAMA_CONFIG)
    return folder


def ref_of_3_gib(repo: Path) -> None:
    snapshot(repo)
    with open(repo / "refs" / "main", "wb") as f:  # sparse: no disk used, 3 GiB to whoever reads it whole
        f.truncate(3 << 30)


def ref_to_the_environment(repo: Path) -> None:
    snapshot(repo)
    (repo / "refs" / "main").symlink_to("/proc/self/environ")


def ref_out_of_the_cache(repo: Path) -> None:
    snapshot(repo)
    (repo / "refs" / "main").write_text("../../../../etc\n")


def ref_a_named_pipe(repo: Path) -> None:
    snapshot(repo)
    os.mkfifo(repo / "refs" / "main")


def snapshots_of_20000(repo: Path) -> None:
    for i in range(20_000):
        (repo / "snapshots" / f"r{i}").mkdir(parents=True)


def snapshot_config_of_17_mib(repo: Path) -> None:
    folder = snapshot(repo)
    (folder / "config.json").write_text('{"model_type": "llama", "pad": "' + "a" * (17 << 20) + '"}')
    (repo / "refs" / "main").write_text(REVISION)


def good_ref(repo: Path) -> None:
    snapshot(repo)
    (repo / "refs" / "main").write_text(REVISION + "\n")


def locate_overlay(pattern: str, name: str = "org/model") -> Callable[[Path], list[str]]:
    """A knowledge overlay whose hf-config mapping locates names by ``pattern``."""

    def build(tmp: Path) -> list[str]:
        site = tmp / "site-knowledge"
        site.mkdir()
        (site / "families.yaml").write_text(
            "import: hf-config\ndescription: A site's cache.\nselect: model_type\nlocate:\n"
            f"  pattern: {json.dumps(pattern)}\n  roots: ['{{env.SITE_CACHE}}']\n"
            "  file: 'models--{org}--{name}.json'\n"
            "entries:\n- id: site-llama\n  name: a site entry\n  match: [site_llama]\n  extends: llama\n"
            "  source: {doc: site}\n"
        )
        (tmp / "cache").mkdir()
        (tmp / "cache" / "models--org--model.json").write_text(
            LLAMA_CONFIG.replace('"model_type": "llama"', '"model_type": "site_llama"')
        )
        (tmp / "w.yaml").write_text(f"name: attack\ntask: inference\nmodel:\n  hf: {name}\n")
        return ["recommend", str(tmp / "w.yaml"), "--knowledge", str(site)]

    return build


def validate_overlay(files: dict[str, str]) -> Callable[[Path], list[str]]:
    """gpusizer validate on a knowledge overlay (what load would refuse, validate must find)."""

    def build(tmp: Path) -> list[str]:
        site = tmp / "site-knowledge"
        site.mkdir()
        for name, text in files.items():
            (site / name).write_text(text)
        return ["validate", "--knowledge", str(site)]

    return build


FAMILY_OVERLAY = (
    "import: hf-config\ndescription: A site's families.\nselect: model_type\nentries:\n"
    "- id: site-llama\n  name: a site entry\n  match: [site_llama]\n  extends: llama\n  source: {doc: site}\n"
)


def quantized(q: dict) -> str:
    """The Llama config.json with a quantization_config."""
    cfg = json.loads(LLAMA_CONFIG)
    cfg["quantization_config"] = q
    return json.dumps(cfg, indent=2)


QWEN_MOE_CONFIG = (ROOT / "examples" / "configs" / "Qwen3-30B-A3B.config.json").read_text(encoding="utf-8")


def qwen_moe_config(mlp_only_layers: object) -> str:
    cfg = json.loads(QWEN_MOE_CONFIG)
    cfg["mlp_only_layers"] = mlp_only_layers
    return json.dumps(cfg, indent=2)


def gemma3_config(vision_layers: int = 27) -> str:
    """A Gemma 3 image-text config whose top level holds keys only the outer config has (and a stray
    hidden_size), and whose text_config holds a quantization_config the quantizer never reads."""
    return json.dumps(
        {
            "architectures": ["Gemma3ForConditionalGeneration"],
            "model_type": "gemma3",
            "hidden_size": 99999,
            "mm_tokens_per_image": 256,
            "text_config": {
                "model_type": "gemma3_text",
                "hidden_size": 2560,
                "intermediate_size": 10240,
                "num_hidden_layers": 34,
                "num_attention_heads": 8,
                "num_key_value_heads": 4,
                "head_dim": 256,
                "vocab_size": 262208,
                "quantization_config": {"quant_method": "fp8"},
            },
            "vision_config": {
                "model_type": "siglip_vision_model",
                "hidden_size": 1152,
                "intermediate_size": 4304,
                "num_hidden_layers": vision_layers,
                "patch_size": 14,
                "image_size": 896,
            },
        },
        indent=2,
    )


def _odd_file(tmp: Path) -> list[str]:
    """A workload file whose name holds a line break and an escape: its error shows them escaped."""
    path = tmp / "w\nfake: error.yaml"
    path.write_text("name: attack\ntask: inference\nmodel: {name: nope}\n")
    return ["recommend", str(path)]


def fifo(tmp: Path) -> list[str]:
    path = tmp / "pipe.yaml"
    os.mkfifo(path)
    return ["recommend", str(path)]


def directory(tmp: Path) -> list[str]:
    (tmp / "dir.yaml").mkdir()
    return ["recommend", str(tmp / "dir.yaml")]


ATTRIBUTES = (
    "attributes:\n  site.extra_gb:\n    type: number\n    unit: GB\n    combine: max\n"
    "    description: A site's own figure.\n"
)


def rules(*rules_: tuple[str, str], attributes: str = ATTRIBUTES, workload_path: str = EXAMPLE):
    """An overlay of rules (id, text after 'summary'), laid over the shipped rulebase."""

    def build(tmp: Path) -> list[str]:
        site = tmp / "site"
        (site / "site").mkdir(parents=True)
        (site / "_attributes.yaml").write_text(attributes)
        for rid, body in rules_:
            (site / "site" / f"{rid}.yaml").write_text(f"id: {rid}\nsummary: An attack.\n{body}")
        return ["recommend", workload_path, "--rules", str(site)]

    return build


def many(n: int, when: str) -> Callable[[Path], list[str]]:
    """n rules; ``when`` may use {i} (the rule's number) and {m} (it modulo 97)."""
    return rules(
        *[(f"r{i}", f"when:\n{when.format(i=i, m=i % 97)}then:\n  site.extra_gb: {i}\n{SOURCE}") for i in range(n)]
    )


SOURCE = "source: {doc: attack, note: a test of limits}\n"


def rule(when: str, then: str = "  site.extra_gb: 1\n", let: str = "") -> Callable[[Path], list[str]]:
    return rules(("attack", f"when:\n{when}{let}then:\n{then}{SOURCE}"))


def knowledge(files: dict[str, str]) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        site = tmp / "site-knowledge"
        site.mkdir()
        for name, text in files.items():
            (site / name).write_text(text)
        return ["recommend", EXAMPLE, "--knowledge", str(site)]

    return build


def catalog(fields: str, item: str, name: str = "dimm") -> str:
    declared = "\n" + fields if fields else " {}\n"
    return (
        f"catalog: {name}\ndescription: A site's list.\nfields:{declared}items:\n"
        f"  - id: site-item\n    name: Site item\n    source: {{doc: site}}\n{item}"
    )


def amend(name: str, item_id: str, item: str, fields: str = "") -> str:
    """A site overlay in the short form: an existing item of a shipped catalog, and what changes."""
    declared = f"fields:\n{fields}" if fields else ""
    return f"catalog: {name}\n{declared}items:\n  - id: {item_id}\n{item}"


def wide_catalog(tmp: Path) -> list[str]:
    """A catalog of 300 fields (an item fact of durable-rules holds at most 255 properties) and a rule on it."""
    fields = "".join(f"  f{i}:\n    type: integer\n    description: Field {i}.\n" for i in range(300))
    item = "".join(f"    f{i}: {i}\n" for i in range(300))
    site = tmp / "site-knowledge"
    site.mkdir()
    (site / "wide.yaml").write_text(catalog(fields, item, "wide"))
    argv = rules(
        (
            "wide-rule",
            "when:\n  - item: wide\n    as: w\n    where:\n      f299: {gt: 10}\n      f7: 7\n"
            f"then:\n  site.extra_gb: w.f250\n{SOURCE}",
        )
    )(tmp)
    return [*argv, "--knowledge", str(site)]


def schema_overlay(text: str) -> Callable[[Path], list[str]]:
    return knowledge({"workload.schema.json": text})


_RECORDS: dict[bool, Path] = {}


def keygen(path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "engine", "audit", "keygen", str(path)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
    )


def _base_record(signed: bool) -> Path:
    """The record of the llama example (and its key when signed), written once per test run."""
    if signed not in _RECORDS:
        import tempfile

        where = Path(tempfile.mkdtemp(prefix="gpusizer-attack-records-"))
        env = dict(os.environ, SOURCE_DATE_EPOCH="1767225600")
        argv = [sys.executable, "-m", "engine", "recommend", EXAMPLE, "--record", str(where / "records")]
        if signed:
            keygen(where / "key")
            argv += ["--key", str(where / "key")]
        subprocess.run(argv, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        _RECORDS[signed] = where
    return _RECORDS[signed]


def record(mutate: Callable[[dict], dict | str | bytes] | None = None, *, key: bool = False, verify_key: str = "same"):
    """A record of the llama example (signed when ``key``), changed by ``mutate``, then verified."""

    def build(tmp: Path) -> list[str]:
        base = _base_record(key)
        (source,) = (base / "records").glob("*.json")
        path = tmp / source.name
        shutil.copy(source, path)
        if key:
            shutil.copy(base / "key", tmp / "key")
        if mutate is not None:
            changed = mutate(json.loads(path.read_text()))
            if isinstance(changed, dict):
                changed = json.dumps(changed, indent=2)
            path.write_bytes(changed if isinstance(changed, bytes) else changed.encode())
        out = ["audit", "verify", str(path)]
        if verify_key == "same" and key:
            out += ["--key", str(tmp / "key")]
        elif verify_key == "other":
            keygen(tmp / "other")
            out += ["--key", str(tmp / "other")]
        return out

    return build


def config_record(after: Callable[[Path, Path], None] | None = None, *extra: str) -> Callable[[Path], list[str]]:
    """A record of a model: {config: PATH} workload, written in <tmp>/made; ``after`` (given the
    folder and the record) then moves, edits or forges things before the record is verified."""

    def build(tmp: Path) -> list[str]:
        made = tmp / "made"
        made.mkdir()
        (made / "config.json").write_text(LLAMA_CONFIG)
        (made / "w.yaml").write_text("name: config-record\ntask: inference\nmodel:\n  config: config.json\n")
        env = dict(os.environ, SOURCE_DATE_EPOCH="1767225600")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "engine",
                "recommend",
                str(made / "w.yaml"),
                "--record",
                str(tmp / "records"),
                *extra,
            ],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (path,) = (tmp / "records").glob("*.json")
        if after is not None:
            after(made, path)
        return ["audit", "verify", str(path)]

    return build


def move_away(made: Path, record_path: Path) -> None:
    shutil.rmtree(made)


def edit_config_on_disk(made: Path, record_path: Path) -> None:
    (made / "config.json").write_text(LLAMA_CONFIG.replace('"num_hidden_layers": 32', '"num_hidden_layers": 30'))


def edit_recorded_config(made: Path, record_path: Path) -> None:
    rec = json.loads(record_path.read_text())
    doc = rec["inputs"]["documents"][0]
    doc["text"] = doc["text"].replace('"num_hidden_layers": 32', '"num_hidden_layers": 30')
    record_path.write_text(json.dumps(rehash(rec), indent=2))


def forge_recorded_config(made: Path, record_path: Path) -> None:
    """The config edited and every hash made again: the decision no longer follows."""
    rec = json.loads(record_path.read_text())
    doc = rec["inputs"]["documents"][0]
    doc["text"] = doc["text"].replace('"num_hidden_layers": 32', '"num_hidden_layers": 30')
    doc["sha256"] = hashlib.sha256(doc["text"].encode()).hexdigest()
    record_path.write_text(json.dumps(rehash(rec), indent=2))


def overlay_path_out(made: Path, record_path: Path) -> None:
    rec = json.loads(record_path.read_text())
    rec["inputs"]["overlays"] = [
        {"kind": "rules", "name": "site", "files": [{"path": "../../escape.yaml", "sha256": "0" * 64, "text": "x"}]}
    ]
    record_path.write_text(json.dumps(rehash(rec), indent=2))


def record_with_overlay(tmp: Path) -> list[str]:
    """A record made with a knowledge overlay, verified without naming it: the record carries it."""
    env = dict(os.environ, SOURCE_DATE_EPOCH="1767225600")
    site = tmp / "site-prices"
    shutil.copytree(ROOT / "examples" / "site-prices", site)
    subprocess.run(
        [sys.executable, "-m", "engine", "recommend", EXAMPLE, "--knowledge", str(site), "--record", str(tmp / "r")],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.rmtree(site)
    (path,) = (tmp / "r").glob("*.json")
    return ["audit", "verify", str(path)]


def canonical(rec: dict) -> bytes:
    body = {k: v for k, v in rec.items() if k not in ("record_sha256", "signature")}
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def rehash(rec: dict) -> dict:
    """What a forger does: recompute the unkeyed hash after an edit."""
    rec["record_sha256"] = hashlib.sha256(canonical(rec)).hexdigest()
    return rec


def forge_conclusion(rec: dict) -> dict:
    rec.pop("signature", None)
    rec["conclusions"]["gpu.count"] = 1
    return rehash(rec)


def forge_from_scratch(rec: dict) -> dict:
    """A small invented record: another rulebase hash, no firings, the conclusions copied."""
    rec = {
        "record": 2,
        "gpusizer": rec["gpusizer"],
        "created": rec["created"],
        "workload": rec["workload"],
        "defaults": {},
        "rulebase": {"sha256": "ab" * 32, "rules": {}, "overlays": []},
        "firings": [],
        "conclusions": {"gpu.model": rec["conclusions"]["gpu.model"]},
    }
    return rehash(rec)


def text_is_a_path(rec: dict) -> dict:
    rec.pop("signature", None)
    rec["workload"]["text"] = "/etc/passwd"
    rec["workload"]["sha256"] = hashlib.sha256(b"/etc/passwd").hexdigest()
    return rehash(rec)


def duplicate_key(rec: dict) -> str:
    """A forged 'conclusions' placed before the real one (a lenient reader keeps the last)."""
    text = json.dumps(rec, indent=2)
    return text.replace('  "conclusions": {', '  "conclusions": {"gpu.model": "forged"},\n  "conclusions": {', 1)


def nan_value(rec: dict) -> str:
    return re.sub(r'("gpu\.count": )[0-9]+', r"\1NaN", json.dumps(rec, indent=2), count=1)


def flip_a_byte(rec: dict) -> bytes:
    raw = json.dumps(rec, indent=2).encode()
    i = raw.index(b'"gpu.count": ') + len(b'"gpu.count": ')
    return raw[:i] + bytes([raw[i] ^ 1]) + raw[i + 1 :]


def edit_signed(rec: dict) -> dict:
    """An edit after signing, the unkeyed hash recomputed, the signature left as it was."""
    rec["conclusions"]["gpu.count"] = 1
    return rehash(rec)


def deep_json(rec: dict) -> str:
    return "[" * 100_000 + "]" * 100_000


def output(*extra: str, make: Callable[[Path], None] | None = None) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        if make:
            make(tmp)
        return ["recommend", EXAMPLE, *[a.replace("<tmp>", str(tmp)) for a in extra]]

    return build


def readonly_dir(tmp: Path) -> None:
    d = tmp / "ro"
    d.mkdir()
    d.chmod(stat.S_IRUSR | stat.S_IXUSR)


def a_file(tmp: Path) -> None:
    (tmp / "file").write_text("x")


def link_to_a_read_only_file(tmp: Path) -> None:
    """report.txt links to a read-only file elsewhere: -o report.txt must replace the link, not the file."""
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "keep.txt").write_text("not a report\n")
    (tmp / "elsewhere" / "keep.txt").chmod(0o444)
    (tmp / "report.txt").symlink_to(tmp / "elsewhere" / "keep.txt")


def dangling_link(tmp: Path) -> None:
    (tmp / "report.txt").symlink_to(tmp / "nowhere" / "new.txt")


def file_of_mode_640(tmp: Path) -> None:
    (tmp / "report.txt").write_text("old report\n")
    (tmp / "report.txt").chmod(0o640)


def earlier_log(tmp: Path) -> None:
    (tmp / "log.txt").write_text("an earlier line\n")


def output_then(*extra: str, make: Callable[[Path], None] | None = None) -> Callable[[Path], list[str]]:
    """Like output(), with the two example workloads (several reports into one output)."""

    def build(tmp: Path) -> list[str]:
        if make:
            make(tmp)
        files = [EXAMPLE, "examples/gpt2-finetune-personal.yaml"]
        return ["recommend", *files, *[a.replace("<tmp>", str(tmp)) for a in extra]]

    return build


def same_names(tmp: Path) -> list[str]:
    for d in ("a", "b"):
        (tmp / d).mkdir()
        shutil.copy(ROOT / EXAMPLE, tmp / d / "chat.yaml")
    return ["recommend", str(tmp / "a" / "chat.yaml"), str(tmp / "b" / "chat.yaml"), "-o", str(tmp / "out")]


NAN_WORKLOAD = WORKLOAD + "dataset: {size_gb: .nan}\n"


def batch(*extra: str) -> Callable[[Path], list[str]]:
    """Two good workloads around a bad one (a NaN): the good ones still get their reports."""

    def build(tmp: Path) -> list[str]:
        (tmp / "bad.yaml").write_text(NAN_WORKLOAD)
        good = ["examples/llama2-70b-chat.yaml", "examples/gpt2-finetune-personal.yaml"]
        return ["recommend", good[0], str(tmp / "bad.yaml"), good[1], *[a.replace("<tmp>", str(tmp)) for a in extra]]

    return build


def gpu_card(fields: str) -> Callable[[Path], list[str]]:
    """A site's GPU catalog changing a shipped card's fields."""
    return knowledge({"gpus.yaml": amend("gpu", "h100-sxm-80gb", fields)})


def loose_key(tmp: Path) -> list[str]:
    (tmp / "key").write_text("k" * 64)
    (tmp / "key").chmod(0o644)
    return ["recommend", EXAMPLE, "--record", str(tmp / "r"), "--key", str(tmp / "key")]


def short_key(tmp: Path) -> list[str]:
    (tmp / "key").write_text("short")
    (tmp / "key").chmod(0o600)
    return ["recommend", EXAMPLE, "--record", str(tmp / "r"), "--key", str(tmp / "key")]


# -- the corpus ------------------------------------------------------------------------------------

CASES = [
    # workloads: YAML that fails to construct, non-finite numbers, limits, files that are not files
    Case("nan-in-dataset", "workload", workload(WORKLOAD + "dataset: {size_gb: .nan}\n")),
    Case("inf-in-budget", "workload", workload(WORKLOAD + "budget: {amount: .inf}\n")),
    Case("overflowing-float", "workload", workload(WORKLOAD + "budget: {amount: 1e999}\n")),
    Case("huge-integer", "workload", workload(WORKLOAD + "batch_size: 1" + "0" * 400 + "\n")),
    Case("subnormal-float-is-fine", "workload", workload(WORKLOAD + "dataset: {size_gb: 5e-324}\n")),
    Case("int-tag-on-empty-text", "workload", workload("name: !!int ''\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("bool-tag-maybe", "workload", workload(WORKLOAD + "needs_fp64: !!bool maybe\n")),
    Case("bad-timestamp", "workload", workload("name: !!timestamp 2020-13-45\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("impossible-date-as-name", "workload", workload("name: 2023-02-30\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("date-as-name", "workload", workload("name: 2024-01-01\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("binary-tag", "workload", workload("name: !!binary aGVsbG8=\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("unknown-tag", "workload", workload("name: !shell rm -rf /\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("python-object-tag", "workload", workload(WORKLOAD + "gpu: !!python/object/apply:os.system ['id']\n")),
    Case("set-tag", "workload", workload(WORKLOAD + "gpu: !!set {a, b}\n")),
    Case("recursive-alias", "workload", workload("name: &a [*a]\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("undefined-alias", "workload", workload("name: *nowhere\ntask: inference\nmodel: {name: gpt2}\n")),
    Case("billion-laughs", "workload", workload(laughs())),
    Case("deep-flow-nesting", "workload", workload(WORKLOAD + "gpu: " + "[" * 100_000 + "]" * 100_000 + "\n")),
    Case(
        "deep-block-nesting",
        "workload",
        workload(WORKLOAD + "".join(f"{'  ' * i}k{i}:\n" for i in range(100)) + "  " * 100 + "x: 1\n"),
    ),
    Case(
        "merge-key-works", "workload", workload("name: m\ntask: inference\nmodel:\n  <<: {name: gpt2}\n  layers: 12\n")
    ),
    Case("second-document", "workload", workload(WORKLOAD + "---\nname: other\n")),
    Case("control-character", "workload", raw_workload(b"name: at\x01tack\ntask: inference\nmodel: {name: gpt2}\n")),
    Case(
        "escaped-terminal-control",
        "workload",
        workload('name: "\\e[2Jcleared"\ntask: inference\nmodel: {name: gpt2}\n'),
    ),
    Case("not-utf8", "workload", raw_workload(b"name: caf\xe9\ntask: inference\nmodel: {name: gpt2}\n")),
    Case(
        "name-of-70000-characters",
        "workload",
        workload(f"name: {'a' * 70_000}\ntask: inference\nmodel: {{name: gpt2}}\n"),
    ),
    Case("file-of-17-mib", "workload", workload(f"name: {'a' * (17 << 20)}\ntask: inference\nmodel: {{name: gpt2}}\n")),
    Case(
        "name-of-17-mib-with-raised-limits",
        "workload",
        workload(
            f"name: {'a' * (17 << 20)}\ntask: inference\nmodel: {{name: gpt2}}\n", "--format", "json", "-o", "/dev/null"
        ),
        env={"GPUSIZER_MAX_FILE_MB": "32", "GPUSIZER_MAX_TEXT": "20000000"},
    ),
    Case("bad-limit-variable", "workload", workload(WORKLOAD), env={"GPUSIZER_MAX_NODES": "lots"}),
    Case("named-pipe", "workload", fifo),
    # goals no hardware meets, settings an engine refuses, plans no platform takes: said first, or refused
    Case(
        "deadline-of-a-billionth-of-a-day",
        "workload",
        workload(
            (ROOT / "examples" / "cluster-llama2-70b-deadline.yaml")
            .read_text()
            .replace("deadline_days: 90", "deadline_days: 1e-9")
        ),
        stdout_lines=("!!", "Workload"),
    ),
    Case(
        "serving-to-a-hundred-million-users",
        "workload",
        workload(
            "name: attack\ntask: inference\nmodel: {name: llama-2-7b}\nscenario: cluster\nserving:\n"
            "  concurrent_requests: 100000000\n  prompt_tokens: 1000\n  output_tokens: 100\n"
        ),
        stdout_lines=("!!",),
    ),
    Case(
        "vllm-batch-budget-of-one-token",
        "workload",
        workload(
            "name: attack\ntask: inference\nmodel: {name: llama-2-7b}\nscenario: sme\nserving:\n"
            "  concurrent_requests: 10\n  prompt_tokens: 1000\n  output_tokens: 100\n  max_num_batched_tokens: 1\n"
        ),
        stdout_lines=("!!",),
    ),
    Case(
        "vllm-batch-budget-below-max-num-seqs",
        "workload",
        workload(
            "name: attack\ntask: inference\nmodel: {name: llama-2-7b}\nserving:\n  concurrent_requests: 10\n"
            "  prompt_tokens: 1000\n  output_tokens: 100\n  max_num_batched_tokens: 1\n  max_num_seqs: 8\n"
        ),
    ),
    Case(
        "tgi-prefill-budget-below-one-prompt",
        "workload",
        workload(
            "name: attack\ntask: inference\nmodel: {name: llama-2-7b}\nserving:\n  engine: tgi\n"
            "  concurrent_requests: 10\n  prompt_tokens: 1000\n  output_tokens: 100\n  max_num_batched_tokens: 512\n"
        ),
    ),
    Case(
        "serving-plan-no-platform-takes",
        "workload",
        workload(
            "name: attack\ntask: inference\nmodel: {name: llama-2-7b}\nserving:\n  concurrent_requests: 10\n"
            "  prompt_tokens: 1000\n  output_tokens: 100\n  max_num_batched_tokens: 1\n"
            "  targets: {time_to_first_token_s: 2}\n"
        ),
        stdout_lines=("!!", "GPUs", "Serving"),
    ),
    # messages: the file the user can change is blamed, input is echoed as an excerpt, names are escaped
    Case(
        "tiny-parameter-count-blamed-on-the-workload",
        "workload",
        workload("name: attack\ntask: training\nmodel: {name: llama-2-7b, params: 1e-300}\n"),
    ),
    Case(
        "echo-of-540-kb-is-cut",
        "workload",
        workload(WORKLOAD + "batch_size: [" + ", ".join(["'" + "x" * 60_000 + "'"] * 9) + "]\n"),
    ),
    Case(
        "name-with-line-breaks-in-text",
        "workload",
        workload('name: "x\\n  GPUs        8 x H100, free\\u202egnp.exe\\t"\ntask: inference\nmodel: {name: gpt2}\n'),
        show_stdout=True,
    ),
    Case(
        "name-with-line-breaks-in-markdown",
        "workload",
        workload('name: "x\\n# FREE GPUS\\u2028"\ntask: inference\nmodel: {name: gpt2}\n', "--format", "markdown"),
        show_stdout=True,
    ),
    Case(
        "name-with-line-breaks-in-explain",
        "workload",
        lambda tmp: [
            "explain",
            *workload('name: "x\\nfaked: line"\ntask: inference\nmodel: {name: gpt2}\n')(tmp)[1:],
            "gpu.model",
        ],
        show_stdout=True,
    ),
    Case("file-name-with-a-line-break", "workload", lambda tmp: _odd_file(tmp)),
    Case(
        "what-if-max-of-a-text-key",
        "workload",
        lambda tmp: ["what-if", EXAMPLE, "--max", "precision", "--while", "ram.system_gb <= 256"],
    ),
    Case(
        "what-if-while-of-an-unknown-attribute",
        "workload",
        lambda tmp: ["what-if", EXAMPLE, "--max", "batch_size", "--while", "ram.sytem_gb <= 256"],
    ),
    Case(
        "what-if-max-of-a-mapping",
        "workload",
        lambda tmp: ["what-if", EXAMPLE, "--max", "gpu", "--while", "ram.system_gb <= 256"],
    ),
    Case("dev-zero", "workload", lambda tmp: ["recommend", "/dev/zero"]),
    Case("directory", "workload", directory),
    # a model's config.json, read for a workload
    Case("config-a-named-pipe", "workload", config(None)),
    Case("config-nan", "workload", config(llama_config('"rms_norm_eps": 1e-05', '"rms_norm_eps": NaN'))),
    Case(
        "config-duplicate-key",
        "workload",
        config(llama_config('"hidden_size": 4096', '"hidden_size": 1, "hidden_size": 4096')),
    ),
    Case("config-deep-nesting", "workload", config('{"a": ' + "[" * 5000 + "]" * 5000 + "}")),
    Case("config-not-an-object", "workload", config("[1, 2]")),
    # config.json as transformers reads it: only its keys, in their places; every quantization sized or refused
    Case(
        "config-stray-dotted-key-is-no-quantization",
        "workload",
        config(llama_config('"hidden_size": 4096', '"quantization_config.quant_method": "fp8", "hidden_size": 4096')),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-bitsandbytes-4-bit",
        "workload",
        config(quantized({"quant_method": "bitsandbytes", "load_in_4bit": True})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-bitsandbytes-4-bit-double-quant",
        "workload",
        config(quantized({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-bitsandbytes-8-bit",
        "workload",
        config(quantized({"quant_method": "bitsandbytes", "load_in_8bit": True})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-bitsandbytes-4-and-8-bit",
        "workload",
        config(quantized({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True})),
    ),
    Case(
        "config-gptq-3-bit",
        "workload",
        config(quantized({"quant_method": "gptq", "bits": 3, "group_size": 128})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-gptq-4-bit-groups-of-32",
        "workload",
        config(quantized({"quant_method": "gptq", "bits": 4, "group_size": 32})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-gptq-8-bit-per-column",
        "workload",
        config(quantized({"quant_method": "gptq", "bits": 8, "group_size": -1})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case("config-gptq-5-bit", "workload", config(quantized({"quant_method": "gptq", "bits": 5}))),
    Case(
        "config-gptq-groups-of-100",
        "workload",
        config(quantized({"quant_method": "gptq", "bits": 4, "group_size": 100})),
    ),
    Case(
        "config-awq-4-bit",
        "workload",
        config(quantized({"quant_method": "awq", "bits": 4, "group_size": 128})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-fp8",
        "workload",
        config(quantized({"quant_method": "fp8", "weight_block_size": [128, 128]})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "config-mxfp4",
        "workload",
        config(quantized({"quant_method": "mxfp4"})),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case("config-unknown-quantization", "workload", config(quantized({"quant_method": "hqq", "nbits": 4}))),
    Case("config-compressed-tensors", "workload", config(quantized({"quant_method": "compressed-tensors"}))),
    Case(
        "config-7-kv-heads-over-32",
        "workload",
        config(llama_config('"num_key_value_heads": 8', '"num_key_value_heads": 7')),
    ),
    Case("config-0-kv-heads", "workload", config(llama_config('"num_key_value_heads": 8', '"num_key_value_heads": 0'))),
    Case("config-mlp-only-layers-out-of-range", "workload", config(qwen_moe_config([0, 48]))),
    Case("config-mlp-only-layers-twice", "workload", config(qwen_moe_config([3, 3]))),
    Case("config-mlp-only-layers-not-a-list", "workload", config(qwen_moe_config("all"))),
    Case("config-negative-vision-layers", "workload", config(gemma3_config(vision_layers=-27))),
    Case(
        "config-gemma3-reads-only-its-text-config",
        "workload",
        config(gemma3_config()),
        stdout_lines=("Workload", "GPU memory"),
    ),
    Case(
        "hand-given-7-kv-heads-over-32",
        "workload",
        workload(
            "name: attack\ntask: inference\nmodel: {layers: 32, hidden_size: 4096, attention_heads: 32, kv_heads: 7, "
            "intermediate_size: 14336, mlp: swiglu, vocab_size: 128256}\n"
        ),
    ),
    # the offline Hugging Face cache: every read bounded, no file of the cache quoted
    Case("hf-cache-good", "workload", hf_cache(good_ref), env=HUB),
    Case("hf-ref-of-3-gib", "workload", hf_cache(ref_of_3_gib), env=HUB),
    Case("hf-ref-to-the-environment", "workload", hf_cache(ref_to_the_environment), env=HUB),
    Case("hf-ref-out-of-the-cache", "workload", hf_cache(ref_out_of_the_cache), env=HUB),
    Case("hf-ref-a-named-pipe", "workload", hf_cache(ref_a_named_pipe), env=HUB),
    Case("hf-20000-snapshots", "workload", hf_cache(snapshots_of_20000), env=HUB),
    Case("hf-config-of-17-mib", "workload", hf_cache(snapshot_config_of_17_mib), env=HUB),
    Case("hf-name-of-41-characters", "workload", hf_cache(good_ref, "x" * 40 + "!/b"), env=HUB),
    Case("hf-name-with-a-dot-dot", "workload", hf_cache(good_ref, "../etc"), env=HUB),
    # rules: what reached durable-rules' fixed limits, and expressions that ran away
    Case("in-list-of-511", "rules", rule("  - batch_size: {in: [" + ", ".join(map(str, range(511))) + "]}\n")),
    Case("in-list-of-600", "rules", rule("  - batch_size: {in: [" + ", ".join(map(str, range(600))) + "]}\n")),
    Case(
        "ref-divides-by-zero",
        "rules",
        rule("  - batch_size: {gt: {ref: 'sequence_length / (batch_size - batch_size)'}}\n"),
    ),
    Case("then-divides-by-zero", "rules", rule("  - batch_size: {gt: 0}\n", "  site.extra_gb: batch_size / 0\n")),
    Case("200-rules-one-condition", "rules", many(200, "  - task: inference\n")),
    Case("300-rules-one-condition", "rules", many(300, "  - scenario.effective: sme\n")),
    Case("1000-rules-one-condition", "rules", many(1000, "  - task: inference\n")),
    Case(
        "2000-ordering-tests-on-two-attributes",
        "rules",
        many(2000, "  - batch_size: {{gt: {m}}}\n  - sequence_length: {{lte: {i}00000}}\n"),
    ),
    Case("operator-chain-of-5000", "rules", rule("  - batch_size: {gt: {ref: '" + "+".join(["1"] * 4999) + "'}}\n")),
    Case("bool-chain-of-5000", "rules", rule("  - batch_size: {gt: {ref: '" + " or ".join(["0"] * 1500) + "'}}\n")),
    Case("nan-in-condition", "rules", rule("  - batch_size: {gt: .nan}\n")),
    Case("inf-in-condition", "rules", rule("  - batch_size: {lt: .inf}\n")),
    Case("subnormal-in-condition", "rules", rule("  - batch_size: {gt: 5e-324}\n")),
    Case(
        "let-doubles-a-text",
        "rules",
        rule(
            "  - batch_size: {gt: 0}\n",
            "  site.extra_gb: len(s25)\n",
            "let:\n  s0: \"'ab'\"\n" + "".join(f"  s{i}: s{i - 1} + s{i - 1}\n" for i in range(1, 26)),
        ),
    ),
    Case(
        "let-copies-a-long-list",
        "rules",
        rule(
            "  - batch_size: {gt: 0}\n",
            "  site.extra_gb: len(l40)\n",
            "let:\n  l0: '[1, 2, 3, 4, 5, 6, 7, 8]'\n"
            + "".join(f"  l{i}: l{i - 1} + l{i - 1}\n" for i in range(1, 16))
            + "".join(f"  l{i}: l{i - 1} + [1]\n" for i in range(16, 41)),
        ),
    ),
    Case(
        "let-squares-an-integer",
        "rules",
        rule(
            "  - batch_size: {gt: 0}\n",
            "  site.extra_gb: n9\n",
            "let:\n  n0: 3\n" + "".join(f"  n{i}: n{i - 1} * n{i - 1}\n" for i in range(1, 10)),
        ),
    ),
    Case("power-tower", "rules", rule("  - batch_size: {gt: 0}\n", "  site.extra_gb: 2 ** 10 ** 10\n")),
    Case("dunder-escape", "rules", rule("  - batch_size: {gt: 0}\n", "  site.extra_gb: batch_size.__class__\n")),
    # knowledge: non-finite and absurd values, a workload schema that is not one, a very wide catalog
    Case(
        "nan-in-catalog",
        "knowledge",
        knowledge(
            {
                "dimms.yaml": amend(
                    "dimm",
                    "ddr5-rdimm-16gb",
                    "    size_gb: .nan\n",
                    "  size_gb:\n    type: number\n    description: Size.\n",
                )
            }
        ),
    ),
    Case(
        "zero-size-dimm", "knowledge", knowledge({"dimms.yaml": amend("dimm", "ddr5-rdimm-16gb", "    size_gb: 0\n")})
    ),
    Case(
        "negative-currency",
        "knowledge",
        knowledge({"currencies.yaml": amend("currency", "usd", "    cny_per_unit: -7\n")}),
    ),
    Case(
        "overlay-cannot-widen-bounds",
        "knowledge",
        knowledge(
            {
                "dimms.yaml": amend(
                    "dimm",
                    "ddr5-rdimm-16gb",
                    "    size_gb: -8\n",
                    "  size_gb:\n    type: integer\n    description: Size.\n    minimum: -100\n",
                )
            }
        ),
    ),
    Case("workload-schema-a-list", "knowledge", schema_overlay("[]")),
    Case("workload-schema-properties-a-list", "knowledge", schema_overlay('{"type": "object", "properties": []}')),
    Case(
        "workload-schema-property-not-a-schema",
        "knowledge",
        schema_overlay('{"type": "object", "properties": {"name": 3}}'),
    ),
    Case(
        "workload-schema-bad-regex",
        "knowledge",
        schema_overlay('{"type": "object", "properties": {"name": {"type": "string", "pattern": "("}}}'),
    ),
    Case(
        "workload-schema-duplicate-key",
        "knowledge",
        schema_overlay('{"type": "object", "type": "array", "properties": {}}'),
    ),
    Case("catalog-of-300-fields", "knowledge", wide_catalog),
    # overlays of the config.json mapping: a pattern is a template, never a regular expression
    Case(
        "locate-pattern-a-catastrophic-regex",
        "knowledge",
        locate_overlay("(?P<org>(a+)+)/(?P<name>b)", "a" * 40 + "!/b"),
        env=SITE_CACHE,
    ),
    Case("locate-pattern-ambiguous", "knowledge", locate_overlay("{org}-{name}"), env=SITE_CACHE),
    Case(
        "locate-pattern-template-works", "knowledge", locate_overlay("{org}/{name}"), env=SITE_CACHE, show_stdout=True
    ),
    Case(
        "validate-finds-a-regex-pattern",
        "knowledge",
        validate_overlay(
            {
                "families.yaml": FAMILY_OVERLAY.replace(
                    "entries:", "locate:\n  pattern: '(a+)+$'\n  roots: ['{home}']\n  file: x\nentries:"
                )
            }
        ),
        whole_stdout=True,
    ),
    Case(
        "validate-finds-a-path-out-of-the-cache",
        "knowledge",
        validate_overlay(
            {
                "families.yaml": FAMILY_OVERLAY.replace(
                    "entries:",
                    "locate:\n  pattern: '{org}/{name}'\n  roots: ['{home}']\n  file: '../../etc/{nosuch}'\nentries:",
                )
            }
        ),
        whole_stdout=True,
    ),
    Case(
        "validate-finds-a-fixed-value-the-key-refuses",
        "knowledge",
        validate_overlay({"families.yaml": FAMILY_OVERLAY + "  fixed:\n    mlp: bogus\n    layers: many\n"}),
        whole_stdout=True,
    ),
    Case(
        "validate-reads-a-folder-of-mappings-as-knowledge",
        "knowledge",
        lambda tmp: [
            *validate_overlay({"families.yaml": FAMILY_OVERLAY + "  fixed:\n    mlp: bogus\n"})(tmp)[:1],
            str(tmp / "site-knowledge"),
        ],
        whole_stdout=True,
    ),
    Case("card-of-1e30-bytes", "knowledge", gpu_card("    vram_bytes: 1" + "0" * 30 + "\n")),
    Case("card-of-zero-bytes", "knowledge", gpu_card("    vram_bytes: 0\n")),
    Case("card-of-negative-bandwidth", "knowledge", gpu_card("    memory_bandwidth_gbs: -3350\n")),
    Case("card-of-negative-price", "knowledge", gpu_card("    price: -1\n")),
    Case("card-of-zero-watts", "knowledge", gpu_card("    tdp_watts: 0\n")),
    Case("card-of-fractional-watts", "knowledge", gpu_card("    tdp_watts: 350.5\n")),
    Case(
        "platform-of-zero-gpus",
        "knowledge",
        knowledge({"platforms.yaml": amend("platform", "hgx-hopper-8", "    max_gpus: 0\n")}),
    ),
    # decision records
    Case("record-intact-unsigned", "record", record()),
    Case("record-intact-signed", "record", record(key=True)),
    Case("record-signed-checked-without-key", "record", record(key=True, verify_key="none")),
    Case("record-signed-checked-with-other-key", "record", record(key=True, verify_key="other")),
    Case("record-signed-then-edited", "record", record(edit_signed, key=True)),
    Case("record-forged-conclusion", "record", record(forge_conclusion)),
    Case("record-forged-from-scratch", "record", record(forge_from_scratch)),
    Case("record-workload-text-is-a-path", "record", record(text_is_a_path)),
    Case("record-duplicate-key", "record", record(duplicate_key)),
    Case("record-missing-key", "record", record(lambda r: {k: v for k, v in r.items() if k != "firings"})),
    Case("record-not-an-object", "record", record(lambda r: "[]")),
    Case("record-wrong-type", "record", record(lambda r: dict(r, conclusions=[]))),
    Case("record-nan", "record", record(nan_value)),
    Case("record-deep-nesting", "record", record(deep_json)),
    Case("record-byte-flipped", "record", record(flip_a_byte)),
    # records carry every input: the config a workload imported, the overlays
    Case("record-of-a-config-workload", "record", config_record(), whole_stdout=True),
    Case("record-of-a-config-workload-moved-away", "record", config_record(move_away), whole_stdout=True),
    Case("record-config-changed-on-disk", "record", config_record(edit_config_on_disk), whole_stdout=True),
    Case("record-recorded-config-edited", "record", config_record(edit_recorded_config)),
    Case("record-recorded-config-forged", "record", config_record(forge_recorded_config)),
    Case("record-overlay-path-out-of-its-folder", "record", config_record(overlay_path_out)),
    Case("record-with-an-overlay-checked-without-it", "record", record_with_overlay, whole_stdout=True),
    Case(
        "record-too-large-for-a-lowered-limit",
        "record",
        record(lambda r: json.dumps(r, indent=2) + " " * (2 << 20)),
        env={"GPUSIZER_MAX_FILE_MB": "1"},
    ),
    # output paths
    Case("output-onto-a-directory", "output", output("-o", "<tmp>", make=None)),
    Case("output-to-dev-full", "output", output("-o", "/dev/full")),
    Case("output-into-a-missing-folder", "output", output("-o", "<tmp>/missing/report.txt")),
    Case("output-below-a-file", "output", output("-o", "<tmp>/file/report.txt", make=a_file)),
    Case("standard-output-full", "output", output(), stdout="/dev/full"),
    Case(
        "record-below-a-file-still-delivers",
        "output",
        output("--record", "<tmp>/file/records", make=a_file),
        show_stdout=True,
    ),
    Case("two-workloads-of-one-name", "output", same_names, show_files="out"),
    Case("batch-with-one-bad-file", "output", batch("-o", "<tmp>/out"), show_files="out"),
    Case("batch-with-one-bad-file-to-standard-output", "output", batch(), show_stdout=True),
    Case(
        "output-replaces-a-link-not-its-target",
        "output",
        output("-o", "<tmp>/report.txt", make=link_to_a_read_only_file),
        show_file=("report.txt", "elsewhere/keep.txt"),
    ),
    Case(
        "output-replaces-a-dangling-link",
        "output",
        output("-o", "<tmp>/report.txt", make=dangling_link),
        show_file=("report.txt", "nowhere"),
    ),
    Case(
        "output-keeps-the-mode-of-the-file-it-replaces",
        "output",
        output("-o", "<tmp>/report.txt", make=file_of_mode_640),
        show_file=("report.txt",),
    ),
    Case("output-to-standard-output-into-a-pipe", "output", output("-o", "/dev/stdout"), show_stdout=True),
    Case(
        "output-to-standard-output-appended-by-the-shell",
        "output",
        output("-o", "/dev/stdout", make=earlier_log),
        stdout="<tmp>/log.txt",
        append=True,
        show_file=("log.txt",),
    ),
    Case(
        "output-of-several-reports-to-standard-output",
        "output",
        output_then("-o", "/dev/stdout", "--format", "json"),
        show_stdout=True,
    ),
    Case("output-to-a-descriptor-that-is-not-open", "output", output("-o", "/dev/fd/9")),
    Case("key-readable-by-others", "output", loose_key),
    Case("key-too-short", "output", short_key),
]
