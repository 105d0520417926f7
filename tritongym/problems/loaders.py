"""Loaders: one .py file, a directory of problems (a KernelBench level), JSONL/parquet tables
(KernelBook style) and the bundled set."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tritongym.errors import ProblemError
from tritongym.problems.problem import Problem

_LEVEL_DIR = re.compile(r"level[_-]?(\d+)$", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"^(\d+)")
MAX_SOURCE_BYTES = 1_000_000
"""A reference file larger than this is refused (problems are small modules)."""


def _read_source(path: Path) -> str:
    if not path.is_file():
        raise ProblemError(f"{path}: no such file")
    data = path.read_bytes()
    if len(data) > MAX_SOURCE_BYTES:
        raise ProblemError(f"{path}: {len(data)} bytes is too large for a problem file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProblemError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _level_of(directory: Path) -> int | None:
    match = _LEVEL_DIR.search(directory.name)
    return int(match.group(1)) if match else None


def _natural_key(path: Path) -> tuple[int, str]:
    match = _LEADING_NUMBER.match(path.name)
    return (int(match.group(1)) if match else 1 << 62, path.name)


def load_file(path: str | Path, entry_point: str = "Model") -> Problem:
    """One problem from a .py file; its name is the file stem."""
    path = Path(path)
    return Problem(
        name=path.stem,
        source=_read_source(path),
        entry_point=entry_point,
        level=_level_of(path.parent),
        origin=str(path),
    )


def load_directory(path: str | Path, entry_point: str = "Model") -> list[Problem]:
    """Every ``*.py`` problem of a directory, naturally sorted by leading number (``2_`` before ``10_``).

    The level is taken from a ``levelN`` directory name, as in a KernelBench checkout.
    """
    path = Path(path)
    if not path.is_dir():
        raise ProblemError(f"{path}: not a directory")
    files = sorted((p for p in path.glob("*.py") if not p.name.startswith("_")), key=_natural_key)
    if not files:
        raise ProblemError(f"{path}: no .py problem files in this directory")
    return [load_file(f, entry_point) for f in files]


@dataclass(frozen=True)
class TableColumns:
    """Column names of a problem table (defaults follow KernelBook)."""

    source: str = "python_code"
    """Column holding the reference PyTorch source."""
    entry_point: str | None = "entry_point"
    """Column naming the reference class; when absent from a row, ``Model`` is used."""
    name: str | None = "uuid"
    """Column used as the problem name; when absent, ``row<N>``."""
    solution: str | None = "triton_code"
    """Column holding a known-good Triton solution, if any."""


def _rows(path: Path) -> Iterator[dict]:
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ProblemError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
                if not isinstance(row, dict):
                    raise ProblemError(f"{path}:{lineno}: expected a JSON object per line")
                yield row
    elif path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ProblemError("reading parquet needs pyarrow: pip install 'tritongym[parquet]'") from exc
        yield from pq.read_table(path).to_pylist()
    else:
        raise ProblemError(f"{path}: a problem table must be .jsonl or .parquet")


def load_table(path: str | Path, columns: TableColumns = TableColumns()) -> list[Problem]:
    """Problems from a JSONL or parquet table, one per row (KernelBook style)."""
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"{path}: no such file")
    problems = []
    for index, row in enumerate(_rows(path)):
        source = row.get(columns.source)
        if not isinstance(source, str) or not source.strip():
            present = ", ".join(sorted(row)) or "none"
            raise ProblemError(
                f"{path} row {index}: no reference source in column {columns.source!r} "
                f"(columns present: {present}); choose the column with --source-column"
            )
        entry = row.get(columns.entry_point) if columns.entry_point else None
        name = row.get(columns.name) if columns.name else None
        solution = row.get(columns.solution) if columns.solution else None
        problems.append(
            Problem(
                name=str(name) if name not in (None, "") else f"row{index}",
                source=source,
                entry_point=str(entry) if entry else "Model",
                solution=solution if isinstance(solution, str) else None,
                origin=f"{path}:{index}",
            )
        )
    if not problems:
        raise ProblemError(f"{path}: the table has no rows")
    return problems


def load_bundled() -> list[Problem]:
    """The problems written for this project, each with a reference Triton solution."""
    data = resources.files("tritongym.problems") / "data"
    manifest = tomllib.loads((data / "manifest.toml").read_text(encoding="utf-8"))
    problems = []
    for entry in manifest["problem"]:
        name = entry["name"]
        problems.append(
            Problem(
                name=name,
                source=(data / f"{name}.py").read_text(encoding="utf-8"),
                tags=tuple(entry.get("tags", ())),
                solution=(data / "solutions" / f"{name}.py").read_text(encoding="utf-8"),
                origin="bundled",
                small_sizes=dict(entry.get("small_sizes", {})),
            )
        )
    return problems


def load_problems(source: str | Path | None = None, columns: TableColumns = TableColumns()) -> list[Problem]:
    """Load problems from any supported source: ``None``/``"bundled"``, a directory, a .py file,
    or a .jsonl/.parquet table."""
    if source is None or str(source) == "bundled":
        return load_bundled()
    path = Path(source)
    if path.is_dir():
        return load_directory(path)
    if path.suffix == ".py":
        return [load_file(path)]
    if path.suffix in (".jsonl", ".parquet"):
        return load_table(path, columns)
    if not path.exists():
        raise ProblemError(f"{source}: no such file or directory, and not 'bundled'")
    raise ProblemError(f"{source}: unsupported problem source (expected a .py, directory, .jsonl or .parquet)")


def _short_names(name: str) -> tuple[str, ...]:
    """A KernelBench-style name '19_ReLU' also answers to 'ReLU' and '19'."""
    number, sep, rest = name.partition("_")
    return (rest, number) if sep and number.isdigit() else ()


def match_problem(problems: list[Problem], spec: str) -> Problem | None:
    """The problem named ``spec`` exactly, else the one whose name without its leading number, or
    whose leading number, is ``spec``; None if there is none."""
    exact = next((p for p in problems if p.name == spec), None)
    return exact or next((p for p in problems if spec in _short_names(p.name)), None)


def find_problem(spec: str | Path) -> Problem:
    """One problem by path (a .py file) or by name or leading number in the bundled set."""
    path = Path(spec)
    if path.suffix == ".py" or path.exists():
        return load_file(path)
    bundled = load_bundled()
    problem = match_problem(bundled, str(spec))
    if problem is not None:
        return problem
    names = ", ".join(p.name for p in bundled)
    raise ProblemError(f"no problem {spec!r}: not a file, nor a bundled problem ({names})")
