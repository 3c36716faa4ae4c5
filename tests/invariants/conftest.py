"""Print the counts of every invariant sweep a test session ran, pass or fail (under pytest-xdist, the
workers' sweeps are sent to the controller, which prints them)."""

from __future__ import annotations

from typing import Any

from .runner import REPORTS

_from_workers: list[str] = []


def pytest_sessionfinish(session: Any) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the counts to the controller
        workeroutput["invariant_sweeps"] = [(r.tier, r.counts()) for r in REPORTS]


def pytest_testnodedown(node: Any, error: Any) -> None:
    _from_workers.extend(getattr(node, "workeroutput", {}).get("invariant_sweeps", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for tier, counts in [(r.tier, r.counts()) for r in REPORTS] + _from_workers:
        terminalreporter.write_sep("-", f"invariant sweep: tier {tier}")
        terminalreporter.write_line(counts)
