"""The generated rule reference (docs/rules.md), from the rulebase through a template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..lang.ir import Formula
from ..load.imports import Inference
from ..load.loader import GUIDANCE_FILE
from ..load.yamlsrc import load
from ..plan.rulebase import Rulebase
from ..report.render import environment
from .describe import rule_record


def render_docs(rb: Rulebase) -> str:
    """The rule reference (docs/rules.md) as Markdown."""
    records = [rule_record(rb, r) for r in sorted(rb.rules.values(), key=lambda r: (r.rule.area, r.id))]
    guidance = None
    path = Path(rb.rule_dirs[0]) / GUIDANCE_FILE
    if path.is_file():
        guidance = load(path).data
    attributes = [
        {
            "name": a.name,
            "type": a.type,
            "unit": a.unit,
            "combine": a.combine,
            "description": a.description,
            "input": a.input,
            "origin": a.origin,
            "writers": list(rb.writers.get(a.name, ())),
        }
        for a in sorted(rb.attributes.values(), key=lambda a: a.name)
    ]
    return str(
        environment()
        .get_template("rules-doc.md.j2")
        .render(
            rules=records,
            guidance=guidance,
            attributes=attributes,
            known=set(rb.rules),
            formulas=[formula_record(f) for _, f in sorted(rb.formulas.items())],
            inferences=[inference_record(i) for _, i in sorted(rb.inputs.inferences.items())],
        )
    )


def formula_record(f: Formula) -> dict[str, Any]:
    """A named formula as the reference shows it: its call, unit, meaning, expression and sources."""
    return {
        "name": f.name,
        "call": f"{f.name}({', '.join(p.name for p in f.params)})",
        "params": [{"name": p.name, "item": p.item, "description": p.description} for p in f.params],
        "value": f.value.source,
        "unit": f.unit,
        "description": f.description,
        "sources": [s.as_dict() for s in f.sources],
    }


def inference_record(inf: Inference) -> dict[str, Any]:
    """An inference file as the reference shows it: its steps in the order they run, then what it requires."""
    return {
        "name": inf.name,
        "file": inf.file,
        "steps": [
            {
                "id": s.id,
                "target": s.target,
                "when": s.when.source if s.when is not None else None,
                "lets": {n.name: " | ".join(e.source for e in n.exprs) for n in s.lets},
                "value": s.value.source,
                "because": s.because.source,
                "sources": [src.as_dict() for src in s.sources],
            }
            for s in inf.steps
        ],
        "requirements": [
            {"id": r.id, "inputs": list(r.keys), "message": r.message, "waiver": r.waiver} for r in inf.requirements
        ],
    }
