"""The runner's seccomp filter: signals and process access only to itself and its own group."""

from __future__ import annotations

import ctypes
import os
import signal

import pytest

from helpers import confined as under_filter
from tritongym.evaluate.judge import seccomp

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the filter is written for x86-64 Linux")


def confined(probe, processes: bool = True) -> dict:
    """Run ``probe(parent)`` under the filter (helpers.confined), ``parent`` being this process."""
    parent = os.getpid()
    return under_filter(lambda: probe(parent), processes)


def outcome(call) -> str:
    try:
        call()
    except OSError as exc:
        return os.strerror(exc.errno)
    return "ok"


def test_a_confined_process_signals_itself_and_its_group_but_no_other_process():
    def probe(parent):
        me = os.getpid()
        return {
            "self": outcome(lambda: os.kill(me, 0)),
            "group": outcome(lambda: os.kill(0, 0)),
            "own group by id": outcome(lambda: os.killpg(me, 0)),
            "thread": outcome(lambda: signal.pthread_kill(__import__("threading").get_ident(), 0)),
            "parent": outcome(lambda: os.kill(parent, 0)),
            "stop parent": outcome(lambda: os.kill(parent, signal.SIGSTOP)),
            "everyone": outcome(lambda: os.kill(-1, 0)),
            "parent's group": outcome(lambda: os.killpg(os.getpgid(parent), 0)),
            "pid with high bits": outcome(lambda: ctypes.CDLL(None, use_errno=True).syscall(62, (1 << 32) | parent, 0)),
        }

    seen = confined(probe)
    assert seen["self"] == seen["group"] == seen["own group by id"] == seen["thread"] == "ok", seen
    assert (
        seen["parent"] == seen["stop parent"] == seen["everyone"] == seen["parent's group"] == "Operation not permitted"
    ), seen


def test_a_confined_process_cannot_read_or_trace_another_and_its_children_inherit_that():
    def probe(parent):
        libc = ctypes.CDLL(None, use_errno=True)

        def call(number, *args):
            def run():
                if libc.syscall(number, *args) == -1:
                    raise OSError(ctypes.get_errno(), "")

            return run

        local = (ctypes.c_char * 8)()
        vec = (ctypes.c_void_p * 2)(ctypes.cast(local, ctypes.c_void_p), 8)
        seen = {
            "ptrace": outcome(call(101, 16, parent, 0, 0)),  # PTRACE_ATTACH
            "process_vm_readv": outcome(call(310, parent, vec, 1, vec, 1, 0)),
            "pidfd_getfd": outcome(call(438, 0, 0, 0)),
            "pidfd_send_signal": outcome(call(424, 0, 0, 0, 0)),
        }
        grandchild = os.fork()
        if grandchild == 0:
            os._exit(0 if outcome(lambda: os.kill(parent, 0)) == "Operation not permitted" else 1)
        seen["child refused too"] = os.waitpid(grandchild, 0)[1] == 0
        return seen

    seen = confined(probe)
    assert seen.pop("child refused too") is True
    assert set(seen.values()) == {"Operation not permitted"}, seen


def test_the_program_refuses_bad_pids():
    with pytest.raises(ValueError):
        seccomp.program(0, processes=True)
    with pytest.raises(ValueError):
        seccomp.program(1 << 31, processes=True)


def test_a_confined_process_cannot_make_a_files_io_signal_another_process():
    """F_SETOWN (or FIOSETOWN/SIOCSPGRP) plus F_SETSIG would have the kernel send any signal, SIGSTOP
    included, to the owner named when I/O is possible: a signal the kill checks never see."""

    def probe(parent):
        import fcntl

        a, _b = os.pipe()  # a confined process makes no socket (red team 5 #3, #4); the commands are refused first
        libc = ctypes.CDLL(None, use_errno=True)

        def ioctl(request, value):
            def run():
                arg = ctypes.c_int(value)
                if libc.ioctl(a, request, ctypes.byref(arg)) == -1:
                    raise OSError(ctypes.get_errno(), "")

            return run

        return {
            "F_SETOWN": outcome(lambda: fcntl.fcntl(a, fcntl.F_SETOWN, parent)),
            "F_SETOWN self": outcome(lambda: fcntl.fcntl(a, fcntl.F_SETOWN, os.getpid())),
            "F_SETSIG": outcome(lambda: fcntl.fcntl(a, 10, signal.SIGSTOP)),
            "F_SETOWN_EX": outcome(lambda: fcntl.fcntl(a, 15, b"\0" * 8)),
            "F_SETLEASE": outcome(lambda: fcntl.fcntl(a, 1024, 0)),  # red team 5 #9 (a pipe: EINVAL unfiltered)
            "F_SETLK": outcome(lambda: fcntl.fcntl(a, 6, b"\0" * 32)),  # red team 5 #10: record locks
            "F_OFD_SETLKW": outcome(lambda: fcntl.fcntl(a, 38, b"\0" * 32)),
            "FS_IOC_SETFLAGS": outcome(ioctl(0x40086602, 0)),  # red team 5 #11: chattr (a pipe: ENOTTY unfiltered)
            "FIOSETOWN": outcome(ioctl(0x8901, parent)),
            "SIOCSPGRP": outcome(ioctl(0x8902, parent)),
            "F_GETFL": outcome(lambda: fcntl.fcntl(a, fcntl.F_GETFL)),
            "FIONREAD": outcome(ioctl(0x541B, 0)),
        }

    seen = confined(probe)
    assert seen.pop("F_GETFL") == seen.pop("FIONREAD") == "ok", seen
    assert set(seen.values()) == {"Operation not permitted"}, seen


def test_a_confined_process_changes_only_its_own_limits_and_has_no_system_v_ipc():
    def probe(parent):
        import resource

        libc = ctypes.CDLL(None, use_errno=True)

        def call(number, *args):
            def run():
                if libc.syscall(number, *args) == -1:
                    raise OSError(ctypes.get_errno(), "")

            return run

        limit = resource.getrlimit(resource.RLIMIT_NOFILE)
        return {
            "own limits": outcome(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit)),
            "own limits by pid": outcome(lambda: resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE, limit)),
            "parent's limits": outcome(lambda: resource.prlimit(parent, resource.RLIMIT_NOFILE)),
            "shmget": outcome(call(29, 0, 4096, 0o1600)),  # IPC_PRIVATE, IPC_CREAT | 0600
            "semget": outcome(call(64, 0, 1, 0o1600)),
            "msgget": outcome(call(68, 0, 0o1600)),
            "shmat": outcome(call(30, 0, 0, 0)),
        }

    seen = confined(probe)
    assert seen.pop("own limits") == seen.pop("own limits by pid") == "ok", seen
    assert set(seen.values()) == {"Operation not permitted"}, seen


def test_a_confined_process_changes_no_processs_scheduling_but_reads_its_own():
    """A same-user runner could pin the judge, its zygote or another runner to one core, or lower
    their priority; a CPU runner could widen its own cores (pinned before the filter). All refused."""

    def probe(parent):
        libc = ctypes.CDLL(None, use_errno=True)

        def call(number, *args):
            def run():
                if libc.syscall(number, *args) == -1:
                    raise OSError(ctypes.get_errno(), "")

            return run

        mine = os.sched_getaffinity(0)
        return {
            "read own cores": outcome(lambda: os.sched_getaffinity(0)),
            "read own priority": outcome(lambda: os.getpriority(os.PRIO_PROCESS, 0)),
            "own cores": outcome(lambda: os.sched_setaffinity(0, mine)),
            "parent's cores": outcome(lambda: os.sched_setaffinity(parent, mine)),
            "own priority": outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, 10)),
            "parent's priority": outcome(lambda: os.setpriority(os.PRIO_PROCESS, parent, 10)),
            "parent's policy": outcome(lambda: os.sched_setscheduler(parent, os.SCHED_BATCH, os.sched_param(0))),
            "parent's parameters": outcome(lambda: os.sched_setparam(parent, os.sched_param(0))),
            "sched_setattr": outcome(call(314, parent, 0, 0)),
            "ioprio_set": outcome(call(251, 1, parent, 0)),
        }

    for processes in (False, True):
        seen = confined(probe, processes)
        assert seen.pop("read own cores") == seen.pop("read own priority") == "ok", seen
        assert set(seen.values()) == {"Operation not permitted"}, (processes, seen)


def test_a_cpu_runners_filter_refuses_every_way_to_make_a_process_but_threads_run():
    """Red team 4 #7: work done in a child process is watched by no guard of the runner's. fork,
    vfork and clone without CLONE_THREAD fail with EPERM (whatever library call makes them:
    os.fork, posix_spawn, subprocess); clone3 with ENOSYS (its flags are out of seccomp's reach),
    after which glibc starts a thread with clone, and a Python thread starts and runs."""

    def probe(parent):
        import subprocess
        import threading

        libc = ctypes.CDLL(None, use_errno=True)

        def raw(number, *args):
            def run():
                answer = libc.syscall(number, *args)
                if answer == 0:  # a child: the filter let it be made
                    os._exit(0)
                if answer == -1:
                    raise OSError(ctypes.get_errno(), "")

            return run

        def fork():
            if os.fork() == 0:
                os._exit(0)

        ran = []
        thread = threading.Thread(target=lambda: ran.append(outcome(fork)))
        thread.start()
        thread.join()
        return {
            "os.fork": outcome(fork),
            "posix_spawn": outcome(lambda: os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)),
            "subprocess": outcome(lambda: subprocess.run(["/bin/true"], check=True)),
            "fork syscall": outcome(raw(57)),
            "vfork syscall": outcome(raw(58)),
            "clone without CLONE_THREAD": outcome(raw(56, signal.SIGCHLD, 0, 0, 0, 0)),
            "clone3": outcome(raw(435, 0, 0)),  # unfiltered, the kernel answers EINVAL to a size of 0
            "fork from a thread": ran[0] if ran else "thread did not run",
        }

    seen = confined(probe, processes=False)
    assert seen.pop("clone3") == "Function not implemented", seen
    assert set(seen.values()) == {"Operation not permitted"}, seen


def test_a_compiler_helpers_filter_lets_it_make_processes():
    """A GPU runner's compiler helper runs ptxas as a subprocess (runners make none, on a GPU too):
    its filter leaves process creation alone (and clone3, which glibc tries first)."""

    def probe(parent):
        import subprocess

        return {"subprocess": outcome(lambda: subprocess.run(["/bin/true"], check=True))}

    assert confined(probe, processes=True) == {"subprocess": "ok"}


@pytest.mark.parametrize("processes", [True, False], ids=["gpu", "cpu"])
def test_a_confined_process_changes_no_files_owner_attributes_or_set_id_bits(tmp_path, processes):
    """Red team 5 #11: Landlock confines writes, not metadata, and a runner of the judge's user owns
    that user's files. No runner changes an owner or an extended attribute, nor sets a set-user-ID
    or set-group-ID bit; a GPU runner may still set ordinary modes (a linker makes its output 0755), a
    CPU runner changes no mode and no time."""
    target = tmp_path / "program"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o644)

    def probe(parent):
        path = str(target)
        fd = os.open(path, os.O_RDONLY)
        return {
            "chmod 0755": outcome(lambda: os.chmod(path, 0o755)),
            "fchmod 0755": outcome(lambda: os.fchmod(fd, 0o755)),
            "chmod setuid": outcome(lambda: os.chmod(path, 0o4755)),
            "fchmod setgid": outcome(lambda: os.fchmod(fd, 0o2755)),
            "fchmodat setuid": outcome(lambda: os.chmod(path, 0o4755, dir_fd=os.open("/", os.O_RDONLY))),
            "utime": outcome(lambda: os.utime(path, (0, 0))),
            "chown": outcome(lambda: os.chown(path, os.getuid(), os.getgid())),
            "fchown": outcome(lambda: os.fchown(fd, os.getuid(), os.getgid())),
            "setxattr": outcome(lambda: os.setxattr(path, "user.redteam5", b"x")),
            "removexattr": outcome(lambda: os.removexattr(path, "user.redteam5")),
        }

    seen = confined(probe, processes=processes)
    refused = "Operation not permitted"
    for name in ("chmod setuid", "fchmod setgid", "fchmodat setuid", "chown", "fchown", "setxattr", "removexattr"):
        assert seen[name] == refused, (name, seen)
    for name in ("chmod 0755", "fchmod 0755", "utime"):
        assert seen[name] == ("ok" if processes else refused), (name, seen)
    assert target.stat().st_mode & 0o7777 == (0o755 if processes else 0o644)
