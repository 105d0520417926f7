"""Landlock (tritongym/evaluate/judge/landlock.py): what a confined process may still change, ABI by
ABI, and what a pool does where the kernel has none."""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import socket
from pathlib import Path

import pytest

from helpers import DEVICE, small_problem
from tritongym.errors import ConfigError
from tritongym.evaluate import EvalConfig, Verdict
from tritongym.evaluate.judge import landlock
from tritongym.evaluate.judge.landlock import Policy, abi_version, restrict

ABI = abi_version()
needs = pytest.mark.skipif(ABI == 0, reason="the kernel has no Landlock")


def in_child(work, *args) -> dict:
    """``work(*args)`` in a forked child (a Landlock domain cannot be left: never in pytest itself)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            try:
                answer = work(*args)
            except BaseException as exc:  # reported, never raised past the fork
                answer = {"raised": f"{type(exc).__name__}: {exc}"}
            os.write(write, json.dumps(answer).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        answer = json.loads(fh.read() or '{"raised": "nothing"}')
    os.waitpid(pid, 0)
    assert "raised" not in answer, answer["raised"]
    return answer


def attempt(action) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"


def tree(tmp_path: Path) -> tuple[Path, Path]:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    for top in (inside, outside):
        (top / "sub").mkdir(parents=True)
        (top / "file").write_text("original")
        (top / "other").write_text("original")
    return inside, outside


def every_write(top: Path) -> dict[str, str]:
    """Each kind of write beneath ``top``: ok, or the error it got."""

    def write_fifo() -> None:
        os.mkfifo(top / "fifo")

    def bind_socket() -> None:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(top / "sock"))

    return {
        "create": attempt(lambda: (top / "new").write_text("x")),
        "modify": attempt(lambda: (top / "file").open("a").write("x")),
        "truncate": attempt(lambda: os.truncate(top / "other", 0)),
        "rename": attempt(lambda: os.rename(top / "file", top / "sub" / "moved")),
        "unlink": attempt(lambda: os.unlink(top / "other")),
        "mkdir": attempt(lambda: os.mkdir(top / "made")),
        "rmdir": attempt(lambda: os.rmdir(top / "sub" / "empty") if (top / "sub" / "empty").exists() else None),
        "symlink": attempt(lambda: os.symlink("/etc/passwd", top / "link")),
        "fifo": attempt(write_fifo),
        "socket": attempt(bind_socket),
        "read": attempt(lambda: (top / "sub").exists() and open(__file__).read()),
    }


def confined_writes(inside: Path, outside: Path, abi: int) -> dict:
    (inside / "sub" / "empty").mkdir()
    (outside / "sub" / "empty").mkdir()
    confinement = restrict(Policy(writable=[str(inside)], devices=["/dev/null"]), abi)
    return {
        "inside": every_write(inside),
        "outside": every_write(outside),
        "across": attempt(lambda: os.rename(inside / "new", outside / "stolen")),
        "into": attempt(lambda: os.rename(outside / "file", inside / "taken")),
        "null": attempt(lambda: open("/dev/null", "w").write("x")),
        "not_confined": confinement.not_confined,
    }


@needs
def test_a_confined_process_writes_beneath_its_directory_only(tmp_path):
    inside, outside = tree(tmp_path)
    got = in_child(confined_writes, inside, outside, ABI)
    assert set(got["inside"].values()) == {"ok"}, got["inside"]
    assert got["outside"].pop("read") == "ok"  # reads are never restricted
    assert set(got["outside"].values()) == {"EACCES"}, got["outside"]
    assert (got["across"], got["into"]) == ("EACCES", "EACCES"), got  # moved out of, into its directory
    assert got["null"] == "ok"
    assert (outside / "file").read_text() == (outside / "other").read_text() == "original"
    assert not (outside / "new").exists() and (outside / "sub" / "empty").is_dir()


@needs
def test_an_older_abi_restricts_what_it_knows_and_says_what_it_cannot(tmp_path):
    inside, outside = tree(tmp_path)
    got = in_child(confined_writes, inside, outside, 1)
    assert got["outside"]["truncate"] == "ok"  # ABI 3 handles truncate(2): not ABI 1
    assert got["outside"]["create"] == got["outside"]["unlink"] == "EACCES"
    assert got["inside"]["rename"] == "EXDEV"  # ABI 1 refuses every move to another directory
    assert got["not_confined"] == [landlock.NOT_BEFORE[abi] for abi in (2, 3, 4, 5, 6)]


def test_a_kernel_without_landlock_or_a_container_refusing_it_has_abi_0(monkeypatch):
    def refused(code):
        def call(*args):
            raise OSError(code, os.strerror(code))

        return call

    for code in (errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        monkeypatch.setattr(landlock, "_syscall", refused(code))
        assert abi_version() == 0
    monkeypatch.setattr(landlock, "_syscall", refused(errno.EINVAL))
    with pytest.raises(OSError):
        abi_version()
    with pytest.raises(OSError, match="no Landlock"):
        restrict(Policy(), 0)


def test_each_abi_handles_the_write_rights_it_knows():
    assert landlock.handled_writes(1) & (landlock.FS_REFER | landlock.FS_TRUNCATE | landlock.FS_IOCTL_DEV) == 0
    assert landlock.handled_writes(3) & landlock.FS_TRUNCATE and not landlock.handled_writes(4) & landlock.FS_IOCTL_DEV
    assert landlock.handled_writes(7) == landlock.handled_writes(5)
    reads = landlock.FS_READ_FILE | landlock.FS_READ_DIR | landlock.FS_EXECUTE
    assert all(landlock.handled_writes(abi) & reads == 0 for abi in range(1, 8))
    assert landlock.unconfined(7) == [] and len(landlock.unconfined(0)) == 1


def network_and_scope(parent: int, abstract: str) -> dict:
    restrict(Policy(), ABI)
    with socket.socket() as tcp:
        connect = attempt(lambda: tcp.connect(("127.0.0.1", 9)))
    with socket.socket(socket.AF_UNIX) as unix:
        reach = attempt(lambda: unix.connect("\0" + abstract))
    return {"connect": connect, "abstract": reach, "signal": attempt(lambda: os.kill(parent, signal.SIGCONT))}


@pytest.mark.skipif(ABI < 6, reason="TCP rules from Landlock ABI 4, scopes from ABI 6")
def test_a_confined_process_reaches_no_tcp_port_no_outside_abstract_socket_and_signals_nobody_outside():
    abstract = f"tritongym-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("\0" + abstract)
        listener.listen(1)
        got = in_child(network_and_scope, os.getpid(), abstract)
    assert got == {"connect": "EACCES", "abstract": "EPERM", "signal": "EPERM"}, got


def own_children_and_self(directory: str) -> dict:
    """A runner's policy: its directory, its own /proc entry and /dev/null; not /tmp, not /proc/sys,
    not another process's /proc entry."""
    landlock.restrict(landlock.runner_policy(directory, "cpu"))
    return {
        "own": attempt(lambda: Path(directory, "x").write_text("x")),
        "own_proc": attempt(lambda: Path(f"/proc/{os.getpid()}/oom_score_adj").write_text("0")),
        "parent_proc": attempt(lambda: Path(f"/proc/{os.getppid()}/comm").write_text("pytest")),
        "sysctl": attempt(lambda: open("/proc/sys/kernel/pid_max", "w")),
        "tmp": attempt(lambda: open(os.path.join(os.path.dirname(directory), "tmp-file"), "w")),
        "null": attempt(lambda: open(os.devnull, "w")),
    }


@needs
def test_a_runners_policy_lets_it_write_its_directory_and_its_own_proc_entry_only(tmp_path):
    got = in_child(own_children_and_self, str(tmp_path))
    assert got == {"own": "ok", "own_proc": "ok", "parent_proc": "EACCES", "sysctl": "EACCES", "tmp": "EACCES",
                   "null": "ok"}  # fmt: skip


def confine_with_a_thread(directory: str) -> dict:
    import threading

    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
    try:
        landlock.confine_runner(directory, "cpu", shares_judge_user=True)
    except RuntimeError as exc:
        outside = os.path.join(os.path.dirname(directory), "x")
        return {"refused": str(exc), "still_writes": attempt(lambda: open(outside, "w"))}
    finally:
        stop.set()
    return {"refused": ""}


@needs
def test_a_runner_with_a_python_thread_is_not_confined_but_refused(tmp_path, monkeypatch):
    """A thread that exists when the domain is made stays outside it: the runner must have none."""
    monkeypatch.delenv(landlock.MODE_ENV, raising=False)
    (tmp_path / "runner").mkdir()
    got = in_child(confine_with_a_thread, str(tmp_path / "runner"))
    assert "2 Python threads" in got["refused"] and got["still_writes"] == "ok", got


def test_the_runners_writable_roots_are_its_directory_and_on_a_gpu_shared_memory():
    assert landlock.runner_writable_roots("/x/jobs/r", "cpu") == ["/x/jobs/r", f"/proc/{os.getpid()}"]
    assert "/dev/shm" in landlock.runner_writable_roots("/x/jobs/r", "cuda:0")
    assert landlock.runner_devices("cpu") == list(landlock.DEVICE_FILES)
    assert landlock.runner_devices("cuda", [os.devnull]) == [*landlock.DEVICE_FILES, os.devnull]


def test_without_landlock_a_pool_whose_runners_share_its_user_refuses_to_start(monkeypatch, caplog):
    from tritongym.evaluate.sandbox import Sandbox

    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    monkeypatch.setattr(landlock, "_warned", [])
    monkeypatch.setenv("TRITONGYM_RUNNER_USER", "same")
    monkeypatch.delenv(landlock.MODE_ENV, raising=False)
    with pytest.raises(ConfigError, match=r"no Landlock.*TRITONGYM_RUNNER_LANDLOCK=optional"):
        Sandbox("cpu")
    with pytest.raises(OSError, match="no Landlock"):
        landlock.confine_runner("/nonexistent", "cpu", shares_judge_user=True)
    assert landlock.confine_runner("/nonexistent", "cpu", shares_judge_user=False) is None
    monkeypatch.setenv(landlock.MODE_ENV, "optional")
    with caplog.at_level(logging.WARNING, logger=landlock.__name__):
        Sandbox("cpu")
        Sandbox("cpu")
    assert [r.message for r in caplog.records] == ["the kernel has no Landlock: runners are not confined to their "
                                                   "job's directory"]  # fmt: skip
    assert landlock.confine_runner("/nonexistent", "cpu", shares_judge_user=True) is None


def test_landlock_off_is_said_and_an_unknown_mode_is_refused(monkeypatch, caplog):
    monkeypatch.setattr(landlock, "_warned", [])
    monkeypatch.setenv(landlock.MODE_ENV, "off")
    with caplog.at_level(logging.WARNING, logger=landlock.__name__):
        landlock.check_host(shares_judge_user=True)
    assert "=off" in caplog.text
    assert landlock.confine_runner("/nonexistent", "cpu", shares_judge_user=True) is None
    monkeypatch.setenv(landlock.MODE_ENV, "sometimes")
    with pytest.raises(ConfigError, match="required, optional, off"):
        landlock.check_host(shares_judge_user=True)


WRITES_ITS_DIRECTORY = """
import os
import torch.nn as nn
print("WORKDIR", os.getcwd())
with open("scratch.bin", "wb") as fh:
    fh.write(b"x" * 1024)
"""


@needs
def test_a_runners_directory_holds_its_writes_and_goes_with_its_job(warm_env):
    problem = small_problem("vector_add")
    source = WRITES_ITS_DIRECTORY + problem.solution
    result = warm_env.submit(problem, source, EvalConfig(device=DEVICE, trials=2, static_checks=False)).result()
    assert result.verdict is Verdict.OK, result.feedback
    workdir = next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("WORKDIR"))
    assert Path(workdir).parent.name == "jobs" and not Path(workdir).exists()
