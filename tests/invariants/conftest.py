"""Print the counts of every invariant sweep a test session ran, pass or fail."""

from __future__ import annotations

from typing import Any

from .runner import REPORTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for report in REPORTS:
        terminalreporter.write_sep("-", f"invariant sweep: tier {report.tier}")
        terminalreporter.write_line(report.counts())
