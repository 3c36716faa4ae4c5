"""The JSON report: a stable document, the one thing every report format is rendered from."""

from __future__ import annotations

import json
from typing import Any

from ..explain.record import plain
from ..explain.result import Result

DOCUMENT_FORMAT = 1


def document(result: Result) -> dict[str, Any]:
    """Stable keys; every conclusion with its rule, source and inputs."""
    from .. import __version__

    rb = result.rulebase
    w = result.workload
    inputs = {}
    constants = {}
    for attr, iv in result.outcome.inputs.items():
        entry = {"value": plain(iv.value), "unit": result.unit(attr), "origin": iv.origin, "detail": iv.detail}
        if iv.origin == "constant":
            constants[attr] = entry
        else:
            inputs[attr] = entry
    read = {a for f in result.firings for a in f.attrs}
    conclusions = {}
    for attr in sorted(result.conclusions):
        a = rb.attributes[attr]
        if not a.report:
            continue
        step = result.explain(attr)
        first = step["binding"][0]
        conclusions[attr] = {
            "value": plain(step["value"]),
            "unit": result.unit(attr),
            "description": a.description,
            "rule": first["rule"],
            "summary": first["summary"],
            "source": first["sources"],
            "overlay": first["overlay"],
            "inputs": plain(first["inputs"]),
            "items": first["items"],
            "combine": a.combine,
            "note": step["note"],
            "contributions": [
                {"rule": x["rule"], "value": plain(x["value"]), "binding": x["binding"]}
                for x in step["binding"] + step["beaten"]
            ],
        }
    return {
        "gpusizer": __version__,
        "workload": {"name": w.name, "file": w.file},
        "input_sha256": w.sha256,
        "inputs": inputs,
        "constants": {k: v for k, v in sorted(constants.items()) if k in read},
        "conclusions": conclusions,
        "rulebase": {"rules": len(rb.rules), "sha256": rb.sha256, "overlays": plain(rb.overlays)},
        "firings": len(result.firings),
    }


def to_json(doc: Any) -> str:
    """The one way gpusizer writes JSON: indented, UTF-8, a newline at the end."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
