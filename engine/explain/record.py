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
from typing import Any

from ..errors import InputError
from .diff import compare, responsible, rule_changes
from .result import Result

FORMAT = 1


def plain(value: Any) -> Any:
    """Values as JSON carries them (tuples to lists, mappings to dicts), floats kept exact."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def rule_hashes(rb: Any) -> dict[str, dict[str, str]]:
    """Each rule's file and the sha256 of its text (and of the bases it extends)."""
    return {
        rid: {"file": r.rule.file, "sha256": r.rule.sha256, **({"overlay": r.rule.overlay} if r.rule.overlay else {})}
        for rid, r in sorted(rb.rules.items())
    }


def build(result: Result) -> dict[str, Any]:
    """The decision record of one recommendation."""
    from .. import __version__

    rb, w = result.rulebase, result.workload
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    stamp = time.gmtime(int(epoch)) if epoch and epoch.isdigit() else time.gmtime()
    body = {
        "record": FORMAT,
        "gpusizer": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", stamp),
        "workload": {"name": w.name, "file": w.file, "sha256": w.sha256, "text": w.text},
        "defaults": {
            a: {"value": plain(iv.value), "origin": iv.origin, "detail": iv.detail}
            for a, iv in result.outcome.inputs.items()
            if iv.origin in ("default", "catalog")
        },
        "rulebase": {"sha256": rb.sha256, "rules": rule_hashes(rb), "overlays": rb.overlays},
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
    body["record_sha256"] = hashlib.sha256(_canonical(body)).hexdigest()
    return body


def write(result: Result, folder: Path) -> Path:
    """Write the record into ``folder``; its path."""
    rec = build(result)
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in result.workload.name)[:60] or "workload"
    path = folder / f"{safe}-{rec['workload']['sha256'][:12]}.json"
    path.write_text(json.dumps(rec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


class Tampered(InputError):
    """The record does not match its own hash (exit code 2)."""


def read(path: Path) -> dict[str, Any]:
    """A record, checked against its own hash; Tampered when it does not match."""
    try:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("record not found", file=str(path), help="give the path of a decision record") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Tampered(
            f"not a readable decision record: {exc}",
            file=str(path),
            help="the file is damaged; restore it from where records are kept",
        ) from None
    if not isinstance(rec, dict) or rec.get("record") != FORMAT or "record_sha256" not in rec:
        raise Tampered(
            "not a gpusizer decision record (format marker or hash missing)",
            file=str(path),
            help="give a file written by 'gpusizer recommend --record DIR'",
        )
    claimed = rec.pop("record_sha256")
    actual = hashlib.sha256(_canonical(rec)).hexdigest()
    if claimed != actual:
        raise Tampered(
            f"the record was changed after it was written (sha256 {actual[:12]}, recorded {str(claimed)[:12]})",
            file=str(path),
            help="a record cannot be edited; write a new one with 'gpusizer recommend --record'",
        )
    w = rec.get("workload", {})
    if hashlib.sha256(str(w.get("text", "")).encode("utf-8")).hexdigest() != w.get("sha256"):
        raise Tampered(
            "the recorded workload text does not match its sha256", file=str(path), help="the record is damaged"
        )
    return rec


def verify(rec: dict[str, Any], recommender: Any) -> dict[str, Any]:
    """Re-run the recorded workload with today's rulebase; what changed and which rules caused it."""
    result = recommender.recommend_text(rec["workload"]["text"], rec["workload"].get("file") or "<record>")
    now = build(result)
    units = {
        a: result.rulebase.attributes[a].unit if a in result.rulebase.attributes else None
        for a in set(rec["conclusions"]) | set(now["conclusions"])
    }
    changes = compare(rec["conclusions"], now["conclusions"], units)
    old_r = {r: x["sha256"] for r, x in rec["rulebase"]["rules"].items()}
    new_r = {r: x["sha256"] for r, x in now["rulebase"]["rules"].items()}
    rules = rule_changes(old_r, new_r)
    fired = {f["rule"] for f in rec["firings"]} | {f["rule"] for f in now["firings"]}
    changed_rules = rules["rules_added"] + rules["rules_removed"] + rules["rules_edited"]
    return {
        "same": not changes,
        "changes": [c.as_dict() for c in changes],
        **rules,
        "responsible": responsible(changed_rules, fired),
        "rulebase_then": rec["rulebase"]["sha256"],
        "rulebase_now": now["rulebase"]["sha256"],
    }
