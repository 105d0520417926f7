"""Output paths of the commands, checked before any work starts: a run that cannot write its results
should say so at once, naming the option, rather than fail with a traceback after the work is done."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tritongym.errors import ConfigError


def writable_file(path: Path, option: str, make_parent: bool = False) -> None:
    """Refuse a file that cannot be written: a directory, a missing parent (made if ``make_parent``), a
    read-only place. The file is opened to append (nothing it holds is lost); one that did not exist
    is removed again."""
    if path.is_dir():
        raise ConfigError(f"{option} {path} is a directory; give a file name")
    if make_parent:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{option} {path}: cannot create its directory ({exc.strerror})") from None
    if not path.parent.is_dir():
        raise ConfigError(f"{option} {path}: the directory {path.parent} does not exist; create it first")
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(f"{option} {path}: not writable ({exc.strerror})") from None
    if not existed:
        path.unlink(missing_ok=True)


def writable_dir(path: Path, option: str) -> None:
    """Create the output directory ``path`` (and its parents) now, and check that files can be made
    in it; a ConfigError naming ``option`` otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"{option} {path} is a file; give a directory") from None
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot create the directory ({exc.strerror})") from None
    try:
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ConfigError(f"{option} {path}: not writable ({exc.strerror})") from None
