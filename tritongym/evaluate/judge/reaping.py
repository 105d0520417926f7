"""Ending every process a runner started, forks and new sessions included.

Under a root judge each runner runs as a user of its own: two user ids per judge, alternating
between the running runner and the spare forked for the next job (so the running candidate cannot
signal the spare), taken from a range no account uses. At the end of a job every process of the
finished runner's user is killed by a helper that becomes that user and sends SIGKILL to ``-1``: the
kernel delivers it to all of them at once, so no fork escapes between a scan and a kill. Without
root there is no such user; the fallback stops a process tree first (a stopped process cannot
fork) and then kills it, which catches every descendant still linked to the tree, but not one that
left it (docs/environment.md, "Threat model").
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

RUNNER_UID_BASE = 1_800_000_000
"""First user id of the runners' range (two per judge, from the judge's pid): far above the ids
that distributions give accounts (below 65534) and below the 2**31 that some tools mishandle."""
PID_RANGE = 1 << 22
"""Linux's largest pid_max: the range holds two ids for every judge pid that can exist."""
KILL_USER_TIMEOUT_S = 10.0


def runner_uids(judge_pid: int) -> tuple[int, int]:
    """The two runner users of the judge with this pid (live judges have distinct pids)."""
    first = RUNNER_UID_BASE + 2 * (judge_pid % PID_RANGE)
    return first, first + 1


def _status(pid: str) -> dict[str, str]:
    fields = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def user_processes(uid: int) -> list[int]:
    """Live (not zombie) processes whose real, effective or saved user id is ``uid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, KeyError, ValueError, IndexError):
            status = _status(name)
            if status["State"][:1] in ("Z", "X"):
                continue
            if uid in [int(u) for u in status["Uid"].split()[:3]]:
                found.append(int(name))
    return found


def _kill_as(uid: int) -> None:
    """A forked helper becomes ``uid`` and kills every process that user may signal (all of its
    processes but the helper itself). Forked, not executed: it needs no file the user may read."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def kill_user(uid: int, timeout_s: float = KILL_USER_TIMEOUT_S) -> bool:
    """SIGKILL every process of ``uid`` (the caller must be root), repeated until /proc shows none.
    Returns whether none is left."""
    deadline = time.monotonic() + timeout_s
    while True:
        _kill_as(uid)
        if not user_processes(uid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found += [int(x) for x in (task / "children").read_text().split()]
    return found


def kill_trees(roots: list[int], rounds: int = 50) -> None:
    """Stop every process of these trees (walking them until no new one appears: a stopped process
    forks no more), then kill them all. Best effort: what left a tree before it was stopped is not
    found (the root judge's per-user kill has no such gap)."""
    stopped: set[int] = set()
    for _ in range(rounds):
        todo, seen, new = list(roots), set(), 0
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            if pid not in stopped:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
                    stopped.add(pid)
                    new += 1
            todo += children(pid)
        if not new:
            break
    for pid in stopped:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
