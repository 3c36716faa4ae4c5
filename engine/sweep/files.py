"""The sweep's summary table for a list of workload files (``gpusizer recommend FILE... --summary CSV``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .table import check_fields, summary_csv, table_config
from .worker import failed, values_row


def files_summary(rec: Any, files: Sequence[str]) -> str:
    """``summary.csv`` with one row per file, in the order given: the file, its status and the columns."""
    config = table_config()
    check_fields(config, rec.rulebase.attributes)
    fields = config.fields()
    width = max(4, len(str(len(files))))
    rows = []
    for i, name in enumerate(files, start=1):
        row: dict[str, Any] = {"case": f"c{i:0{width}d}", "vary": {"file": name}}
        try:
            row.update(values_row(rec.rulebase, rec.runner.run(rec.load(name)).values, fields))
        except Exception as exc:  # every file gets its row, whatever happened to it
            row.update(failed(exc))
        rows.append(row)
    return summary_csv(rows, ["file"], config.columns)
