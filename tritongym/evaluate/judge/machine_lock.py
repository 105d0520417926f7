"""Readers-writer locks shared by every judge of a user on the machine, out of every runner's reach.

A lock is a System V semaphore set of two (mode 0600, keyed by the lock's name and the user: judges
of another user have locks of their own). The first (``HOLDS``) starts at ``VALUE``: a shared hold
takes 1, an exclusive one takes all of ``VALUE``. The second (``WAITING``) counts the exclusive holds
that have waited longer than they allow (``announce``): a *polite* shared hold (``take(...,
polite=True)``) is taken only while it is 0, in the same atomic ``semop`` as its 1 of ``HOLDS``, so an
exclusive hold that announced itself is not kept waiting by new polite holds, only by those already
held and by the others (which the caller cannot put off). Every hold and announcement is taken with
``SEM_UNDO``, so the kernel gives back what a holder that died still held; ``IPC_NOWAIT`` is the try
that does not wait, ``semtimedop`` a bounded wait. ``downgrade`` turns an exclusive hold into a
shared one without letting the lock go in between. No runner reaches it: the runners' seccomp filter
(seccomp.py) refuses ``semget``, ``semop``, ``semtimedop`` and ``semctl`` to every runner and its
compiler helper, whatever their user,
whereas a lock file the judge can open, a runner of the judge's user (every GPU runner: its uid without
capabilities) opens for reading too, and ``flock`` needs no more (red team 5 #2; under a root judge
the lock directory's mode 000 kept a runner out, under one that is not root nothing did). Like
``flock``, a shared hold that is not polite never waits for an exclusive one that waits.

The set is made with ``IPC_EXCL`` by whoever comes first, and starts at ``VALUE`` by its first
``semop``, which also sets its ``sem_otime``: another judge that found the set waits for that
before using it (a set that was never started is an error after ``START_TIMEOUT_S``). Sets are never
removed (as the lock files were not): ``ipcs -s`` lists them, ``ipcrm`` removes one no judge uses.

Written for x86-64 Linux, where the seccomp filter is; elsewhere a lock is a file locked with
``flock`` (the file at ``fallback``; every hold through a descriptor of its own), which a runner of the
judge's user can hold there (docs/environment.md); there no hold is polite (an announcement does
nothing) and a downgrade lets the lock go, then takes a shared hold if it is free.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import os
import struct
import time
from collections.abc import Callable
from pathlib import Path

from tritongym.errors import SandboxError
from tritongym.evaluate.judge import seccomp

VALUE = 1 << 14
"""A lock's semaphore when nobody holds it: an exclusive hold takes all of it, a shared one 1 (below the
kernel's largest value and largest undo adjustment, 32767)."""
START_TIMEOUT_S = 10.0
"""The longest a judge waits for the set another one made to be started."""
HOLDS, WAITING = 0, 1
"""The set's semaphores: the holds' (``VALUE`` when free), and the exclusive holds announced (0 when none)."""
IPC_CREAT, IPC_EXCL, IPC_NOWAIT, IPC_RMID, IPC_STAT = 0o1000, 0o2000, 0o4000, 0, 2
SEM_UNDO = 0x1000
SEMID_DS_BYTES = 128
"""``struct semid_ds`` on x86-64 (104 bytes), with room to spare: ``sem_perm``'s uid at 4, cuid at 12,
mode at 20, then ``sem_otime`` at 48 and ``sem_nsems`` at 80."""


class SemBuf(ctypes.Structure):
    _fields_ = [("sem_num", ctypes.c_ushort), ("sem_op", ctypes.c_short), ("sem_flg", ctypes.c_short)]


class TimeSpec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_libc = ctypes.CDLL(None, use_errno=True)


def supported() -> bool:
    """Whether locks are System V semaphores here (where the runners' seccomp filter refuses them)."""
    return seccomp.supported()


def key(name: str) -> int:
    """The System V key of this user's lock ``name`` (never ``IPC_PRIVATE``, 0)."""
    digest = hashlib.blake2b(f"tritongym-lock-2\0{name}\0{os.geteuid()}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF or 1


def open_lock(name: str, fallback: Path) -> int:
    """This user's lock ``name`` on the machine (made if it is the first): a semaphore set's id, or
    where semaphores are not used a descriptor of the file ``fallback`` (``close`` closes it). Raises
    SandboxError where the key is another's set, or a set nobody started."""
    if not supported():
        return os.open(fallback, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    lock = _libc.semget(key(name), 2, IPC_CREAT | IPC_EXCL | 0o600)
    if lock >= 0:
        if not _semop(lock, VALUE, 0):  # starts it, and sets its sem_otime: others may now use it
            _raise(f"starting the lock {name}")
        return lock
    if ctypes.get_errno() != errno.EEXIST:
        _raise(f"making the lock {name}")
    lock = _libc.semget(key(name), 0, 0)
    if lock < 0:
        _raise(f"opening the lock {name}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        uid, cuid, mode, otime, count = _stat(lock)
        if (uid, cuid, mode & 0o777, count) != (os.geteuid(), os.geteuid(), 0o600, 2):
            raise SandboxError(
                f"the System V semaphore set {lock} (key {key(name):#x}) of the lock {name} is not this user's "
                f"alone, or not a lock (owner {uid}, creator {cuid}, mode {mode & 0o777:o}, {count} semaphores); "
                f"remove it (ipcrm -s {lock})"
            )
        if otime:
            return lock
        if time.monotonic() > deadline:
            raise SandboxError(f"the lock {name} (semaphore set {lock}) was never started; remove it (ipcrm -s {lock})")
        time.sleep(0.01)


def close(lock: int) -> None:
    """Let go of ``open_lock``'s answer (a semaphore set stays, for the next judge)."""
    if not supported():
        os.close(lock)


def take(
    lock: int, exclusive: bool, wait: bool = True, timeout_s: float | None = None, polite: bool = False
) -> Callable[[], None] | None:
    """Hold ``lock`` shared or exclusively: the function that lets this hold go (once, whatever the
    calls), or None where it was not free (without ``wait``) or stayed taken for ``timeout_s``. A
    ``polite`` shared hold is taken only while no exclusive hold is announced (``announce``)."""
    count = VALUE if exclusive else 1
    if not supported():
        return _take_file(lock, exclusive, wait, timeout_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        flags = SEM_UNDO | (0 if wait and left != 0.0 else IPC_NOWAIT)
        ops = [(HOLDS, -count, flags)]
        if polite and not exclusive:
            ops.insert(0, (WAITING, 0, flags & IPC_NOWAIT))
        if _semop_all(lock, ops, left):
            break
        if ctypes.get_errno() == errno.EINTR:
            continue
        if ctypes.get_errno() == errno.EAGAIN:
            return None
        _raise(f"taking the lock (semaphore set {lock})")
    return _once(lambda: _semop(lock, count, SEM_UNDO) or _raise(f"letting the lock go (semaphore set {lock})"))


def announce(lock: int) -> Callable[[], None]:
    """Say that an exclusive hold waits and will not let polite shared holds go ahead of it any more:
    the function that withdraws it (once). Nothing where locks are files."""
    if not supported():
        return _once(lambda: None)
    while not _semop_all(lock, [(WAITING, 1, SEM_UNDO)]):
        if ctypes.get_errno() != errno.EINTR:
            _raise(f"announcing an exclusive hold (semaphore set {lock})")
    return _once(lambda: _semop_all(lock, [(WAITING, -1, SEM_UNDO)]) or _raise(f"withdrawing an announcement ({lock})"))


def downgrade(lock: int, release: Callable[[], None]) -> Callable[[], None] | None:
    """Turn the exclusive hold that ``release`` lets go into a shared hold, in one step (no exclusive
    hold can come in between): the function that lets the shared hold go. Where locks are files, the
    exclusive hold is let go and a shared one taken if it is free (None where it is not)."""
    if not supported():
        release()
        return take(lock, exclusive=False, wait=False)
    # the exclusive hold's own release is spent on nothing: its VALUE - 1 go back here, the last 1 with
    # the shared hold's release (every change under SEM_UNDO: a judge that dies gives back what it holds)
    if not _semop(lock, VALUE - 1, SEM_UNDO):
        _raise(f"downgrading a hold (semaphore set {lock})")
    return _once(lambda: _semop(lock, 1, SEM_UNDO) or _raise(f"letting the lock go (semaphore set {lock})"))


def _take_file(fd: int, exclusive: bool, wait: bool, timeout_s: float | None) -> Callable[[], None] | None:
    own = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        if wait and deadline is None:
            fcntl.flock(own, mode)
        else:
            while True:
                try:
                    fcntl.flock(own, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait or time.monotonic() > deadline:
                        os.close(own)
                        return None
                    time.sleep(0.01)
    except BaseException:
        os.close(own)
        raise
    return _once(lambda: os.close(own))


def _once(release: Callable[[], object]) -> Callable[[], None]:
    done = []

    def once() -> None:
        if not done:
            done.append(True)
            release()

    return once


def _semop(lock: int, change: int, flags: int, timeout_s: float | None = None) -> bool:
    return _semop_all(lock, [(HOLDS, change, flags)], timeout_s)


def _semop_all(lock: int, changes: list[tuple[int, int, int]], timeout_s: float | None = None) -> bool:
    """(semaphore, change, flags) for each, all at once or none (``semop``'s atomicity)."""
    ops = (SemBuf * len(changes))(*(SemBuf(*change) for change in changes))
    if timeout_s is None:
        return _libc.semop(lock, ops, ctypes.c_size_t(len(changes))) == 0
    seconds = int(timeout_s)
    limit = TimeSpec(seconds, int((timeout_s - seconds) * 1e9))
    return _libc.semtimedop(lock, ops, ctypes.c_size_t(len(changes)), ctypes.byref(limit)) == 0


def _stat(lock: int) -> tuple[int, int, int, int, int]:
    """A set's owner, creator, mode, last operation's time and number of semaphores."""
    buffer = ctypes.create_string_buffer(SEMID_DS_BYTES)
    if _libc.semctl(lock, 0, IPC_STAT, buffer) != 0:
        _raise(f"reading the semaphore set {lock}")
    uid, cuid = struct.unpack_from("<I", buffer, 4)[0], struct.unpack_from("<I", buffer, 12)[0]
    mode, otime = struct.unpack_from("<H", buffer, 20)[0], struct.unpack_from("<q", buffer, 48)[0]
    return uid, cuid, mode, otime, struct.unpack_from("<Q", buffer, 80)[0]


def _raise(doing: str):
    code = ctypes.get_errno()
    raise OSError(code, f"{doing}: {os.strerror(code)}")
