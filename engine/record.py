"""Decision records: what was decided, from what, by which rules; verified later.

A record holds the workload as given, the defaults applied, the version, the
rulebase's hash and every rule's own hash, every firing and conclusion, and a
timestamp (SOURCE_DATE_EPOCH fixes it, for reproducible records). Its own
sha256 covers everything else in it, so a changed byte is detected.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from .errors import InputError
from .report import _plain
from .result import Result

FORMAT = 1


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def rule_hashes(rb) -> dict:
    return {rid: {"file": r.file, "sha256": hashlib.sha256(r.doc.text.encode("utf-8")).hexdigest(),
                  **({"overlay": r.overlay} if r.overlay else {})}
            for rid, r in sorted(rb.rules.items())}


def build(result: Result) -> dict:
    from . import __version__

    rb, w = result.rulebase, result.workload
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    stamp = time.gmtime(int(epoch)) if epoch and epoch.isdigit() else time.gmtime()
    body = {
        "record": FORMAT,
        "gpusizer": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", stamp),
        "workload": {"name": w.name, "file": w.file, "sha256": w.sha256, "text": w.text},
        "defaults": {a: {"value": _plain(iv.value), "origin": iv.origin, "detail": iv.detail}
                     for a, iv in result.outcome.inputs.items() if iv.origin != "workload"},
        "rulebase": {"sha256": rb.sha256, "rules": rule_hashes(rb), "overlays": rb.overlays},
        "firings": [{"rule": f.rule, "stratum": f.stratum, "inputs": _plain(f.attrs),
                     "items": {a: list(v) for a, v in sorted(f.items.items())}, "outputs": _plain(f.outputs)}
                    for f in result.firings],
        "conclusions": {a: _plain(c.value) for a, c in sorted(result.conclusions.items())},
    }
    body["record_sha256"] = hashlib.sha256(_canonical(body)).hexdigest()
    return body


def write(result: Result, folder: Path) -> Path:
    rec = build(result)
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in result.workload.name)[:60] or "workload"
    path = folder / f"{safe}-{rec['workload']['sha256'][:12]}.json"
    path.write_text(json.dumps(rec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


class Tampered(InputError):
    """The record does not match its own hash (exit code 2)."""


def read(path: Path) -> dict:
    try:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("record not found", file=str(path), help="give the path of a decision record") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Tampered(f"not a readable decision record: {exc}", file=str(path),
                       help="the file is damaged; restore it from where records are kept") from None
    if not isinstance(rec, dict) or rec.get("record") != FORMAT or "record_sha256" not in rec:
        raise Tampered("not a gpusizer decision record (format marker or hash missing)", file=str(path),
                       help="give a file written by 'gpusizer recommend --record DIR'")
    claimed = rec.pop("record_sha256")
    actual = hashlib.sha256(_canonical(rec)).hexdigest()
    if claimed != actual:
        raise Tampered(f"the record was changed after it was written (sha256 {actual[:12]}, "
                       f"recorded {str(claimed)[:12]})", file=str(path),
                       help="a record cannot be edited; write a new one with 'gpusizer recommend --record'")
    w = rec.get("workload", {})
    if hashlib.sha256(str(w.get("text", "")).encode("utf-8")).hexdigest() != w.get("sha256"):
        raise Tampered("the recorded workload text does not match its sha256", file=str(path),
                       help="the record is damaged")
    return rec


def verify(rec: dict, recommender) -> dict:
    """Re-run the recorded workload with today's rulebase; what changed and which rules caused it."""
    result = recommender.recommend(rec["workload"]["text"])
    now = build(result)
    old_c, new_c = rec["conclusions"], now["conclusions"]
    changed = {a: {"old": old_c.get(a), "new": new_c.get(a)}
               for a in sorted(set(old_c) | set(new_c)) if _canonical(old_c.get(a)) != _canonical(new_c.get(a))}
    old_r, new_r = rec["rulebase"]["rules"], now["rulebase"]["rules"]
    added = sorted(set(new_r) - set(old_r))
    removed = sorted(set(old_r) - set(new_r))
    edited = sorted(r for r in set(old_r) & set(new_r) if old_r[r]["sha256"] != new_r[r]["sha256"])
    fired_then = {f["rule"] for f in rec["firings"]}
    fired_now = {f["rule"] for f in now["firings"]}
    responsible = sorted(r for r in set(added) | set(removed) | set(edited) if r in fired_then | fired_now)
    return {"same": not changed, "changed": changed, "rules_added": added, "rules_removed": removed,
            "rules_edited": edited, "responsible": responsible,
            "rulebase_then": rec["rulebase"]["sha256"], "rulebase_now": now["rulebase"]["sha256"]}
