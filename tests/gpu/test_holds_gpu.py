"""The judge's flag holds on a GPU (holds.py): the interpreter has no ``globaltimer``, so the wait kernel
is tested here (``pytest -m gpu tests/gpu/test_holds_gpu.py``)."""

import threading
import time

import pytest
import torch

from tritongym.evaluate.judge import holds, speed

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def rate():
    return speed.sleep_rate()


def held(h: holds.Holds, release_after_s: float | None) -> tuple[float, bool]:
    """A hold then two events; the host releases it after ``release_after_s`` (None: never): the GPU's
    wait before ``start`` (s, from an event before the hold) and whether the hold timed out."""
    before, start = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    before.record()
    index = h.open()
    start.record()
    if release_after_s is not None:
        time.sleep(release_after_s)
        h.release(index)
    start.synchronize()
    return before.elapsed_time(start) / 1e3, h.settle(index)


def test_a_hold_ends_when_the_host_sets_its_flag(rate):
    h = holds.Holds(rate)
    held(h, 0.0)  # the kernel's compilation
    waited, late = held(h, 0.02)
    assert not late and 0.02 <= waited < 0.02 + holds.HOLD_JITTER_S + 0.005
    waited, late = held(h, 0.0)
    assert not late and waited < holds.HOLD_JITTER_S + 0.002


def test_a_hold_never_released_times_out_and_is_late(rate):
    h = holds.Holds(rate)
    held(h, 0.0)
    waited, late = held(h, None)
    assert late and holds.MAX_HOLD_S <= waited < holds.MAX_HOLD_S + holds.HOLD_JITTER_S + 0.01


def test_a_host_released_from_another_thread_ends_the_wait_and_the_ring_is_reused(rate):
    h = holds.Holds(rate)
    outcomes = []
    for _ in range(3 * holds.RING):
        index = h.open()
        threading.Timer(0.001, h.release, (index,)).start()
        torch.cuda.synchronize()
        outcomes.append(h.settle(index))
    assert outcomes == [False] * (3 * holds.RING)
