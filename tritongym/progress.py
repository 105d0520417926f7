"""Progress of long work: a live bar on a terminal, and periodic log lines (done/total, elapsed, ETA)
when the output goes to a file or a job's log, where a bar would show nothing."""

from __future__ import annotations

import logging
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

log = logging.getLogger(__name__)


class ProgressReport:
    """``with ProgressReport(total, "evaluating", console) as progress: ... progress.advance()``."""

    def __init__(self, total: int, description: str, console: Console, interval_s: float = 30.0):
        self.total, self.description, self.console, self.interval_s = total, description, console, interval_s
        self.done = 0
        self._bar: Progress | None = None
        self._start = self._last_line = time.monotonic()

    def __enter__(self) -> ProgressReport:
        self._start = self._last_line = time.monotonic()
        if self.console.is_terminal:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=True)  # fmt: skip
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=self.total)
        else:
            log.info("%s: 0/%d", self.description, self.total)
        return self

    def line(self) -> str:
        """``evaluating: 30/120, 42 s elapsed, ETA 126 s``."""
        elapsed = time.monotonic() - self._start
        text = f"{self.description}: {self.done}/{self.total}, {elapsed:.0f} s elapsed"
        if 0 < self.done < self.total:
            text += f", ETA {elapsed / self.done * (self.total - self.done):.0f} s"
        return text

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
        elif self.done >= self.total or time.monotonic() - self._last_line >= self.interval_s:
            self._last_line = time.monotonic()
            log.info("%s", self.line())

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
