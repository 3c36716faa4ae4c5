"""``gpusizer audit verify RECORD`` (exit 0 same, 1 changed, 2 tampered, malformed or unverifiable)
and ``gpusizer audit keygen FILE`` (a key to sign records with).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import ExitCode, OutputError
from . import dump_json, recommender, rulebase_args, write_output


def add_parser(sub: Any, name: str) -> None:
    au = sub.add_parser(name, help="decision records")
    asub = au.add_subparsers(dest="action", metavar="ACTION")
    asub.required = True
    av = asub.add_parser(
        "verify",
        help="check a decision record's seal and re-run it with today's rulebase; "
        "exit 0 same, 1 changed, 2 tampered, malformed or unverifiable",
    )
    av.add_argument("record", metavar="RECORD.json")
    av.add_argument("--format", choices=["text", "json"], default="text")
    av.add_argument(
        "--key", metavar="FILE", help="the key the record was signed with (default: $GPUSIZER_RECORD_KEY_FILE)"
    )
    av.add_argument("--require-signature", action="store_true", help="refuse (exit 2) a record that is not signed")
    rulebase_args(av)
    kg = asub.add_parser("keygen", help="write a new key for signing records (readable by you only)")
    kg.add_argument("keyfile", metavar="FILE")


def _keygen(path: Path) -> int:
    from ..explain.record import new_key_text, read_key

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise OutputError(
            f"{path} exists; a key is never overwritten", file=str(path), help="name a new file, or remove the old key"
        ) from None
    except OSError as exc:
        raise OutputError(
            f"cannot create {path}: {exc.strerror}", file=str(path), help="name a writable place"
        ) from None
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(new_key_text())
    key = read_key(path)
    write_output(f"key {key.id} written to {path} (keep it secret; sign with --key {path})\n", None)
    return ExitCode.OK


def run(args: argparse.Namespace) -> int:
    from ..explain.diff import change_lines
    from ..explain.record import key_from, read, verify

    if args.action == "keygen":
        return _keygen(Path(args.keyfile))
    rec, seal = read(Path(args.record), key_from(args.key), require_signature=args.require_signature)
    carried = (rec.get("inputs") or {}).get("overlays", [])
    if carried and not (args.rules or args.knowledge):
        # the overlays the decision was made with, as the record carries them: it checks anywhere
        import tempfile

        from ..explain.record import materialize_overlays

        with tempfile.TemporaryDirectory(prefix="gpusizer-record-") as tmp:
            rules, knowledge = materialize_overlays(rec, Path(tmp))
            args.rules, args.knowledge = [str(p) for p in rules], [str(p) for p in knowledge]
            with recommender(args) as r:
                report = verify(rec, r, args.record)
        report["overlays_from_record"] = True
    else:
        with recommender(args) as r:
            report = verify(rec, r, args.record)
    report["signature"] = seal.as_dict()
    if args.format == "json":
        write_output(dump_json(report), None)
        return ExitCode.OK if report["same"] else ExitCode.FINDINGS
    name = rec["workload"]["name"]
    if report["same"]:
        lines = [f"same decision: {name} (recorded {rec['created']})"]
    elif not report["changes"]:
        lines = [f"same decision, changed inputs: {name} (recorded {rec['created']})"]
    else:
        lines = [f"changed decision: {name} (recorded {rec['created']})"]
        lines += [f"  {line}" for ch in report["changes"] for line in change_lines(ch)]
        for label, key in (
            ("rules added", "rules_added"),
            ("rules removed", "rules_removed"),
            ("rules edited", "rules_edited"),
        ):
            if report[key]:
                lines.append(f"  {label}: {', '.join(report[key])}")
        lines.append(
            f"  caused by: {', '.join(report['responsible']) or 'no rule that fired changed (a knowledge change)'}"
        )
    for moved in report["inputs_changed"]:
        what = "the workload file" if moved["key"] == "workload" else f"{moved['key']}'s document"
        lines.append(
            f"  input changed: {what} {moved['file']} is not the one recorded (sha256 now {moved['sha256_now'][:12]}, "
            f"recorded {moved['sha256_then'][:12]}); the decision above was checked with the recorded copy: "
            "recommend it again for the file as it is now"
        )
    if report.get("overlays_from_record"):
        lines.append("overlays: the rule and knowledge files the record carries")
    if seal.status == "signed":
        lines.append(f"signature: valid (HMAC-SHA256, key {seal.key_id}): written by a holder of the key, unchanged")
    else:
        lines.append(
            "signature: none. The record is intact as far as its sha256 shows, but anyone can edit a record and "
            "compute that again; sign records with --key to rule that out"
        )
    then, now = report["rulebase_then"][:12], report["rulebase_now"][:12]
    if report["same_rulebase"]:
        lines.append(f"rulebase: {now}, the one the record names")
    else:
        lines.append(f"rulebase: {now}, another than the one the record names ({then})")
    if report["gpusizer_then"] != report["gpusizer_now"]:
        lines.append(f"gpusizer: {report['gpusizer_now']} (the record was written by {report['gpusizer_then']})")
    write_output("\n".join(lines) + "\n", None)
    return ExitCode.OK if report["same"] else ExitCode.FINDINGS
