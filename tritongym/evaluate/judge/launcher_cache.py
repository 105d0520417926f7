"""Triton's cache manager in a runner: the C modules come from the launcher store, the rest stays the job's.

A runner's Triton compiles, besides the candidate's kernel, two small C extension modules with gcc:
``cuda_utils`` (fixed source) and, up to Triton 3.6, one ``__triton_launcher`` per kernel signature
(source generated from the signature). Each job has a Triton cache of its own (a binary planted by
one candidate is never loaded by a later one), so each job would build them again (about 0.5 s).

The launcher store is a directory that only trusted code writes (``launcher_builder.py``: the judge's
builder, which generates every source itself from a validated signature) and runners only read. This
class, named by ``TRITON_CACHE_MANAGER`` in a runner's environment, serves such a module from the store
when the store's manifest lists it under Triton's own key and the file's sha256 matches the manifest;
otherwise Triton builds it as before, into the job's own cache, and the miss is noted in
``c-module-misses.jsonl`` of that cache (what was missed: "utils", or a launcher's signature), which
the judge reads after the job to have the builder fill the store for later jobs. Everything else
(the candidate's kernel: IR, cubin, metadata) is the job's own cache, exactly as without the store.

Everything here runs in the candidate's process: the candidate can change what it does and write
whatever misses it likes. The judge takes a miss only as a request, validated before any build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import sysconfig

from triton.runtime.cache import FileCacheManager

STORE_ENV = "TRITONGYM_LAUNCHER_STORE"
"""Environment variable with the store's directory (of this Triton version) in a runner."""
MANAGER = "tritongym.evaluate.judge.launcher_cache:StoreCacheManager"
"""The value of ``TRITON_CACHE_MANAGER`` that selects this class."""
MANIFEST = "manifest.json"
"""In the store: ``{"<key>/<file name>": "<sha256 of the file>"}`` for every module the builder wrote."""
MISSES = "c-module-misses.jsonl"
"""In a job's Triton cache: one JSON object per C module that the store did not have."""
MAX_MISSES_BYTES = 64 << 10
"""A runner stops noting misses once its file is this large."""
C_MODULES = ("cuda_utils", "__triton_launcher", "hip_utils")
"""The names under which Triton builds its C extension modules (the HIP ones are served if present;
the builder writes the CUDA ones only)."""


def c_module(filename: str) -> str | None:
    """The C module's name if ``filename`` is one of Triton's C extension modules, else None."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    name = filename[: -len(suffix)] if filename.endswith(suffix) else ""
    return name if name in C_MODULES else None


def _open_regular(path: str):
    """A file of the store, opened only if it is a regular file (not a link to elsewhere, not a FIFO
    that would block the reader)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return os.fdopen(fd, "rb")


def read_manifest(store: str) -> dict[str, str]:
    """The store's manifest; empty if it is missing or not what the builder writes."""
    try:
        with _open_regular(os.path.join(store, MANIFEST)) as fh:
            data = json.loads(fh.read(1 << 22))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def file_sha256(path: str) -> str | None:
    try:
        digest = hashlib.sha256()
        with _open_regular(path) as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def store_path(store: str, key: str, filename: str) -> str | None:
    """The store's file for Triton's ``key`` and ``filename`` if the manifest lists it and the file's
    sha256 is the manifest's (a file changed or planted after the builder wrote it is ignored)."""
    if not store or os.sep in key or os.sep in filename or key.startswith("."):
        return None
    expected = read_manifest(store).get(f"{key}/{filename}")
    path = os.path.join(store, key, filename)
    if expected is None or file_sha256(path) != expected:
        return None
    return path


def launcher_spec_from_stack() -> dict | None:
    """The signature of the launcher Triton is building, read from the caller's frames (Triton's
    ``CudaLauncher.__init__`` holds ``signature`` and ``tensordesc_meta`` as locals), as JSON."""
    frame = sys._getframe(1)
    for _ in range(12):
        if frame is None:
            return None
        names = frame.f_locals
        if frame.f_code.co_name == "__init__" and "signature" in names and "tensordesc_meta" in names:
            signature, meta = names["signature"], names["tensordesc_meta"]
            if not isinstance(signature, dict):
                return None
            described = [_jsonable(t) for t in signature.values()]
            flags = None if not meta else [m is not None for m in meta]
            return {"kind": "launcher", "signature": described, "tensordesc": flags}
        frame = frame.f_back
    return None


def _jsonable(ty):
    return [_jsonable(t) for t in ty] if isinstance(ty, tuple) else str(ty)


def note_miss(cache_dir: str, name: str) -> None:
    """Append what the store lacked to the job's list of misses (bounded; best effort)."""
    if name == "__triton_launcher":
        spec = launcher_spec_from_stack()
    else:
        spec = {"kind": "utils"} if name == "cuda_utils" else None
    if spec is None or not cache_dir:
        return
    path = os.path.join(cache_dir, MISSES)
    with contextlib.suppress(OSError, TypeError, ValueError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            if os.fstat(fd).st_size < MAX_MISSES_BYTES:
                os.write(fd, (json.dumps(spec) + "\n").encode())
        finally:
            os.close(fd)


_built_here: set[str] = set()
"""C modules this process built (and put in its cache) itself."""


class StoreCacheManager(FileCacheManager):
    """Triton's file cache (the job's directory), except for its C modules: those come from the store,
    or are built by this process; a C module found in the cache directory that this process did not
    put there is never loaded (at warm-up the cache directory is shared by the runners of one user,
    and a candidate could plant one there for the next runner, which loads it before its seccomp
    filter and capabilities are dropped)."""

    def get_file(self, filename: str) -> str | None:
        name = c_module(filename)
        if name is None:
            return super().get_file(filename)
        found = store_path(os.environ.get(STORE_ENV, ""), self.key, filename)
        if found is not None:
            return found
        own = self._make_path(filename)
        if own in _built_here and os.path.exists(own):  # a second kernel of one signature in this job
            return own
        note_miss(os.path.dirname(self.cache_dir), name)
        return None

    def put(self, data, filename: str, binary: bool = True) -> str:
        path = super().put(data, filename, binary)
        if c_module(filename) is not None:
            _built_here.add(path)
        return path
