"""``gpusizer new rule``: a rule and its test file that pass validate and test as they are."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import InputError

RULE_SKELETON = """\
id: {id}
summary: TODO one line saying what this rule concludes and why.
when:
  - task: training
then:
  warnings: "{id}: replace this conclusion"
source:
  doc: TODO the seed file, paper or datasheet this rule comes from
  quote: TODO a short quote that supports it
"""

TEST_SKELETON = """\
rule: {id}
cases:
  - name: fires-for-training
    given: {{task: training}}
    expect:
      warnings: ["{id}: replace this conclusion"]
  - name: silent-for-inference
    given: {{task: inference}}
    expect: {{}}
"""


def new_rule(root: Path, target: str) -> tuple[Path, Path]:
    """Write rules/AREA/ID.yaml and its test file under ``root``; their paths."""
    if "/" not in target:
        raise InputError(
            f"'{target}' needs an area: AREA/ID, e.g. ram/ram-site-floor", help="the area is the folder under rules/"
        )
    area, rid = target.split("/", 1)
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rid) or not re.fullmatch(r"[a-z0-9_-]+", area):
        raise InputError(
            f"'{target}': ids are kebab-case (lower-case words joined by '-')",
            help="e.g. gpusizer new rule ram/ram-site-floor",
        )
    folder = root / area
    rule_path, test_path = folder / f"{rid}.yaml", folder / f"{rid}.test.yaml"
    existing = list(root.rglob(f"{rid}.yaml"))
    if existing:
        raise InputError(
            f"rule '{rid}' already exists",
            file=str(existing[0]),
            help="rule ids are unique and permanent; pick another id",
        )
    folder.mkdir(parents=True, exist_ok=True)
    rule_path.write_text(RULE_SKELETON.format(id=rid), encoding="utf-8")
    test_path.write_text(TEST_SKELETON.format(id=rid), encoding="utf-8")
    return rule_path, test_path
