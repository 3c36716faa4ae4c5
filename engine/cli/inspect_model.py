"""``gpusizer inspect-model FILE``: what gpusizer understood of a model.

FILE is a workload, or a document that the workload schema's ``x-import`` annotation reads (its
``path`` key), such as a model's configuration: it is wrapped in the annotation's ``inspect``
workload. The answer lists every input of the importing object - read from the document, taken
from a catalog, inferred (and from what), or defaulted - and every conclusion the rules draw under
the same name (``<object>.``), each with the rule that drew it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import ExitCode, InputError
from . import dump_json, recommender, rulebase_args, write_output

ORIGINS = (
    ("config", "Read from the document"),
    ("catalog", "From the catalog"),
    ("workload", "Given in the workload"),
    ("inferred", "Inferred"),
    ("default", "Defaults"),
)


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="show what gpusizer reads, infers and concludes about a model")
    p.add_argument(
        "file", metavar="FILE", help="a workload, or a document an import mapping reads (a model's configuration)"
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    rulebase_args(p)


def _importer(schema: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The object the schema lets a document fill, and its x-import annotation."""
    for key, node in schema.get("properties", {}).items():
        spec = node.get("x-import") if isinstance(node, dict) else None
        if spec and spec.get("path"):
            return key, spec
    raise InputError(
        "the workload schema names no object that reads documents (x-import with a path)",
        help="give a workload file instead",
    )


def _workload(path: Path, schema: dict[str, Any]) -> tuple[Any, str]:
    """The workload to run for FILE, and the object to show."""
    obj, spec = _importer(schema)
    if path.suffix.lower() in (".yaml", ".yml"):
        return path, obj
    workload = dict(spec.get("inspect", {}))
    if "name" in schema.get("required", []):
        workload["name"] = path.stem
    workload[obj] = {spec["path"]: str(path)}
    return workload, obj


def report(result: Any, obj: str, shown: str) -> dict[str, Any]:
    """The inputs and conclusions under ``<obj>.``, as plain data."""
    prefix = f"{obj}."
    rb = result.rulebase
    inputs = {
        a: {"value": iv.value, "unit": result.unit(a), "origin": iv.origin, "detail": iv.detail}
        for a, iv in result.outcome.inputs.items()
        if a.startswith(prefix)
    }
    concluded = {}
    for a, c in sorted(result.conclusions.items()):
        if not a.startswith(prefix):
            continue
        e = result.explain(a)
        concluded[a] = {
            "value": c.value,
            "unit": result.unit(a),
            "rule": e.get("rule"),
            "summary": rb.rules[e["rule"]].rule.summary if e.get("rule") in rb.rules else None,
        }
    return {"file": shown, "object": obj, "inputs": inputs, "conclusions": concluded}


def text(doc: dict[str, Any]) -> str:
    from ..format import quantity

    prefix = f"{doc['object']}."
    lines = [f"{doc['object']} of {doc['file']}: what gpusizer read, inferred and concluded", ""]
    for origin, title in ORIGINS:
        rows = [(a, v) for a, v in doc["inputs"].items() if v["origin"] == origin]
        if not rows:
            continue
        lines.append(title)
        for a, v in rows:
            lines.append(f"  {a[len(prefix) :]:34s} {quantity(v['value'], v['unit'])}")
            if origin != "default":
                lines.append(f"      {v['detail']}")
        lines.append("")
    if doc["conclusions"]:
        lines.append("Concluded by the rules")
        for a, c in doc["conclusions"].items():
            lines.append(f"  {a[len(prefix) :]:34s} {quantity(c['value'], c['unit'])}")
            lines.append(f"      {c['rule']}: {c['summary']}")
        lines.append("")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    with recommender(args) as rec:
        workload, obj = _workload(path, rec.rulebase.inputs.schema)
        result = rec.recommend(workload)
        doc = report(result, obj, args.file)
    write_output(dump_json(doc) if args.format == "json" else text(doc), None)
    return ExitCode.OK
