"""The launcher store's only writer: Triton's C modules, built by trusted code for every runner to read.

Runners read the store through ``launcher_cache.StoreCacheManager``; this module writes it. The
writer never takes C source or a binary from a runner: a runner only says which module it missed
(``utils``, or a launcher and its kernel's signature), and the builder validates that signature
(only Triton's type names, bounded length, arity and nesting) and then runs Triton's own code for it,
``CudaLauncher(src, metadata)`` with a stand-in ``src`` holding the signature (Triton 3.4-3.6:
``make_launcher`` generates the source, ``compile_module_from_src`` keys it and compiles it), or
``CudaUtils()`` for ``cuda_utils``. During that call Triton's cache manager is ``_Capture``: it
reports a module the store already has, or takes the compiled file, writes it into the store under
Triton's own key and stops Triton there (nothing built is loaded in the builder). So the store's keys
are whatever this Triton version keys by (the source and platform up to 3.6; the build flags too
later), without tritongym repeating the rule. Triton versions whose launchers are not compiled per
signature (3.7 on: one generic launcher in ``cuda_utils``) only need ``cuda_utils``.

The launcher source depends on the kernel's signature (the type of every argument, tuples flattened,
tensor descriptors expanded) and, for each tensor descriptor, on whether the compiler lowered it to a
TMA descriptor (``tensordesc_meta`` entry present or None); ``make_launcher`` ignores the constants.

The builder is a process of the judge's (``python -m tritongym.evaluate.judge.launcher_builder``)
that never imports candidate code: it builds ``cuda_utils`` when the judge starts (before any
runner exists) and then the launchers the judge asks for after each job, at low priority and off
every candidate's clock. Writes are atomic (a temporary file renamed into place) under a file lock,
so judges on one machine and later pools share the store (``home/launchers`` is not used: the store
outlives the sandbox's home; ``sandbox.launcher_store_root`` says where it is).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from tritongym.errors import SandboxError
from tritongym.evaluate.judge import machine_lock
from tritongym.evaluate.judge.launcher_cache import (
    MANAGER,
    MANIFEST,
    MISSES,
    STORE_ENV,
    c_module,
    read_manifest,
    store_path,
)
from tritongym.evaluate.sandbox import overrides_permissions

log = logging.getLogger(__name__)

DTYPES = ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32", "f32", "fp64",
          "fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")  # fmt: skip
"""Triton's names of scalar types in a kernel signature (``triton._utils.type_canonicalisation_dict``)."""
MAX_ARGS = 64
"""Most arguments a launcher is built for (flattened, a tensor descriptor counting as one)."""
MAX_DEPTH = 3
"""Deepest nesting of tuples in a signature."""
MAX_TYPE_CHARS = 64
MAX_DIMS = 5
LOCK_TIMEOUT_S = 10.0
"""Longest wait for the store's lock (held for one write by a builder; a process that holds it
longer, such as a runner of the judge's own user that took it, costs a build, not the judge's start)."""
STORE_LOCK = "tritongym-launchers"
"""The name of the launcher stores' write lock (``_locked``)."""
MAX_REQUESTS_PER_JOB = 8
"""Launchers the judge asks for after one job at most (the rest: a later job may ask again)."""

_POINTER = re.compile(r"\*k?(" + "|".join(DTYPES) + r")")
_DIM = r"[1-9][0-9]{0,5}"
_TENSORDESC = re.compile(rf"tensordesc<({'|'.join(DTYPES)})\[{_DIM}(, ?{_DIM}){{0,{MAX_DIMS - 1}}}\]>")


class InvalidSpec(ValueError):
    """A requested module that the builder refuses to build."""


@dataclass(frozen=True)
class Spec:
    """A C module to build: ``utils`` (cuda_utils), or the launcher of one kernel signature."""

    kind: str
    """``utils`` or ``launcher``."""
    signature: tuple = ()
    """The type of every argument in order (Triton's names; tuples for tuple arguments)."""
    tensordesc: tuple[bool, ...] | None = None
    """Per tensor descriptor, whether it was lowered to a TMA descriptor; None: no metadata."""

    def as_json(self) -> dict:
        if self.kind == "utils":
            return {"kind": "utils"}
        flags = None if self.tensordesc is None else list(self.tensordesc)
        return {"kind": "launcher", "signature": _listed(self.signature), "tensordesc": flags}


def _type(value, depth: int, count: list[int]):
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            raise InvalidSpec("tuples nested too deeply")
        return tuple(_type(v, depth + 1, count) for v in value)
    if not isinstance(value, str) or len(value) > MAX_TYPE_CHARS:
        raise InvalidSpec("a type is not a short string")
    count[0] += 1
    if count[0] > MAX_ARGS:
        raise InvalidSpec(f"more than {MAX_ARGS} arguments")
    if value in DTYPES or value == "constexpr" or _POINTER.fullmatch(value) or _TENSORDESC.fullmatch(value):
        return value
    raise InvalidSpec(f"not a Triton type name: {value[:MAX_TYPE_CHARS]!r}")


def parse_spec(data) -> Spec:
    """A Spec from a runner's JSON (a claim: anything not exactly Triton's vocabulary is refused)."""
    if not isinstance(data, dict):
        raise InvalidSpec("not an object")
    if data.get("kind") == "utils" and set(data) == {"kind"}:
        return Spec("utils")
    if data.get("kind") != "launcher" or set(data) != {"kind", "signature", "tensordesc"}:
        raise InvalidSpec("unknown kind or fields")
    if not isinstance(data["signature"], list):
        raise InvalidSpec("the signature is not a list")
    signature = _type(data["signature"], 0, [0])
    descs = sum(1 for t in _flat(signature) if t.startswith("tensordesc"))
    flags = data["tensordesc"]
    if flags is not None:
        if not isinstance(flags, list) or not all(isinstance(f, bool) for f in flags) or len(flags) != descs:
            raise InvalidSpec("tensordesc flags do not match the signature")
        flags = tuple(flags)
    return Spec("launcher", signature, flags)


def _flat(signature):
    for t in signature:
        if isinstance(t, tuple):
            yield from _flat(t)
        else:
            yield t


def read_misses(cache_dir: Path) -> tuple[int, list[Spec]]:
    """What a job's runner said the store lacked: the number of valid notes and the distinct
    modules (at most MAX_REQUESTS_PER_JOB). The file is the runner's: opened without following a
    link, only if it is a regular file, and read up to a bound."""
    try:
        fd = os.open(cache_dir / MISSES, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return 0, []
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0, []
        text = fh.read(64 << 10)
    count, found = 0, []
    for line in text.splitlines():
        try:
            spec = parse_spec(json.loads(line))
        except (ValueError, RecursionError):
            continue
        count += 1
        if spec not in found and len(found) < MAX_REQUESTS_PER_JOB:
            found.append(spec)
    return count, found


# -- the store ---------------------------------------------------------------------------------


def store_dir(root: Path) -> Path:
    """This Triton version's store below ``root``, made if missing; it must be a directory of this
    user that nobody else may write (else SandboxError: a store others write is no trusted store)."""
    import platform

    import triton

    path = root / f"triton-{triton.__version__}-{platform.machine()}"
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    for part in (root, path):
        info = os.lstat(part)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise SandboxError(f"{part} is not a directory that only this user may write; remove it")
    return path


@contextlib.contextmanager
def _locked(store: Path):
    """The store's write lock, shared by every builder of this user on the machine; TimeoutError if it
    stays taken. A System V semaphore (machine_lock.py), one for all of this user's stores (a write
    holds it for milliseconds): a runner of the judge's user reads the store but cannot take its lock,
    nor hold it while builders wait (red team 5 #2). Where semaphores are not used, the file ``.lock``
    in the store, whose mode is 000 where the builder passes permission bits (root): a runner of the
    judge's user (uid 0 without capabilities) cannot open it."""
    lock = machine_lock.open_lock(STORE_LOCK, store / ".lock")
    try:
        if not machine_lock.supported() and os.geteuid() == 0 and overrides_permissions():
            os.fchmod(lock, 0)
        release = machine_lock.take(lock, exclusive=True, timeout_s=LOCK_TIMEOUT_S)
        if release is None:
            raise TimeoutError(f"the lock of {store} stayed taken for {LOCK_TIMEOUT_S} s")
        try:
            yield
        finally:
            release()
    finally:
        machine_lock.close(lock)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _remove_leftovers(store: Path) -> None:
    """Temporary files of a write that never finished (its builder was killed mid-write). Called under
    the store's lock, which every write holds: no write is under way, so every one found is a leftover."""
    for leftover in [*store.glob(".tmp-*"), *store.glob("*/.tmp-*")]:
        with contextlib.suppress(OSError):
            leftover.unlink()


def put(store: Path, key: str, filename: str, data: bytes) -> str:
    """Write one module into the store and list it in the manifest (atomically, under the lock)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{16,128}", key) or c_module(filename) is None:
        raise InvalidSpec(f"not a C module's key and name: {key}/{filename}")
    with _locked(store):
        _remove_leftovers(store)
        if store_path(str(store), key, filename) is not None:  # another judge's builder was first
            return str(store / key / filename)
        (store / key).mkdir(mode=0o755, exist_ok=True)
        _write_atomic(store / key / filename, data)
        manifest = read_manifest(str(store))
        manifest[f"{key}/{filename}"] = hashlib.sha256(data).hexdigest()
        _write_atomic(store / MANIFEST, json.dumps(manifest, sort_keys=True).encode())
    return str(store / key / filename)


# -- building ---------------------------------------------------------------------------------


class _Stored(Exception):
    """Raised out of Triton's compile call once the module is in the store (it is not loaded here)."""

    def __init__(self, entry: str):
        self.entry = entry


class _Present(_Stored):
    """The store already had the module under Triton's key."""


def _capture_class(store: Path):
    from triton.runtime.cache import CacheManager

    class _Capture(CacheManager):
        def __init__(self, key, override=False, dump=False):
            self.key = key

        def get_file(self, filename):
            if c_module(filename) is None:
                raise InvalidSpec(f"the builder builds C modules only, not {filename}")
            if store_path(str(store), self.key, filename) is not None:  # listed, and its sha256 holds
                raise _Present(f"{self.key}/{filename}")
            return None

        def put(self, data, filename, binary=True):
            put(store, self.key, filename, data if isinstance(data, bytes) else data.encode())
            raise _Stored(f"{self.key}/{filename}")

        def get_group(self, filename):
            return None

        def put_group(self, filename, group):
            raise InvalidSpec("the builder builds C modules only")

    return _Capture


Compile = Callable[[str, str, str, list, list, list], str]
"""Triton's ``knobs.build.impl``: (name, source path, work dir, library dirs, include dirs,
libraries) -> path of the built .so. None: Triton's own (gcc)."""


def nvidia_driver():
    from triton.backends.nvidia import driver

    return driver


def per_signature_launchers(driver=None) -> bool:
    """Whether this Triton compiles a launcher per kernel signature (3.4-3.6: ``make_launcher``)."""
    return hasattr(driver or nvidia_driver(), "make_launcher")


def build(store: Path, spec: Spec, compile: Compile | None = None, driver=None) -> str:
    """Build one module into the store with Triton's own code: ``stored``, ``present`` (it was
    there already) or ``unneeded`` (this Triton builds no launcher per signature)."""
    from triton import knobs

    driver = driver or nvidia_driver()
    if spec.kind == "launcher" and not per_signature_launchers(driver):
        return "unneeded"
    saved = knobs.cache.manager_class, knobs.build.impl
    knobs.cache.manager_class, knobs.build.impl = _capture_class(store), compile
    try:
        if spec.kind == "utils":
            driver.CudaUtils.__init__(object.__new__(driver.CudaUtils))
        else:
            src = SimpleNamespace(constants={}, signature=dict(enumerate(spec.signature)),
                                  fn=SimpleNamespace(arg_names=[]))  # fmt: skip
            meta = None if spec.tensordesc is None else [{} if lowered else None for lowered in spec.tensordesc]
            driver.CudaLauncher(src, SimpleNamespace(tensordesc_meta=meta))
    except _Present:
        return "present"
    except _Stored:
        return "stored"
    finally:
        knobs.cache.manager_class, knobs.build.impl = saved
    raise InvalidSpec("Triton returned without asking the cache for the module")


# -- the builder process and the judge's handle to it -------------------------------------------


def serve(store: Path, parent: int) -> None:
    """The builder process: ``cuda_utils`` first (then ``ready`` on stdout), then one JSON request per
    stdin line (already validated by the judge; validated again), until stdin closes."""
    from tritongym.evaluate.judge.zygote import die_with_parent

    die_with_parent(parent)
    with contextlib.suppress(OSError):
        os.nice(10)
    _build_logged(store, '{"kind": "utils"}')
    print("ready", flush=True)
    for line in sys.stdin:
        _build_logged(store, line)


def _build_logged(store: Path, line: str) -> None:
    try:
        spec = parse_spec(json.loads(line))
        log.info("launcher store: %s %s", build(store, spec), spec)
    except Exception as exc:  # a module that fails to build (a compiler error): runners build it, as before
        log.warning("launcher store: %r not built: %s", line[:200], exc)


class Builder:
    """The judge's handle on its builder process."""

    def __init__(self, store: Path, env: dict[str, str]):
        self.store = store
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-P", "-m", "tritongym.evaluate.judge.launcher_builder", str(store),
             str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,  # its warnings: the judge's stderr
        )  # fmt: skip
        os.set_blocking(self.proc.stdin.fileno(), False)  # a busy builder never holds the judge up
        self.asked: set[Spec] = set()

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait until ``cuda_utils`` is in the store (or the builder gave up on it)."""
        done = threading.Event()
        ok = []

        def read() -> None:
            ok.append(self.proc.stdout.readline().strip() == b"ready")
            done.set()

        threading.Thread(target=read, daemon=True).start()
        return done.wait(timeout_s) and ok == [True]

    def ask(self, specs: list[Spec]) -> None:
        """Have the builder build these (each at most once per judge; the rest are dropped if the
        builder is gone)."""
        for spec in specs:
            if spec in self.asked or self.proc.poll() is not None:
                continue
            self.asked.add(spec)
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.write((json.dumps(spec.as_json()) + "\n").encode())
                self.proc.stdin.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()


class LauncherStore:
    """The judge's side of the store: where it is, the runners' environment for it, its builder."""

    READY_TIMEOUT_S = 120.0
    """How long a starting judge waits for ``cuda_utils`` in the store before forking runners."""

    def __init__(self, root: str, device: str, env: dict[str, str]):
        self.path: Path | None = None
        self.builder: Builder | None = None
        if not root:
            return
        try:
            self.path = store_dir(Path(root))
        except (OSError, SandboxError) as exc:  # a store others may write is no store: today's behaviour
            log.warning("launcher store disabled: %s", exc)
            return
        if device != "cpu" and env.get("TRITON_INTERPRET") != "1":
            self.builder = Builder(self.path, env)

    @property
    def runner_env(self) -> dict[str, str]:
        """A runner's Triton cache manager, and the store it reads if there is one (without a store the
        manager still refuses C modules it did not build: launcher_cache.StoreCacheManager)."""
        return {"TRITON_CACHE_MANAGER": MANAGER} | ({STORE_ENV: str(self.path)} if self.path is not None else {})

    def wait_ready(self) -> None:
        if self.builder is not None and not self.builder.wait_ready(self.READY_TIMEOUT_S):
            log.warning("launcher store: cuda_utils is not in the store; runners build it")

    def after_job(self, directory: str | Path) -> int:
        """Ask the builder for what the job's runner (working in ``directory``) missed; the number
        of C modules it said it built itself (the result's ``stage_seconds["c_modules_built"]``)."""
        if self.builder is None:
            return 0
        count, specs = read_misses(Path(directory) / "triton-cache")
        self.builder.ask(specs)
        return count

    def close(self) -> None:
        if self.builder is not None:
            self.builder.close()


def _listed(signature):
    return [_listed(t) if isinstance(t, tuple) else t for t in signature]


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    serve(Path(sys.argv[1]), int(sys.argv[2]))
