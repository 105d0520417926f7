"""This GPU's lock around a runner's start and end (speed.start_covered, end_covered, settle, gone):
a spare runner's CUDA context is made, and a killed one's torn down, while no judge times; on the
CPU with a real lock (machine_lock.py: a System V semaphore, and the lock file used where semaphores
are not), no runner can take it."""

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from helpers import confined
from tritongym.errors import SandboxError
from tritongym.evaluate.judge import machine_lock, speed

BACKENDS = ["semaphore", "file"] if machine_lock.supported() else ["file"]


@pytest.fixture(params=BACKENDS)
def lock(request, tmp_path, monkeypatch):
    """This GPU's lock as a judge opens it, twice: the other is another judge's (a semaphore set is
    the same for both; a lock file two descriptors)."""
    if request.param == "file":
        monkeypatch.setattr(machine_lock, "supported", lambda: False)
    name = f"test-gpu-lock-{os.getpid()}-{tmp_path.name}"
    fd = machine_lock.open_lock(name, tmp_path / "gpu.lock")
    other = machine_lock.open_lock(name, tmp_path / "gpu.lock")
    yield fd, other
    speed.settle(fd, block=True, timeout_s=0)
    assert not speed._covers.get(fd)
    machine_lock.close(fd)
    machine_lock.close(other)
    if request.param == "semaphore":
        removed(fd)


def removed(lock: int) -> None:
    """A test's semaphore set, removed (a judge's stays for the next judge)."""
    assert machine_lock._libc.semctl(lock, 0, machine_lock.IPC_RMID) == 0


def can_take(lock: int, exclusive: bool) -> bool:
    release = machine_lock.take(lock, exclusive, wait=False)
    if release is None:
        return False
    release()
    return True


def freed(lock: int, within_s: float = 2.0) -> bool:
    """Whether another judge can take the lock exclusively within ``within_s`` (a cover lets it go
    from a thread of its own)."""
    deadline = time.monotonic() + within_s
    while not can_take(lock, exclusive=True):
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
        timing = machine_lock.take(other, exclusive=True)  # another judge times
        assert speed.start_covered(fd, start, wait=False) is False and not started
        timing()
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
    timing = machine_lock.take(other, exclusive=True)  # another judge times: the kill does not wait, nor cover
    try:
        began = time.monotonic()
        speed.end_covered(fd, end)
        assert len(ended) == 2 and time.monotonic() - began < 0.5 and not speed._covers.get(fd)
    finally:
        timing()


def holding(lock: int, exclusive: bool) -> int:
    """Another judge's process that holds the lock until it is killed (its pid, once it holds it)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            machine_lock.take(lock, exclusive)
            os.write(write, b"held")
            time.sleep(30)
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 4) == b"held"
    os.close(read)
    return child


def test_another_judges_holds_exclude_and_end_with_their_process(lock):
    fd, _ = lock
    holder = holding(fd, exclusive=True)  # another judge times
    try:
        assert not can_take(fd, exclusive=False)
        began = time.monotonic()
        assert machine_lock.take(fd, exclusive=False, timeout_s=0.2) is None  # a bounded wait ends
        assert 0.15 <= time.monotonic() - began < 1.0
    finally:
        os.kill(holder, signal.SIGKILL)  # dies holding it: the kernel lets it go (SEM_UNDO, or the file's close)
        os.waitpid(holder, 0)
    assert can_take(fd, exclusive=True)
    holder = holding(fd, exclusive=False)  # another judge's trials
    try:
        assert can_take(fd, exclusive=False) and not can_take(fd, exclusive=True)
        threading.Timer(0.2, os.kill, (holder, signal.SIGKILL)).start()
        began = time.monotonic()
        with speed.gpu_lock(fd, exclusive=True):  # timing waits for it, without a bound
            assert time.monotonic() - began >= 0.15
            assert not can_take(fd, exclusive=False)
    finally:
        os.waitpid(holder, 0)
    assert can_take(fd, exclusive=True)


def test_shared_holds_of_one_process_count_each(lock):
    fd, other = lock
    first = machine_lock.take(fd, exclusive=False)
    with speed.gpu_lock(fd, exclusive=False):
        first()
        first()  # a hold lets go once, however often it is called
        assert not can_take(other, exclusive=True)
    assert can_take(other, exclusive=True)


semaphores_only = pytest.mark.skipif(not machine_lock.supported(), reason="semaphores on x86-64 Linux only")


@pytest.fixture
def semaphore(tmp_path):
    name = f"test-gpu-lock-{os.getpid()}-{tmp_path.name}"
    lock = machine_lock.open_lock(name, tmp_path / "unused.lock")
    yield name, lock
    removed(lock)


@semaphores_only
@pytest.mark.parametrize("processes", [False, True], ids=["runner", "compiler-helper"])
def test_no_runner_can_take_block_or_remove_the_lock(semaphore, processes):
    """Red team 5 #2's root cause: whatever a runner's user (the judge's, under a judge that is not
    root), it cannot find the lock, take it, hold it or remove it: its filter refuses System V IPC."""
    name, lock = semaphore
    libc = machine_lock._libc

    def errno_of(answer: int) -> str:
        return "ok" if answer >= 0 else os.strerror(ctypes.get_errno())

    def taken() -> str:
        try:
            return "ok" if machine_lock.take(lock, exclusive=False, wait=False) is not None else "busy"
        except OSError as exc:
            return os.strerror(exc.errno)

    def probe():
        exclusive = machine_lock.SemBuf(0, -machine_lock.VALUE, machine_lock.SEM_UNDO | machine_lock.IPC_NOWAIT)
        one = ctypes.c_size_t(1)
        limit = machine_lock.TimeSpec(0, 1000)
        return {
            "semget": errno_of(libc.semget(machine_lock.key(name), 1, 0)),
            "semop": errno_of(libc.semop(lock, ctypes.byref(exclusive), one)),
            "semtimedop": errno_of(libc.semtimedop(lock, ctypes.byref(exclusive), one, ctypes.byref(limit))),
            "semctl": errno_of(libc.semctl(lock, 0, machine_lock.IPC_RMID)),
            "take": taken(),
        }

    refused = os.strerror(1)  # EPERM
    assert confined(probe, processes) == dict.fromkeys(["semget", "semop", "semtimedop", "semctl", "take"], refused)
    assert can_take(lock, exclusive=True)  # still there, and free


@semaphores_only
def test_judges_that_open_a_new_lock_at_once_share_one_started_set(tmp_path):
    name = f"test-gpu-lock-race-{os.getpid()}"
    children = []
    for _ in range(4):
        child = os.fork()
        if child == 0:
            code = 1
            try:
                lock = machine_lock.open_lock(name, tmp_path / "unused.lock")
                with speed.gpu_lock(lock, exclusive=True):
                    code = 0
            finally:
                os._exit(code)
        children.append(child)
    assert all(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0 for child in children)
    lock = machine_lock.open_lock(name, tmp_path / "unused.lock")
    try:
        assert machine_lock._libc.semctl(lock, 0, 12) == machine_lock.VALUE  # GETVAL: started once, all let go
    finally:
        removed(lock)


@semaphores_only
def test_a_set_that_is_not_this_users_lock_is_refused(tmp_path, monkeypatch):
    libc = machine_lock._libc
    monkeypatch.setattr(machine_lock, "START_TIMEOUT_S", 0.1)
    never = f"test-gpu-lock-never-{os.getpid()}"
    made = libc.semget(machine_lock.key(never), 2, machine_lock.IPC_CREAT | machine_lock.IPC_EXCL | 0o600)
    try:  # made and never started (its maker died): an error, not a lock that never lets anyone in
        with pytest.raises(SandboxError, match="never started"):
            machine_lock.open_lock(never, tmp_path / "unused.lock")
    finally:
        removed(made)
    foreign = f"test-gpu-lock-foreign-{os.getpid()}"
    made = libc.semget(machine_lock.key(foreign), 1, machine_lock.IPC_CREAT | machine_lock.IPC_EXCL | 0o666)
    try:  # a set under this key that others may use: not this user's lock
        with pytest.raises(SandboxError, match="not this user's alone"):
            machine_lock.open_lock(foreign, tmp_path / "unused.lock")
    finally:
        removed(made)
    single = f"test-gpu-lock-single-{os.getpid()}"
    made = libc.semget(machine_lock.key(single), 1, machine_lock.IPC_CREAT | machine_lock.IPC_EXCL | 0o600)
    try:  # this user's, but a set of one: no lock of this version (nothing waits on a semaphore it lacks)
        with pytest.raises(SandboxError, match="1 semaphores"):
            machine_lock.open_lock(single, tmp_path / "unused.lock")
    finally:
        removed(made)


class _Job:
    timing, profile = True, True


class _State:
    """What speed_and_coverage reads of a job: its lock, its settings, its stage timer."""

    def __init__(self, fd: int):
        self.ctx = type("Ctx", (), {"gpu_lock": fd, "device": None})()
        self.job, self.footprint, self.stages = _Job(), None, {}

    def timed(self, name: str):
        import contextlib

        @contextlib.contextmanager
        def timer():
            began = time.perf_counter()
            yield
            self.stages[name] = time.perf_counter() - began

        return timer()


def test_timing_prepares_under_the_shared_lock_and_measures_and_profiles_under_the_exclusive_one(lock, monkeypatch):
    fd, other = lock
    seen = {}

    def phase(name, answer):
        def run(*args):
            seen[name] = (can_take(other, exclusive=False), can_take(other, exclusive=True), args[2:])
            return answer

        return run

    monkeypatch.setattr(speed, "prepare_timing", phase("prepare", "prepared"))
    monkeypatch.setattr(speed, "time_candidate", phase("time", {"speedup": 2.0}))
    monkeypatch.setattr(speed, "profile_candidate", phase("profile", {"coverage": 1.0}))
    state = _State(fd)
    assert speed.speed_and_coverage(state, "reference") == {"speedup": 2.0, "coverage": 1.0}
    assert seen["prepare"][:2] == (True, False)  # other judges' trials go on beside it; no timing
    assert seen["time"] == (False, False, ("prepared",))  # the prepared timing, alone on the GPU
    assert seen["profile"][:2] == (False, False)
    assert set(state.stages) == {"timing_setup", "timing", "profiling"}
    assert can_take(other, exclusive=False) and not can_take(other, exclusive=True)  # kept for the runner's end
    speed.let_go_kept(fd)
    assert can_take(other, exclusive=True)
    state.job.timing = False  # profiling alone: no preparation, still exclusive
    seen.clear()
    assert speed.speed_and_coverage(state, "reference") == {"coverage": 1.0}
    assert set(seen) == {"profile"} and seen["profile"][:2] == (False, False)
    speed.let_go_kept(fd)


def test_a_jobs_lock_waits_are_split_into_all_and_exclusive(lock):
    fd, other = lock
    before = list(speed.lock_waited)
    holder = holding(other, exclusive=False)  # another judge's trials, for 0.2 s
    threading.Timer(0.2, os.kill, (holder, signal.SIGKILL)).start()
    try:
        with speed.gpu_lock(fd, exclusive=True):
            pass
    finally:
        os.waitpid(holder, 0)
    with speed.gpu_lock(fd, exclusive=False):
        pass
    waited = [after - was for after, was in zip(speed.lock_waited, before, strict=True)]
    assert waited[1] >= 0.15 and waited[0] >= waited[1]


@semaphores_only
@pytest.mark.parametrize("lock", ["semaphore"], indirect=True)
def test_a_timing_that_waited_is_not_kept_waiting_by_new_stages_but_by_what_already_holds(lock, monkeypatch):
    """Within ``POLITE_AFTER_S`` shared holds go ahead of a waiting timing; past it the timing is
    announced and a stage's (polite) shared hold, or a runner's start, waits, while a runner's end
    (which cannot be put off) still covers; the timing gets the lock once the holds taken before it
    are let go, and the stages go on after it."""
    fd, other = lock
    monkeypatch.setattr(speed, "POLITE_AFTER_S", 0.05)
    stage = machine_lock.take(other, exclusive=False, polite=True)  # another judge's trial holds it
    got = threading.Event()

    def timing():
        with speed.gpu_lock(fd, exclusive=True):
            got.set()
            time.sleep(0.2)

    timer = threading.Thread(target=timing, daemon=True)
    timer.start()
    time.sleep(0.3)  # past POLITE_AFTER_S: announced
    assert not got.is_set()
    assert machine_lock.take(other, exclusive=False, wait=False, polite=True) is None  # a new stage waits
    assert not speed.start_covered(other, lambda: None, wait=False)  # a runner's start is put off too
    end = machine_lock.take(other, exclusive=False, wait=False)  # a runner's end is not
    assert end is not None
    end()
    stage()  # the trial ends: the timing's turn
    assert got.wait(2.0)
    began = time.perf_counter()
    after = machine_lock.take(other, exclusive=False, polite=True)  # the next stage waits for the timing
    assert time.perf_counter() - began >= 0.1
    after()
    timer.join()
    assert can_take(other, exclusive=False) and machine_lock.take(other, False, wait=False, polite=True) is not None


@semaphores_only
@pytest.mark.parametrize("lock", ["semaphore"], indirect=True)
def test_a_timings_hold_becomes_shared_until_its_runner_is_gone(lock):
    """``keep_shared``: when the timing and profiling end, no other judge's timing can start before
    the runner just timed is gone (its end's cover is that hold), while other judges' stages can."""
    fd, other = lock
    with speed.gpu_lock(fd, exclusive=True, keep_shared=True):
        assert not can_take(other, exclusive=False)
    assert can_take(other, exclusive=False) and not can_take(other, exclusive=True)
    gone = threading.Event()
    speed.end_covered(fd, lambda: lambda timeout_s: gone.wait(timeout_s))
    assert not can_take(other, exclusive=True)  # the kept hold covers the runner's end
    before = speed.covered["end"]
    gone.set()
    assert freed(other) and speed.covered["end"] > before
    with speed.gpu_lock(fd, exclusive=True, keep_shared=True):
        pass
    speed.let_go_kept(fd)  # a job whose runner never ended lets it go at its end
    assert can_take(other, exclusive=True)


def test_a_wait_for_the_lock_held_by_another_judge_is_told_to_the_job_in_hand(lock, monkeypatch):
    """speed.on_wait (the job's JobState.extend) hears how long a hold waited for another judge's:
    time that is not the candidate's."""
    fd, other = lock
    heard = []
    monkeypatch.setattr(speed, "on_wait", heard.append)
    release = machine_lock.take(other, exclusive=True)  # another judge times
    threading.Timer(0.3, release).start()
    with speed.gpu_lock(fd, exclusive=False):
        pass
    assert len(heard) == 1 and heard[0] >= 0.25
    with speed.gpu_lock(fd, exclusive=False):
        pass
    assert len(heard) == 2 and heard[1] < 0.1
