"""This GPU's lock around a runner's start and end (speed.start_covered, settle; judge.wait_gone): a
spare runner's CUDA context is made while no judge times, on the CPU with a real lock file."""

import fcntl
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from tritongym.evaluate.judge import speed
from tritongym.evaluate.judge.judge import wait_gone


@pytest.fixture
def lock(tmp_path):
    path = tmp_path / "gpu.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    other = os.open(path, os.O_RDWR)  # another judge's descriptor of the same lock
    yield fd, other
    speed.settle(fd, block=True, timeout_s=0)
    os.close(fd)
    os.close(other)


def can_take(fd: int, exclusive: bool) -> bool:
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def test_a_runners_start_holds_the_lock_shared_until_it_said_its_first_word(lock):
    fd, other = lock
    ours, theirs = socket.socketpair()
    try:
        speed.start_covered(fd, lambda: ours)
        assert not can_take(other, exclusive=True)  # no other judge times while it starts
        assert can_take(other, exclusive=False)  # but trials elsewhere go on
        speed.settle(fd, block=False)
        assert not can_take(other, exclusive=True)  # nothing said yet: still covered
        theirs.send(b"hello")
        speed.settle(fd, block=False)
        assert can_take(other, exclusive=True)
        assert ours.recv(5) == b"hello"  # the cover never reads the runner's words
    finally:
        ours.close()
        theirs.close()


def test_timing_waits_for_a_runners_start_to_end(lock):
    fd, other = lock
    ours, theirs = socket.socketpair()
    try:
        speed.start_covered(fd, lambda: ours)
        threading.Timer(0.2, lambda: theirs.send(b"h")).start()
        began = time.monotonic()
        with speed.gpu_lock(fd, exclusive=True):
            assert time.monotonic() - began >= 0.15
            assert not can_take(other, exclusive=False)
        assert can_take(other, exclusive=True)
    finally:
        ours.close()
        theirs.close()


def test_a_start_that_never_speaks_or_starts_nothing_holds_nothing_for_long(lock):
    fd, other = lock
    ours, theirs = socket.socketpair()
    try:
        speed.start_covered(fd, lambda: ours)
        speed.settle(fd, block=True, timeout_s=0.05)  # a stopped spare: the lock goes after the timeout
        assert can_take(other, exclusive=True)
        speed.start_covered(fd, lambda: None)  # no runner was started
        assert can_take(other, exclusive=True)
        theirs.close()  # a runner that died before its Hello closes its socket: that ends the cover too
        speed.start_covered(fd, lambda: ours)
        speed.settle(fd, block=False)
        assert can_take(other, exclusive=True)
    finally:
        ours.close()


def test_a_failing_start_lets_the_lock_go(lock):
    fd, other = lock

    def start():
        raise OSError("fork failed")

    with pytest.raises(OSError):
        speed.start_covered(fd, start)
    assert can_take(other, exclusive=True)


def test_inside_a_whole_jobs_exclusive_hold_a_start_takes_nothing_more(lock):
    fd, other = lock
    ours, theirs = socket.socketpair()
    try:
        with speed.gpu_lock(fd, exclusive=True):
            speed.start_covered(fd, lambda: ours)  # would deadlock if it took the lock shared
            assert not can_take(other, exclusive=False)
            theirs.send(b"h")
        assert can_take(other, exclusive=True)
        speed.settle(fd, block=False)
    finally:
        ours.close()
        theirs.close()


def test_a_killed_process_is_waited_for_until_it_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    child.kill()
    began = time.monotonic()
    wait_gone(child.pid, 5.0)  # a zombie of ours until reaped: its resources are gone
    assert time.monotonic() - began < 2.0
    child.wait()
    wait_gone(child.pid, 5.0)  # gone for good
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        began = time.monotonic()
        wait_gone(alive.pid, 0.1)  # bounded: a process that does not end is not waited for forever
        assert 0.1 <= time.monotonic() - began < 1.0
    finally:
        alive.kill()
        alive.wait()
