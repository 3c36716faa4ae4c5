"""Rule test cases: data files beside the rules, run one rule at a time."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..backends import Backend
from ..errors import GpusizerError, InputError, Problems
from ..load.schema import check, engine_schema
from ..load.yamlsrc import load
from ..plan.rulebase import Rulebase
from ..run.session import SessionRunner


@dataclass(frozen=True)
class Case:
    """One named case of a rule's test file: the facts given and the conclusions expected."""

    rule: str
    name: str
    given: Mapping[str, Any]
    expect: Mapping[str, Any]
    file: str
    line: int | None

    @property
    def id(self) -> str:
        """``<rule-id>::<case>``, the id pytest and ``gpusizer test`` show."""
        return f"{self.rule}::{self.name}"


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case: passed or not, why, and whether the rule fired."""

    case: Case
    passed: bool
    message: str = ""
    fired: bool = False


def load_cases(rb: Rulebase) -> list[Case]:
    """Every rule's cases; a rule without a test file, or a malformed one, is an error."""
    cases, errors = collect_cases(rb)
    if errors:
        raise Problems(errors)
    return cases


def collect_cases(rb: Rulebase) -> tuple[list[Case], list[GpusizerError]]:
    """Every rule's cases and, separately, every problem with them (each naming its rule)."""
    cases: list[Case] = []
    errors: list[GpusizerError] = []
    for planned in rb.rules.values():
        mark = len(errors)
        _cases_of(rb, planned.rule, cases, errors)
        for i in range(mark, len(errors)):
            errors[i] = InputError(diagnostics=[replace(d, rule=planned.id) for d in errors[i].diagnostics])
    return cases, errors


def _cases_of(rb: Rulebase, rule: Any, cases: list[Case], errors: list[GpusizerError]) -> None:
    if not rule.test_file:
        errors.append(
            InputError(
                f"rule '{rule.id}' has no test cases",
                file=rule.file,
                line=1,
                col=1,
                help=f"add {Path(rule.file).with_suffix('').name}.test.yaml beside it "
                "with a case where it fires and one where it stays silent",
            )
        )
        return
    try:
        doc = load(rule.test_file, str(Path(rule.file).with_name(Path(rule.test_file).name)))
    except GpusizerError as exc:
        errors.append(exc)
        return
    found = check(doc, engine_schema("rule-test"), "rule test cases")
    if found:
        errors.extend(found)
        return
    if doc.data["rule"] != rule.id:
        errors.append(
            doc.error(("rule",), f"test file names rule '{doc.data['rule']}', not '{rule.id}'", f"set rule: {rule.id}")
        )
        return
    names: set[str] = set()
    for i, raw in enumerate(doc.data["cases"]):
        if raw["name"] in names:
            errors.append(
                doc.error(("cases", i, "name"), f"duplicate case name '{raw['name']}'", "give each case its own name")
            )
            continue
        names.add(raw["name"])
        for key in list(raw["given"]) + list(raw["expect"]):
            if key not in rb.attributes:
                errors.append(
                    doc.error(
                        ("cases", i),
                        f"case '{raw['name']}' names unknown attribute '{key}'",
                        "use attribute names from rules/_attributes.yaml or the workload schema",
                    )
                )
        cases.append(Case(rule.id, raw["name"], raw["given"], raw["expect"], doc.file, doc.where(("cases", i))[0]))
    if not any(c.expect for c in cases if c.rule == rule.id):
        errors.append(
            doc.error(
                ("cases",),
                f"rule '{rule.id}' has no case where it fires",
                "add a case whose expect names the rule's conclusions",
            )
        )
    if not any(not c.expect for c in cases if c.rule == rule.id):
        errors.append(
            doc.error(
                ("cases",),
                f"rule '{rule.id}' has no case where it stays silent",
                "add a case with expect: {} whose given facts do not satisfy 'when'",
            )
        )


def same(expected: Any, actual: Any, rel: float = 1e-9) -> bool:
    """Expected and actual values agree (numbers to a relative tolerance, booleans exactly)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(expected, actual, rel_tol=rel, abs_tol=1e-12)
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(expected[k], actual[k], rel) for k in expected)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(same(e, a, rel) for e, a in zip(expected, actual, strict=True))
    return bool(expected == actual)


class Runner:
    """Runs rule cases, each rule alone on its case's facts."""

    def __init__(self, rb: Rulebase, backend: Backend | None = None) -> None:
        self.rb = rb
        self.runner = SessionRunner(rb, backend, isolated=True)

    def run(self, case: Case) -> CaseResult:
        """Run one case: its rule alone, on its given facts."""
        try:
            got, firings = self.runner.run_rule(case.rule, case.given)
        except GpusizerError as exc:
            return CaseResult(case, False, exc.render())
        if same(dict(case.expect), got):
            return CaseResult(case, True, fired=bool(firings))
        return CaseResult(
            case,
            False,
            f"{case.file}:{case.line}: {case.id}: expected {dict(case.expect)!r}, got {got!r}",
            fired=bool(firings),
        )

    def close(self) -> None:
        """Release the rule engine."""
        self.runner.close()


@dataclass(frozen=True)
class Coverage:
    """Rule coverage of a run of cases: which rules fired, which stayed silent, which attributes were checked."""

    all_rules: set[str]
    fired: set[str]
    silent: set[str]
    checked_attrs: set[str]
    written_attrs: set[str]

    @property
    def never_fired(self) -> list[str]:
        """Rules no passing case made fire."""
        return sorted(self.all_rules - self.fired)

    @property
    def never_silent(self) -> list[str]:
        """Rules no passing case kept silent."""
        return sorted(self.all_rules - self.silent)

    @property
    def unchecked_attrs(self) -> list[str]:
        """Concluded attributes that no case's expect names."""
        return sorted(self.written_attrs - self.checked_attrs)

    @property
    def percent(self) -> float:
        """Share of rules that both fired and stayed silent."""
        covered = len(self.fired & self.silent)
        return 100.0 * covered / len(self.all_rules) if self.all_rules else 100.0


def run_all(rb: Rulebase, cases: list[Case] | None = None) -> tuple[list[CaseResult], Coverage]:
    """Run every case; coverage counts a rule as covered once it has fired and stayed silent."""
    cases = load_cases(rb) if cases is None else cases
    runner = Runner(rb)
    outcomes = []
    fired: set[str] = set()
    silent: set[str] = set()
    checked: set[str] = set()
    try:
        for case in cases:
            outcome = runner.run(case)
            outcomes.append(outcome)
            if outcome.passed:
                (fired if outcome.fired else silent).add(case.rule)
                checked.update(case.expect)
    finally:
        runner.close()
    return outcomes, Coverage(
        all_rules=set(rb.rules), fired=fired, silent=silent, checked_attrs=checked, written_attrs=set(rb.writers)
    )


@dataclass(frozen=True)
class WorkloadCase:
    """A shipped example and the conclusions it must keep (examples/expected/X.yaml)."""

    workload: str
    expect_file: str
    expect: Mapping[str, Any]

    @property
    def id(self) -> str:
        """``workload::<file stem>``, as ``gpusizer test`` shows it."""
        return f"workload::{Path(self.workload).stem}"


def workload_cases(folder: Path) -> list[WorkloadCase]:
    """``folder/X.yaml`` workloads with expected conclusions in ``folder/expected/X.yaml``."""
    cases = []
    for exp in sorted((folder / "expected").glob("*.yaml")):
        doc = load(exp)
        data = doc.data if isinstance(doc.data, dict) else {}
        if set(data) != {"expect"} or not isinstance(data["expect"], dict):
            raise InputError(
                "an expected-conclusions file holds one key, 'expect', mapping attributes to values",
                file=str(exp),
                line=1,
                col=1,
                help="e.g. expect: {gpu.count: 2}",
            )
        workload = folder / exp.name
        if not workload.is_file():
            raise InputError(
                f"no workload {workload} for these expectations",
                file=str(exp),
                line=1,
                col=1,
                help="name the file after a workload in the folder above",
            )
        cases.append(WorkloadCase(str(workload), str(exp), data["expect"]))
    return cases


def run_workload_case(recommender: Any, case: WorkloadCase) -> CaseResult:
    """Recommend for the workload and compare the expected conclusions."""
    fake = Case(
        rule="workload", name=Path(case.workload).stem, given={}, expect=case.expect, file=case.expect_file, line=1
    )
    try:
        result = recommender.recommend(Path(case.workload))
    except GpusizerError as exc:
        return CaseResult(fake, False, exc.render())
    got = {k: result.get(k) for k in case.expect}
    if same(dict(case.expect), got):
        return CaseResult(fake, True)
    bad = {k: (case.expect[k], got[k]) for k in case.expect if not same(case.expect[k], got[k])}
    lines = [f"{case.expect_file}: {case.workload}:"] + [
        f"  {k}: expected {e!r}, got {g!r}" for k, (e, g) in bad.items()
    ]
    return CaseResult(fake, False, "\n".join(lines))
