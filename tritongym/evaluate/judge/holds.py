"""Holds that end when the judge's host says a bracket is queued.

A bracket's work is queued by the host while the judge's stream waits, so that the bracket measures
GPU time and not the host's launches or the round trip to a runner (speed.py). The wait is a tiny
kernel of the judge's (``_wait``): it spins on a volatile load of a flag word in pinned host memory,
mapped into the GPU's address space, until the host sets it once everything of the bracket is queued
(``Holds.release``), then a short sleep of a secret random part of ``HOLD_JITTER_S`` follows, so that
a runner cannot tell from its own clock when a bracket starts. The kernel gives up after
``MAX_HOLD_S`` on the GPU's ``globaltimer``: a host that blocks (a full launch queue, a runner that
never answers) never keeps the GPU waiting for ever, and such a hold is *late*: the bracket started
before it was queued, and the host's time is in it. The kernel writes whether it was released or
timed out into a second word, which the host reads once the hold's work has finished (``settle``).

The words are the judge's pinned memory (never a runner's IPC slot), one flag and one outcome word
per hold, in a small ring (``Ring``) reset before each use: a word is reused only after the hold that
used it was settled.
"""

from __future__ import annotations

import secrets
import time

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import globaltimer

MAX_HOLD_S = 0.1
"""The longest hold: a bracket its host cannot queue in this long is host-bound, and its host time counts
(the hold's kernel returns on its own: a late bracket)."""
HOLD_JITTER_S = 0.001
"""Each hold is longer by a secret random part of this (a sleep after the flag's release): a runner cannot
tell from its own clock when the judge's brackets start, so work it leaves on the GPU cannot aim between
the judge's probes."""
RING = 8
"""Flag words in a ring (every hold of the judge is settled before the next but one is taken)."""
WAITING, RELEASED, TIMED_OUT = 0, 1, 2
"""A hold's outcome word: its kernel has not returned; it returned on the host's flag; on its timeout."""


@triton.jit(do_not_specialize=["index", "size", "timeout_ns"])  # one compilation for every word
def _wait(words, index, size, timeout_ns):
    """Spin until ``words[index]`` is set or ``timeout_ns`` passed; the outcome in ``words[size + index]``."""
    start = globaltimer()
    now = start
    seen = tl.load(words + index, volatile=True)
    while (seen == 0) & (now - start < timeout_ns):
        seen = tl.load(words + index, volatile=True)
        now = globaltimer()
    tl.store(words + size + index, tl.where(seen != 0, 1, 2))


class Ring:
    """Flag and outcome words of holds, ``words`` a writable int32 array of ``2 * size`` (flags, then
    outcomes). Pure bookkeeping: the GPU's part is ``_wait``."""

    def __init__(self, words):
        self.words = words
        self.size = len(words) // 2
        self.next = 0
        self.open: set[int] = set()

    def take(self) -> int:
        """The next hold's word, reset (flag clear, outcome waiting)."""
        index = self.next
        if index in self.open:
            raise RuntimeError("a hold's flag word was reused before that hold was settled")
        self.words[index] = 0
        self.words[self.size + index] = WAITING
        self.open.add(index)
        self.next = (index + 1) % self.size
        return index

    def release(self, index: int) -> None:
        """The host has queued everything of the hold's bracket: the hold may end."""
        self.words[index] = 1

    def settle(self, index: int) -> bool:
        """Whether the hold timed out (late), read once its kernel has finished; frees its word."""
        outcome = int(self.words[self.size + index])
        if outcome == WAITING:
            raise RuntimeError("a hold was settled before its kernel returned")
        self.open.discard(index)
        return outcome == TIMED_OUT


class Holds:
    """The judge's holds on its current stream (one ``Holds`` per bench or calibration)."""

    def __init__(self, sleep_rate: float, size: int = RING):
        self.sleep_rate = sleep_rate
        """Cycles per second of ``torch.cuda._sleep`` (speed.sleep_rate): the jitter's."""
        self.flags = torch.zeros(2 * size, dtype=torch.int32, pin_memory=True)
        self.ring = Ring(self.flags.numpy())
        self.opened: dict[int, float] = {}
        self.held_s = 0.0
        """Seconds the host kept holds open (from the wait's launch to the flag's release) and their jitter."""

    def open(self) -> int:
        """A hold on the current stream: the flag wait, then the secret jitter. Returns its word."""
        index = self.ring.take()
        _wait[(1,)](self.flags, index, self.ring.size, int(MAX_HOLD_S * 1e9), num_warps=1)
        jitter = HOLD_JITTER_S * secrets.randbelow(1 << 16) / (1 << 16)
        torch.cuda._sleep(int(jitter * self.sleep_rate))
        self.held_s += jitter
        self.opened[index] = time.perf_counter()
        return index

    def release(self, index: int) -> None:
        """Everything of the hold's bracket is queued: release it (once; later calls do nothing)."""
        began = self.opened.pop(index, None)
        if began is not None:
            self.held_s += time.perf_counter() - began
            self.ring.release(index)

    def settle(self, index: int) -> bool:
        """Whether the hold timed out; call once the work queued after it has finished."""
        self.release(index)
        return self.ring.settle(index)


def load() -> None:
    """The wait kernel compiled (or loaded from Triton's cache) and run once, released at once. A
    judge does this under the GPU's shared lock, so that its first hold under the exclusive lock (the
    calibration's) does not keep the other judges waiting for the kernel's first launch (the calibration took
    1.05 s with the sleep holds, 3.39 s with this kernel's first launch in it: BENCHMARKS.md, session 14)."""
    holds = Holds(0.0)
    index = holds.open()
    holds.release(index)
    torch.cuda.synchronize()
    holds.settle(index)
