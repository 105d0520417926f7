"""Ctrl-C during training: the first finishes the step under way, saves its checkpoint and stops (the
update, metrics and checkpoint stay whole, and ``--resume`` goes on from there); a second stops at once."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

log = logging.getLogger(__name__)


class TrainingInterrupted(Exception):
    """Training stopped on Ctrl-C after ``step``, whose checkpoint is in ``out``."""

    def __init__(self, step: int, out: Path):
        super().__init__(f"interrupted after step {step}")
        self.step, self.out = step, out


class StopAfterStep:
    """While active (in the main thread), SIGINT sets ``requested`` instead of raising; the loop checks
    it between steps. The handler before is put back at the first SIGINT and on exit."""

    def __init__(self) -> None:
        self.requested = False
        self._before = None

    def __enter__(self) -> StopAfterStep:
        if threading.current_thread() is threading.main_thread():
            self._before = signal.getsignal(signal.SIGINT) or signal.default_int_handler
            signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self.requested = True
        signal.signal(signal.SIGINT, self._before)
        log.warning("interrupted: finishing the step under way and saving its checkpoint (Ctrl-C again stops at once)")

    def __exit__(self, *exc) -> None:
        if self._before is not None and signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, self._before)
