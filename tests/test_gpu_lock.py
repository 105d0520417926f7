"""This GPU's lock around a runner's start and end (speed.start_covered, end_covered, settle, gone):
a spare runner's CUDA context is made, and a killed one's torn down, while no judge times; on the
CPU with a real lock file."""

import fcntl
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from tritongym.evaluate.judge import speed


@pytest.fixture
def lock(tmp_path):
    path = tmp_path / "gpu.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    other = os.open(path, os.O_RDWR)  # another judge's descriptor of the same lock
    yield fd, other
    speed.settle(fd, block=True, timeout_s=0)
    assert not speed._covers.get(fd)
    os.close(fd)
    os.close(other)


def can_take(fd: int, exclusive: bool) -> bool:
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def freed(fd: int, within_s: float = 2.0) -> bool:
    """Whether another judge can take the lock exclusively within ``within_s`` (a cover lets it go
    from a thread of its own)."""
    deadline = time.monotonic() + within_s
    while not can_take(fd, exclusive=True):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_runners_start_holds_the_lock_shared_until_it_said_its_first_word(lock):
    fd, other = lock
    ours, theirs = socket.socketpair()
    try:
        speed.start_covered(fd, lambda: ours)
        assert not can_take(other, exclusive=True)  # no other judge times while it starts
        assert can_take(other, exclusive=False)  # but trials elsewhere go on
        time.sleep(0.1)
        assert not can_take(other, exclusive=True)  # nothing said yet: still covered
        theirs.send(b"hello")
        assert freed(other)  # let go at once, though this judge makes no further call (idle)
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
        assert can_take(other, exclusive=True) and not speed._covers.get(fd)
        speed.start_covered(fd, lambda: None)  # no runner was started
        assert can_take(other, exclusive=True)
        theirs.close()  # a runner that died before its Hello closes its socket: that ends the cover too
        speed.start_covered(fd, lambda: ours)
        assert freed(other)
    finally:
        ours.close()


def test_a_start_that_need_not_wait_is_put_off_while_another_judge_times(lock):
    fd, other = lock
    ours, theirs = socket.socketpair()
    started = []

    def start():
        started.append(True)
        return ours

    try:
        fcntl.flock(other, fcntl.LOCK_EX)  # another judge times
        assert speed.start_covered(fd, start, wait=False) is False and not started
        fcntl.flock(other, fcntl.LOCK_UN)
        assert speed.start_covered(fd, start, wait=False) is True and started
        assert not can_take(other, exclusive=True)
        theirs.send(b"h")
        assert freed(other)
    finally:
        ours.close()
        theirs.close()


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
            threading.Timer(0.2, lambda: theirs.send(b"h")).start()
            began = time.monotonic()
            with speed.gpu_lock(fd, exclusive=True):  # timing inside the whole job's hold waits for the start
                assert time.monotonic() - began >= 0.15
        assert can_take(other, exclusive=True)
    finally:
        ours.close()
        theirs.close()


def test_a_killed_process_is_gone_once_it_is_a_zombie_or_reaped():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    child.kill()
    began = time.monotonic()
    assert speed.gone(child.pid, 5.0)  # a zombie of ours until reaped: its resources are gone
    assert time.monotonic() - began < 2.0
    child.wait()
    assert speed.gone(child.pid, 0.0)  # gone for good
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        began = time.monotonic()
        assert not speed.gone(alive.pid, 0.1)  # bounded: a process that does not end is not waited for forever
        assert 0.1 <= time.monotonic() - began < 1.0
    finally:
        alive.kill()
        alive.wait()


def test_a_runners_end_holds_the_lock_shared_until_it_is_gone_unless_someone_times(lock):
    fd, other = lock
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    ended = []

    def end():
        ended.append(True)
        return lambda timeout_s: speed.gone(child.pid, timeout_s)

    speed.end_covered(fd, end)
    assert ended and not can_take(other, exclusive=True)  # still alive: covered
    child.kill()
    child.wait()
    assert freed(other)
    speed.settle(fd, block=False)
    assert not speed._covers.get(fd)  # forgotten once it let go
    fcntl.flock(other, fcntl.LOCK_EX)  # another judge times: the kill does not wait for it, nor cover
    try:
        began = time.monotonic()
        speed.end_covered(fd, end)
        assert len(ended) == 2 and time.monotonic() - began < 0.5 and not speed._covers.get(fd)
    finally:
        fcntl.flock(other, fcntl.LOCK_UN)
