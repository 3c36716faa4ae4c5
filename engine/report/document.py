"""The JSON report: a stable document, the one thing every report format is rendered from."""

from __future__ import annotations

import json
import re
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
        step = result.explain(attr, formulas=False)
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
    r"""The one way gpusizer writes JSON: indented, UTF-8, a newline at the end. The characters that
    reorder or break what a terminal or an editor shows (U+2028, U+2029, the bidirectional controls)
    are written as \u escapes, as JSON writes the control characters: the values are the same.
    """
    return _HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"


_HIDDEN = re.compile("[\x7f-\x9f\u2028\u2029\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")
