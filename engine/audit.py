"""Audit commands: decision records (write, verify) and rulebase diffs."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .errors import GpusizerError
from .report import quantity


def _fmt(v) -> str:
    return "(none)" if v is None else quantity(v)


def cmd_verify(args) -> int:
    from .api import Recommender
    from .authoring import dirs
    from .record import Tampered, read, verify

    try:
        rec = read(Path(args.record))
    except Tampered as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    report = verify(rec, Recommender(*dirs(args)))
    if args.format == "json":
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    elif report["same"]:
        print(f"same decision: {rec['workload']['name']} (recorded {rec['created']}, "
              f"rulebase then {report['rulebase_then'][:12]}, now {report['rulebase_now'][:12]})")
    else:
        print(f"changed decision: {rec['workload']['name']} (recorded {rec['created']})")
        for attr, ch in report["changed"].items():
            print(f"  {attr}: {_fmt(ch['old'])} -> {_fmt(ch['new'])}")
        for label, key in (("rules added", "rules_added"), ("rules removed", "rules_removed"),
                           ("rules edited", "rules_edited")):
            if report[key]:
                print(f"  {label}: {', '.join(report[key])}")
        print(f"  caused by: {', '.join(report['responsible']) or 'no rule that fired changed (a knowledge change)'}")
    return 0 if report["same"] else 1


def cmd_diff(args) -> int:
    from .api import Recommender
    from .authoring import _stack, dirs
    from .record import build, rule_hashes

    shipped_rules, knowledge = dirs(args)
    a = Recommender(_stack(shipped_rules, [Path(args.rules_a)]), knowledge)
    b = Recommender(_stack(shipped_rules, [Path(args.rules_b)]), knowledge)
    ha, hb = rule_hashes(a.rulebase), rule_hashes(b.rulebase)
    changed_rules = sorted(r for r in set(ha) | set(hb) if ha.get(r, {}).get("sha256") != hb.get(r, {}).get("sha256"))
    out = {"rules_changed": changed_rules, "workloads": []}
    failed = False
    for name in args.files:
        try:
            ra, rb_ = build(a.recommend(name)), build(b.recommend(name))
        except GpusizerError as exc:
            print(exc.render(), file=sys.stderr)
            failed = True
            continue
        ca, cb = ra["conclusions"], rb_["conclusions"]
        changes = {k: {"a": ca.get(k), "b": cb.get(k)} for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)}
        fired = {f["rule"] for f in ra["firings"]} | {f["rule"] for f in rb_["firings"]}
        out["workloads"].append({"file": name, "changes": changes,
                                 "responsible": sorted(r for r in changed_rules if r in fired)})
    if args.format == "json":
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        print(f"rules that differ: {', '.join(changed_rules) or 'none'}")
        for w in out["workloads"]:
            if not w["changes"]:
                print(f"{w['file']}: same recommendation")
                continue
            print(f"{w['file']}: {len(w['changes'])} conclusion(s) change")
            for k, ch in w["changes"].items():
                print(f"  {k}: {_fmt(ch['a'])} -> {_fmt(ch['b'])}")
            print(f"  rules responsible: {', '.join(w['responsible']) or 'none that fired'}")
    if failed:
        return 2
    return 1 if any(w["changes"] for w in out["workloads"]) else 0
