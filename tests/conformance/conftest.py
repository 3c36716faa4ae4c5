"""A small rulebase of its own for the conformance suite, and one engine per backend.

Every test builds rules from YAML text over the attributes declared here and runs them under
each backend (``BACKENDS``); what a rule means is fixed by ``engine.lang.semantics`` and the
expectations below, so a future backend is held to exactly the same tests.
"""

import json
from pathlib import Path

import pytest

from conformance.backends import BACKENDS, make_backend
from engine import Recommender

ATTRIBUTES = """
attributes:
  hits:
    type: list
    items: string
    combine: union
    description: Ids of the test rules that fired.
  n.max:
    type: number
    combine: max
    description: max policy
  n.min:
    type: number
    combine: min
    description: min policy
  n.sum:
    type: number
    combine: sum
    description: sum policy
  n.single:
    type: number
    description: single policy
  n.prefer:
    type: string
    combine: prefer
    description: prefer policy
  picked:
    type: record
    combine: argmin
    key: [cost, size]
    first_by: outside
    fields: {id: string, cost: number, size: number, outside: boolean}
    description: argmin over records, first_by then a two-field key
  biggest:
    type: record
    combine: argmax
    key: size
    description: argmax over records
  ranked:
    type: record
    combine: argmin
    key: [unflagged, cost]
    fields: {id: string, unflagged: boolean, cost: number}
    description: argmin with a boolean field leading the key (false first)
  tallest:
    type: record
    combine: argmax
    key: [small, size]
    fields: {id: string, small: boolean, size: number}
    description: argmax with a boolean field leading the key (false first too)
  level1:
    type: number
    description: concluded in stratum 1
  level2:
    type: number
    description: concluded from level1
  tags:
    type: list
    items: string
    combine: union
    description: a concluded list (absent when no rule adds to it)
  text.out:
    type: string
    description: a concluded text
"""

CATALOG = """
catalog: thing
description: Things to join with.
fields:
  size: {type: number, description: size}
  label: {type: string, description: label}
  flag: {type: boolean, description: flag}
  cost: {type: number, description: cost}
items:
  - {id: a, name: A, size: 1, label: small, flag: true, cost: 10, source: {doc: test}}
  - {id: b, name: B, size: 5, label: mid, flag: false, cost: 10, source: {doc: test}}
  - {id: c, name: C, size: 10, label: big, cost: 3, source: {doc: test}}
"""

CONSTANTS = """
description: test constants
constants:
  ten: {value: 10, unit: things, description: ten, source: {doc: test}}
"""

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "x-attribute": "workload.name"},
        "x": {"type": "number"},
        "y": {"type": "number"},
        "s": {"type": "string"},
        "b": {"type": "boolean"},
        "sc": {"type": ["number", "string"]},
        "l": {"type": "array", "items": {"type": "string"}},
    },
}


FORMULAS = """
description: test formulas
formulas:
  double:
    params: {v: a number}
    value: v * 2
    unit: things
    description: twice a number
    source: {doc: test}
  bigger:
    params:
      t: {item: thing, description: a thing}
      by: how much bigger
    value: t.size + by + const.ten - 10
    unit: things
    description: a thing's size plus some (and a constant, to read one)
    source: {doc: test}
  twice_bigger:
    params:
      t: {item: thing, description: a thing}
    value: double(bigger(t, 0))
    unit: things
    description: a formula calling formulas, an item passed on
    source: {doc: test}
"""


def write_rulebase(root: Path, rules: dict[str, str], formulas: str | None = FORMULAS) -> tuple[Path, Path]:
    rdir, kdir = root / "rules", root / "knowledge"
    (rdir / "t").mkdir(parents=True, exist_ok=True)
    kdir.mkdir(parents=True, exist_ok=True)
    (rdir / "_attributes.yaml").write_text(ATTRIBUTES)
    for name, text in rules.items():
        (rdir / "t" / f"{name}.yaml").write_text(text)
    (kdir / "things.yaml").write_text(CATALOG)
    (kdir / "constants.yaml").write_text(CONSTANTS)
    if formulas is not None:
        (kdir / "formulas.yaml").write_text(formulas)
    (kdir / "workload.schema.json").write_text(json.dumps(SCHEMA))
    return rdir, kdir


def hit(rid: str, when: str, extra: str = "") -> str:
    """A rule that adds its own id to 'hits' when its conditions hold."""
    return f"id: {rid}\nsummary: test rule {rid}.\nwhen:\n{when}\n{extra}then:\n  hits: {rid}\nsource: {{doc: test}}\n"


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def build(tmp_path, backend):
    """build(rules) -> a Recommender on that rulebase, on this test's backend."""
    made = []

    def make(rules: dict[str, str]) -> Recommender:
        rdir, kdir = write_rulebase(tmp_path / f"rb{len(made)}", rules)
        rec = Recommender([rdir], [kdir], backend=make_backend(backend))
        made.append(rec)
        return rec

    yield make
    for rec in made:
        rec.close()
