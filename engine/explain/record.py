"""Decision records: what was decided, from what, by which rules; signed, and verified later.

A record holds the workload as given (its text, never a path), every other input the decision
read (the documents its keys imported, such as a file a key names, and the files of every
rule or knowledge directory laid over the shipped ones: each by its sha256 and its whole text),
the defaults applied, the version, the rulebase's hash and every rule's own hash, every firing
and conclusion, and a timestamp (SOURCE_DATE_EPOCH fixes it, for reproducible records). A record
is therefore checked anywhere: the files it names need not be where they were.

What a record can promise, and what it cannot:

* ``record_sha256`` covers everything else in it. It catches damage, not intent: anyone who edits
  a record can compute it again.
* ``signature`` (optional) is an HMAC-SHA256 over the same bytes with a key the user holds (a
  file of at least 32 bytes, see ``gpusizer audit keygen``). Only a holder of the key can write
  a record that verifies, so a signed record that verifies was written by a key holder and not
  changed since. Anyone who can check an HMAC can also make one: the key is a shared secret of
  whoever writes and checks records, not a proof of origin to outsiders (for that, sign the
  record file with a public-key tool; the README says how).
* Re-running is a check of its own: with the very rulebase a record names, gpusizer reaches the
  very decision it records (runs are deterministic), so a record that names the rulebase it is
  checked against and records another decision was altered, signed or not.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..load.schema import check, engine_schema, valid
from ..load.yamlsrc import Doc, decode, parse, parse_json, read_bytes
from .diff import compare, responsible, rule_changes
from .result import Result

FORMAT = 3  # 1: unsigned, before signatures; 2: without the inputs beside the workload (both still read)
ALGORITHM = "hmac-sha256"
KEY_ENV = "GPUSIZER_RECORD_KEY_FILE"
MIN_KEY_BYTES = 32


def plain(value: Any) -> Any:
    """Values as JSON carries them (tuples to lists, mappings to dicts), floats kept exact."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def rule_hashes(rb: Any) -> dict[str, dict[str, str]]:
    """Each rule's file and the sha256 of its text (and of the bases it extends)."""
    return {
        rid: {"file": r.rule.file, "sha256": r.rule.sha256, **({"overlay": r.rule.overlay} if r.rule.overlay else {})}
        for rid, r in sorted(rb.rules.items())
    }


# -- keys ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """A signing key: its secret bytes and the id records name it by."""

    secret: bytes
    file: str

    @property
    def id(self) -> str:
        """16 hex digits naming the key (a hash of it; the key cannot be recovered from it)."""
        return hashlib.sha256(b"gpusizer record key\0" + self.secret).hexdigest()[:16]

    def sign(self, body: bytes) -> str:
        """The HMAC-SHA256 of a record's canonical bytes, in hex."""
        return hmac.new(self.secret, body, hashlib.sha256).hexdigest()


def read_key(path: str | os.PathLike[str]) -> Key:
    """A key file: at least 32 bytes (surrounding whitespace ignored), readable by its owner only."""
    name = os.fspath(path)
    raw = read_bytes(name, name, "workload").strip()
    try:
        mode = os.stat(path).st_mode
    except OSError:  # pragma: no cover - read_bytes just read it
        mode = 0
    if os.name == "posix" and mode & 0o077:
        raise InputError(
            f"the key file is readable by others (mode {stat.S_IMODE(mode):o})",
            file=name,
            help=f"a signing key is a secret: chmod 600 {name}",
        )
    if len(raw) < MIN_KEY_BYTES:
        raise InputError(
            f"the key file holds {len(raw)} bytes; a key needs at least {MIN_KEY_BYTES}",
            file=name,
            help="make a key with 'gpusizer audit keygen FILE'",
        )
    return Key(raw, name)


def key_from(option: str | None) -> Key | None:
    """The key named by an option, else by $GPUSIZER_RECORD_KEY_FILE, else none."""
    path = option or os.environ.get(KEY_ENV)
    return read_key(path) if path else None


def new_key_text() -> str:
    """A fresh key: 32 random bytes, written as 64 hex digits."""
    return secrets.token_hex(32) + "\n"


# -- writing -------------------------------------------------------------------------------------


def build(result: Result, key: Key | None = None) -> dict[str, Any]:
    """The decision record of one recommendation, signed when a key is given."""
    from .. import __version__
    from ..load.loader import overlay_files

    rb, w = result.rulebase, result.workload
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    stamp = time.gmtime(int(epoch)) if epoch and epoch.isdigit() else time.gmtime()
    body = {
        "record": FORMAT,
        "gpusizer": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", stamp),
        "workload": {"name": w.name, "file": w.file, "sha256": w.sha256, "text": w.text},
        "inputs": {
            "documents": [dict(d) for d in w.documents],
            "overlays": overlay_files(rb.rule_dirs, rb.knowledge_dirs, rb.files),
        },
        "defaults": {
            a: {"value": plain(iv.value), "origin": iv.origin, "detail": iv.detail}
            for a, iv in result.outcome.inputs.items()
            if iv.origin in ("default", "catalog")
        },
        "rulebase": {"sha256": rb.sha256, "rules": rule_hashes(rb), "overlays": plain(rb.overlays)},
        "firings": [
            {
                "rule": f.rule,
                "stratum": f.stratum,
                "inputs": plain(f.attrs),
                "items": {a: list(v) for a, v in sorted(f.items.items())},
                "outputs": plain(f.outputs),
            }
            for f in result.firings
        ],
        "conclusions": {a: plain(c.value) for a, c in sorted(result.conclusions.items())},
    }
    canonical = _canonical(body)
    rec = dict(body, record_sha256=hashlib.sha256(canonical).hexdigest())
    if key is not None:
        rec["signature"] = {"alg": ALGORITHM, "key_id": key.id, "value": key.sign(canonical)}
    return rec


def dumps(rec: dict[str, Any]) -> str:
    """A record as the file holds it."""
    return json.dumps(rec, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def file_name(rec: dict[str, Any]) -> str:
    """The name of a record's file: the workload's name (made safe) and the start of its sha256."""
    name = rec["workload"]["name"]
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)[:60].lstrip(".") or "workload"
    return f"{safe}-{rec['workload']['sha256'][:12]}.json"


# -- reading and checking ------------------------------------------------------------------------


class Tampered(InputError):
    """The record was changed, is malformed, or cannot be verified (exit code 2)."""


@dataclass(frozen=True)
class Seal:
    """What a record's seal says: 'signed' (and intact, key id given) or 'unsigned'."""

    status: str
    key_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The seal as a JSON object."""
        return {"status": self.status, "key_id": self.key_id}


def read(path: Path, key: Key | None = None, *, require_signature: bool = False) -> tuple[dict[str, Any], Seal]:
    """A record, checked for shape, integrity and signature; Tampered when any check fails."""
    name = str(path)
    text = decode(read_bytes(path, name, "record"), name)
    rec = parse_json(text, name, "record")
    _shape(rec, text, name)
    body = {k: v for k, v in rec.items() if k not in ("record_sha256", "signature")}
    canonical = _canonical(body)
    w = rec["workload"]
    if hashlib.sha256(w["text"].encode("utf-8")).hexdigest() != w["sha256"]:
        raise Tampered(
            "the recorded workload text does not match its sha256",
            file=name,
            help="the record was changed after it was written; keep records read-only",
        )
    actual = hashlib.sha256(canonical).hexdigest()
    if not hmac.compare_digest(actual, rec["record_sha256"]):
        raise Tampered(
            f"the record was changed after it was written (sha256 {actual[:12]}, recorded {rec['record_sha256'][:12]})",
            file=name,
            help="a record cannot be edited; write a new one with 'gpusizer recommend --record'",
        )
    _inputs_intact(rec, name)
    seal = _check_signature(rec, canonical, key, name)
    if seal.status == "unsigned" and require_signature:
        raise Tampered(
            "the record is not signed, and a signature is required",
            file=name,
            help="write records with 'gpusizer recommend --record DIR --key FILE'",
        )
    _consistent(rec, name)
    return rec, seal


def _shape(rec: Any, text: str, name: str) -> None:
    """The record has every key, each of the right kind; an error at the first that is not."""
    schema = engine_schema("record")
    if valid(rec, schema):
        return
    try:
        doc = parse(text, name, "record")  # positions (JSON is YAML); the values are the JSON's
        doc.data = rec
    except InputError:  # pragma: no cover - strict JSON that YAML cannot read: no positions
        doc = Doc(name, text, rec)
    first = check(doc, schema, "a decision record")[0].first
    raise Tampered(
        diagnostics=[
            replace(
                first,
                message=f"not a valid decision record: {first.message}",
                help="give a file written by 'gpusizer recommend --record DIR', unchanged",
            )
        ]
    )


def _inputs_intact(rec: dict[str, Any], name: str) -> None:
    """Every recorded document and overlay file matches its sha256, and names a plain relative path."""
    inputs = rec.get("inputs") or {}
    for d in inputs.get("documents", []):
        if hashlib.sha256(d["text"].encode("utf-8")).hexdigest() != d["sha256"]:
            raise Tampered(
                f"the recorded {d['key']} document ({d['file']}) does not match its sha256: it was changed "
                "after the record was written",
                file=name,
                help="the record was altered; compare it with a fresh 'gpusizer recommend --record'",
            )
    for o in inputs.get("overlays", []):
        if not _plain_name(o["name"]):
            raise Tampered(
                f"the recorded overlay name {o['name']!r} is not a folder name",
                file=name,
                help="the record was altered or forged; do not trust it",
            )
        for f in o["files"]:
            parts = f["path"].split("/")
            if not all(_plain_name(p) for p in parts):
                raise Tampered(
                    f"the recorded overlay file {f['path']!r} is not a plain relative path",
                    file=name,
                    help="the record was altered or forged; do not trust it",
                )
            if hashlib.sha256(f["text"].encode("utf-8")).hexdigest() != f["sha256"]:
                raise Tampered(
                    f"the recorded overlay file {o['name']}/{f['path']} does not match its sha256: it was changed "
                    "after the record was written",
                    file=name,
                    help="the record was altered; compare it with a fresh 'gpusizer recommend --record'",
                )


def _plain_name(part: str) -> bool:
    return bool(part) and part not in (".", "..") and "/" not in part and "\\" not in part and "\0" not in part


def materialize_overlays(rec: dict[str, Any], folder: Path) -> tuple[list[Path], list[Path]]:
    """The overlay directories a record carries, written under ``folder`` as they were (each in a
    folder of its own, under its own name, so that the rulebase's hash comes out the same).
    """
    rules: list[Path] = []
    knowledge: list[Path] = []
    for i, o in enumerate((rec.get("inputs") or {}).get("overlays", [])):
        root = folder / str(i) / o["name"]
        root.mkdir(parents=True)
        for f in o["files"]:
            path = root.joinpath(*f["path"].split("/"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f["text"].encode("utf-8"))
        (rules if o["kind"] == "rules" else knowledge).append(root)
    return rules, knowledge


def _check_signature(rec: dict[str, Any], canonical: bytes, key: Key | None, name: str) -> Seal:
    sig = rec.get("signature")
    if sig is None:
        return Seal("unsigned")
    if key is None:
        raise Tampered(
            f"the record is signed (key {sig['key_id']}), and no key was given to check it",
            file=name,
            help=f"give the key file with --key FILE (or ${KEY_ENV})",
        )
    if not hmac.compare_digest(sig["key_id"], key.id):
        raise Tampered(
            f"the record is signed with another key ({sig['key_id']}; yours, {key.file}, is {key.id})",
            file=name,
            help="check it with the key it was signed with; a record signed by another key cannot be verified here",
        )
    if not hmac.compare_digest(sig["value"], key.sign(canonical)):
        raise Tampered(
            "the record's signature does not match its contents: it was changed after it was signed",
            file=name,
            help="a record cannot be edited; write a new one with 'gpusizer recommend --record --key'",
        )
    return Seal("signed", key.id)


def _consistent(rec: dict[str, Any], name: str) -> None:
    """Every conclusion comes from a recorded firing of a recorded rule."""
    written = {a for f in rec["firings"] for a in f["outputs"]}
    rules = rec["rulebase"]["rules"]
    for f in rec["firings"]:
        if f["rule"] not in rules:
            raise Tampered(
                f"the record is inconsistent: rule '{f['rule']}' fired, but the rulebase it names has no such rule",
                file=name,
                help="the record was altered or forged",
            )
    for attr in rec["conclusions"]:
        if attr not in written:
            raise Tampered(
                f"the record is inconsistent: it concludes '{attr}', but no recorded firing wrote it",
                file=name,
                help="the record was altered or forged",
            )


def verify(rec: dict[str, Any], recommender: Any, name: str = "<record>") -> dict[str, Any]:
    """Re-run the recorded workload with today's rulebase; what changed and which rules caused it.

    When the record names the very rulebase (and gpusizer version) it is checked against, the
    re-run must reproduce it exactly; a difference then means the record was altered (Tampered).
    """
    from .. import __version__

    documents = {d["key"]: d for d in (rec.get("inputs") or {}).get("documents", [])}
    result = recommender.recommend_text(rec["workload"]["text"], f"{name} (recorded workload)", documents)
    now = build(result)
    same_rulebase = rec["rulebase"]["sha256"] == now["rulebase"]["sha256"]
    if (
        same_rulebase
        and rec["gpusizer"] == __version__
        and (
            _canonical(rec["conclusions"]) != _canonical(now["conclusions"])
            or _canonical(rec["firings"]) != _canonical(now["firings"])
            or _canonical(rec["rulebase"]["rules"]) != _canonical(now["rulebase"]["rules"])
        )
    ):
        raise Tampered(
            "the record names the rulebase it is checked against, and that rulebase decides otherwise: "
            "the record was altered or forged",
            file=name,
            help="compare it with a fresh 'gpusizer recommend --record'; do not trust this record",
        )
    units = {a: result.unit(a) for a in set(rec["conclusions"]) | set(now["conclusions"])}
    changes = compare(rec["conclusions"], now["conclusions"], units)
    old_r = {r: x["sha256"] for r, x in rec["rulebase"]["rules"].items()}
    new_r = {r: x["sha256"] for r, x in now["rulebase"]["rules"].items()}
    rules = rule_changes(old_r, new_r)
    fired = {f["rule"] for f in rec["firings"]} | {f["rule"] for f in now["firings"]}
    changed_rules = rules["rules_added"] + rules["rules_removed"] + rules["rules_edited"]
    moved = changed_inputs(rec)
    return {
        "same": not changes and not moved,
        "changes": [c.as_dict() for c in changes],
        "inputs_changed": moved,
        **rules,
        "responsible": responsible(changed_rules, fired),
        "rulebase_then": rec["rulebase"]["sha256"],
        "rulebase_now": now["rulebase"]["sha256"],
        "same_rulebase": same_rulebase,
        "gpusizer_then": rec["gpusizer"],
        "gpusizer_now": __version__,
    }


def changed_inputs(rec: dict[str, Any]) -> list[dict[str, str]]:
    """The recorded inputs whose file is still where it was read and now holds other bytes: the
    workload file and each imported document. A file that is gone (or moved, or on another
    machine) is no change: the record carries it.
    """
    out = []
    w = rec["workload"]
    found = [("workload", w["file"], w["sha256"])] + [
        (d["key"], d["file"], d["sha256"]) for d in (rec.get("inputs") or {}).get("documents", [])
    ]
    for key, file, sha in found:
        if not file or file.startswith("<"):
            continue
        try:
            raw = read_bytes(file, file, "document")
        except InputError:
            continue
        now = hashlib.sha256(raw).hexdigest()
        if now != sha:
            out.append({"key": key, "file": file, "sha256_then": sha, "sha256_now": now})
    return out


__all__ = [
    "ALGORITHM",
    "FORMAT",
    "KEY_ENV",
    "Key",
    "Seal",
    "Tampered",
    "build",
    "changed_inputs",
    "dumps",
    "file_name",
    "key_from",
    "materialize_overlays",
    "new_key_text",
    "plain",
    "read",
    "read_key",
    "verify",
]
