"""A progress bar on a terminal: done, rate and time left, redrawn at most ten times a second.

Quiet when the stream is not a terminal (a pipe, a file, CI), so logs get only the closing line.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def duration(seconds: float) -> str:
    """1h02m, 3m05s, 42s."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """``update()`` after each case; ``close()`` clears the bar."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None, width: int = 30) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = enabled if enabled is not None else bool(isatty and isatty())
        self.width = width
        self.done = 0
        self.failed = 0
        self.start = time.monotonic()
        self._drawn = 0.0

    def update(self, n: int = 1, failed: int = 0) -> None:
        """``n`` more cases finished, ``failed`` of them without an answer."""
        self.done += n
        self.failed += failed
        now = time.monotonic()
        if self.enabled and (now - self._drawn >= 0.1 or self.done >= self.total):
            self._drawn = now
            self.stream.write("\r" + self.line(now) + "\x1b[K")
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        """The bar as text: ``[#####.....] 50/100 50% 12.3 cases/s, 4s left, 1 failed``."""
        elapsed = max(1e-9, (now or time.monotonic()) - self.start)
        share = self.done / self.total if self.total else 1.0
        filled = int(self.width * share)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        text = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {share:.0%}"
        text += f" {rate:.1f} cases/s, {duration(left)} left"
        if self.failed:
            text += f", {self.failed} failed"
        return text

    def close(self) -> None:
        """Clear the bar's line."""
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
