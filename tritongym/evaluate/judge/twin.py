"""The judge's twin: a process of the judge's own that stands in for a runner in the empty brackets.

Handing a batch from the judge's CUDA context to a runner's and back costs far more than a kernel
launch (the two contexts are time-sliced: hundreds of microseconds on an H100), so the candidate's
bracket holds that cost and the reference's does not. The twin measures it where no candidate can
touch it: it never imports candidate code, runs as the judge's user, and is asked to do exactly what a
runner does around a batch (wait on the judge's ``go`` event, record ``done``) with nothing in between.
The bracket it closes is the candidate's empty bracket, and two events of the judge's around its
part give the hand-off alone. Its cost measured before any candidate ran (``calibrate``, under the
GPU's exclusive lock) bounds what speed.py subtracts for the hand-off from the candidate's side
(timing.subtracted): a slower hand-off is charged to the candidate, never credited. The contexts
are time-sliced, so a hand-off waits for every other context with work on the GPU: speed.py also
hands to the twin and back after the other brackets, and a hand-off much slower than the clean one
marks its repetition as contended (timing.contention).

Run as ``python -m tritongym.evaluate.judge.twin DEVICE_INDEX``; the judge writes the two event
handles (hex) on the first line of its stdin, then one byte per hand-off, and reads one byte back
after each ``done`` is queued. End of input ends the twin.
"""

from __future__ import annotations

import subprocess
import sys
import time

import torch

HAND_OFF = b"h"
QUEUED = b"q"


class TwinGone(Exception):
    """The twin exited or stopped answering: an infrastructure failure of the judge's."""


class Twin:
    """The judge's handle on its twin process (one per judge, started with the judge's CUDA context)."""

    def __init__(self, device: torch.device):
        """Start the twin, then make the judge's CUDA context (where it has none yet: ``set_device``) and
        events while the twin imports torch and makes its own; returns once the twin is ready."""
        index = device.index if device.index is not None else torch.cuda.current_device()
        self.process = subprocess.Popen(
            [sys.executable, "-s", "-m", "tritongym.evaluate.judge.twin", str(index)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        torch.cuda.set_device(index)
        self.go = torch.cuda.Event(interprocess=True)
        self.done = torch.cuda.Event(interprocess=True)
        handles = f"{self.go.ipc_handle().hex()} {self.done.ipc_handle().hex()}\n".encode()
        self._write(handles)
        self._read()  # ready: its context exists and the events are open

    def _write(self, data: bytes) -> None:
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise TwinGone("the judge's twin process is gone") from None

    def _read(self) -> None:
        if self.process.stdout.read(1) != QUEUED:
            raise TwinGone(f"the judge's twin process stopped answering (exit code {self.process.poll()})")

    def hand_off(self) -> None:
        """``go`` must be recorded on the judge's stream first; returns once the twin queued ``done``."""
        self._write(HAND_OFF)
        self._read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def ensure_twin(ctx) -> Twin:
    """The judge's twin, started again if it is gone (a runner of the judge's user may kill it)."""
    if ctx.twin is None or ctx.twin.process.poll() is not None:
        if ctx.twin is not None:
            ctx.twin.close()
        ctx.twin = Twin(ctx.device)
    return ctx.twin


def serve(index: int) -> None:
    torch.cuda.set_device(index)
    torch.ones(1, device="cuda").add_(1)
    go, done = (torch.cuda.Event.from_ipc_handle(index, bytes.fromhex(h)) for h in sys.stdin.readline().split())
    stream = torch.cuda.current_stream()
    torch.cuda.synchronize()
    out = sys.stdout.buffer
    out.write(QUEUED)
    out.flush()
    while sys.stdin.buffer.read(1) == HAND_OFF:
        stream.wait_event(go)
        done.record(stream)
        out.write(QUEUED)
        out.flush()


def calibrate(twin: Twin, holds, reps: int = 41) -> float:
    """The hand-off's cost before any candidate ran (seconds, median): the twin's empty bracket less
    the judge's own, both with nothing in them, each behind a hold (``holds``: speed.Holds, released
    once the bracket is queued, then a secret jitter) as the timed brackets' are: the hand-off depends
    a little on when ``go`` fires (295 us behind holds of one length, 305 us behind jittered ones, on
    an H200). During jobs it is larger still (timing.HAND_OFF_CEILING)."""
    costs = []
    for _ in range(reps):
        pair = []
        for remote in (False, True):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            hold = holds.open()
            start.record()
            if remote:
                twin.go.record()
                twin.hand_off()
                holds.release(hold)
                wait_for(twin.done, time.monotonic() + 10.0)
            end.record()
            holds.release(hold)
            end.synchronize()
            holds.settle(hold)
            pair.append(start.elapsed_time(end) / 1e3)
        costs.append(pair[1] - pair[0])
    costs.sort()
    return costs[len(costs) // 2]


def wait_for(event, deadline: float) -> None:
    """Poll a CUDA event from the host until it fired (a waiting stream could never be released if
    the process that queued the record died)."""
    while not event.query():
        if time.monotonic() > deadline:
            raise TimeoutError("a CUDA event did not fire before the deadline")


if __name__ == "__main__":
    serve(int(sys.argv[1]))
