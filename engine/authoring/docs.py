"""The generated rule reference (docs/rules.md), from the rulebase through a template."""

from __future__ import annotations

from pathlib import Path

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
        .render(rules=records, guidance=guidance, attributes=attributes, known=set(rb.rules))
    )
