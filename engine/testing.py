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
    fired: bool = False


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
            got, firings = self.engine.run_rule(case.rule, case.given)
        except GpusizerError as exc:
            return Outcome(case, False, exc.render())
        if same(case.expect, got):
            return Outcome(case, True, fired=bool(firings))
        return Outcome(case, False, f"{case.file}:{case.line}: {case.id}: expected {case.expect!r}, got {got!r}",
                       fired=bool(firings))


@dataclass
class Coverage:
    all_rules: set
    fired: set
    silent: set
    checked_attrs: set
    written_attrs: set

    @property
    def never_fired(self) -> list:
        return sorted(self.all_rules - self.fired)

    @property
    def never_silent(self) -> list:
        return sorted(self.all_rules - self.silent)

    @property
    def unchecked_attrs(self) -> list:
        return sorted(self.written_attrs - self.checked_attrs)

    @property
    def percent(self) -> float:
        covered = len(self.fired & self.silent)
        return 100.0 * covered / len(self.all_rules) if self.all_rules else 100.0


def run_all(rb: Rulebase, cases: list[Case] | None = None) -> tuple[list[Outcome], Coverage]:
    """Run every case; coverage counts a rule as covered once it has fired and stayed silent."""
    cases = load_cases(rb) if cases is None else cases
    runner = Runner(rb)
    outcomes = []
    fired, silent, checked = set(), set(), set()
    for case in cases:
        outcome = runner.run(case)
        outcomes.append(outcome)
        if outcome.passed:
            (fired if outcome.fired else silent).add(case.rule)
            checked.update(case.expect)
    return outcomes, Coverage(all_rules=set(rb.rules), fired=fired, silent=silent, checked_attrs=checked,
                              written_attrs=set(rb.writers))


@dataclass
class WorkloadCase:
    workload: str
    expect_file: str
    expect: dict


def workload_cases(folder: Path) -> list[WorkloadCase]:
    """``folder/X.yaml`` workloads with expected conclusions in ``folder/expected/X.yaml``."""
    cases = []
    for exp in sorted((folder / "expected").glob("*.yaml")):
        doc = load(exp)
        data = doc.data if isinstance(doc.data, dict) else {}
        if set(data) != {"expect"} or not isinstance(data["expect"], dict):
            raise InputError("an expected-conclusions file holds one key, 'expect', mapping attributes "
                             "to values", file=str(exp), line=1, col=1, help="e.g. expect: {gpu.count: 2}")
        workload = folder / exp.name
        if not workload.is_file():
            raise InputError(f"no workload {workload} for these expectations", file=str(exp), line=1, col=1,
                             help="name the file after a workload in the folder above")
        cases.append(WorkloadCase(str(workload), str(exp), data["expect"]))
    return cases


def run_workload_case(recommender, case: WorkloadCase) -> Outcome:
    fake = Case(rule="workload", name=Path(case.workload).stem, given={}, expect=case.expect,
                file=case.expect_file, line=1)
    try:
        result = recommender.recommend(case.workload)
    except GpusizerError as exc:
        return Outcome(fake, False, exc.render())
    got = {k: result.get(k) for k in case.expect}
    if same(case.expect, got):
        return Outcome(fake, True)
    bad = {k: (case.expect[k], got[k]) for k in case.expect if not same(case.expect[k], got[k])}
    lines = [f"{case.expect_file}: {case.workload}:"] + [f"  {k}: expected {e!r}, got {g!r}" for k, (e, g) in bad.items()]
    return Outcome(fake, False, "\n".join(lines))
