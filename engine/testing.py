"""Rule test cases: data files beside the rules, run one rule at a time."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .errors import GpusizerError, InputError, Problems
from .rulebase import Rulebase
from .session import Engine
from .validate import check, engine_schema
from .yamlsrc import load


@dataclass
class Case:
    rule: str
    name: str
    given: dict
    expect: dict
    file: str
    line: int | None

    @property
    def id(self) -> str:
        return f"{self.rule}::{self.name}"


@dataclass
class Outcome:
    case: Case
    passed: bool
    message: str = ""


def load_cases(rb: Rulebase) -> list[Case]:
    """Every rule's cases; a rule without a test file, or a malformed one, is an error."""
    cases, errors = [], []
    for rule in rb.rules.values():
        if not rule.test_file:
            errors.append(InputError(f"rule '{rule.id}' has no test cases", file=rule.file, line=1, col=1,
                                     help=f"add {Path(rule.file).with_suffix('').name}.test.yaml beside it "
                                          "with a case where it fires and one where it stays silent"))
            continue
        doc = load(rule.test_file, str(Path(rule.file).with_name(Path(rule.test_file).name)))
        found = check(doc, engine_schema("rule-test"), "rule test cases")
        if found:
            errors.extend(found)
            continue
        if doc.data["rule"] != rule.id:
            errors.append(doc.error(("rule",), f"test file names rule '{doc.data['rule']}', not '{rule.id}'",
                                    f"set rule: {rule.id}"))
            continue
        names = set()
        for i, raw in enumerate(doc.data["cases"]):
            if raw["name"] in names:
                errors.append(doc.error(("cases", i, "name"), f"duplicate case name '{raw['name']}'",
                                        "give each case its own name"))
                continue
            names.add(raw["name"])
            for key in list(raw["given"]) + list(raw["expect"]):
                if key not in rb.attributes:
                    errors.append(doc.error(("cases", i), f"case '{raw['name']}' names unknown attribute '{key}'",
                                            "use attribute names from rules/_attributes.yaml or the workload schema"))
            cases.append(Case(rule.id, raw["name"], raw["given"], raw["expect"], doc.file,
                              doc.where(("cases", i))[0]))
        if not any(c.expect for c in cases if c.rule == rule.id):
            errors.append(doc.error(("cases",), f"rule '{rule.id}' has no case where it fires",
                                    "add a case whose expect names the rule's conclusions"))
        if not any(not c.expect for c in cases if c.rule == rule.id):
            errors.append(doc.error(("cases",), f"rule '{rule.id}' has no case where it stays silent",
                                    "add a case with expect: {} whose given facts do not satisfy 'when'"))
    if errors:
        raise Problems(errors)
    return cases


def same(expected, actual, rel: float = 1e-9) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(expected, actual, rel_tol=rel, abs_tol=1e-12)
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(expected[k], actual[k], rel) for k in expected)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(same(e, a, rel) for e, a in zip(expected, actual))
    return expected == actual


class Runner:
    def __init__(self, rb: Rulebase):
        self.rb = rb
        self.engine = Engine(rb, isolated=True)

    def run(self, case: Case) -> Outcome:
        try:
            got, _ = self.engine.run_rule(case.rule, case.given)
        except GpusizerError as exc:
            return Outcome(case, False, exc.render())
        if same(case.expect, got):
            return Outcome(case, True)
        return Outcome(case, False, f"{case.file}:{case.line}: {case.id}: expected {case.expect!r}, got {got!r}")
