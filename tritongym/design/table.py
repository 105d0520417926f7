"""The evaluation table: every rendering of a design space on every problem, judged once by the real
environment, kept as JSONL keyed by content hash, and an Env that answers from it.

The environment is deterministic up to timing noise and the space of renderings is finite, so the
learning experiment evaluates each distinct (problem, program) pair once (:func:`tabulate`, on the
GPU) and trains against the table (:class:`TableEnv`, anywhere). A table file is one header line
``{"meta": {"eval": <EvalConfig>, ...}}`` and one line per evaluation
``{"key", "problem", "designs", "result"}``; it grows line by line (a later line of a key replaces an
earlier one), so an interrupted tabulation resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from tritongym.env.base import Env, Task, batch_results, stream_results
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.problems import Problem
from tritongym.progress import ProgressReport
from tritongym.rewards.outcome import LAZY_CHECKS

log = logging.getLogger(__name__)

WEAKENABLE = {"coverage": ("coverage", "kernels")}
"""Guards a TableEnv can switch off, and the result fields that switching them off clears:
``coverage`` is what ``EvalConfig.profile = false`` does not measure."""
WEAKENED_FINDINGS = {"coverage": LAZY_CHECKS}
"""The findings a switched-off guard removes too: where coverage is not measured the rewards take the
share of the work a kernel did from the ``torch_compute``/``host_read`` findings
(``outcome.reward_coverage``), so without them nothing tells a lazy kernel from an honest one."""


def content_key(problem: Problem, candidate: str) -> str:
    """The content hash of one evaluation: the problem's source and entry point, and the candidate."""
    h = hashlib.sha256()
    for part in (problem.source, problem.entry_point, candidate):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class Rendering:
    """One distinct program for one problem, and the designs that render it."""

    problem: Problem
    source: str
    designs: tuple[str, ...]

    @property
    def key(self) -> str:
        return content_key(self.problem, self.source)


def distinct(pairs: Iterable[tuple[Problem, str, str]]) -> list[Rendering]:
    """(problem, design, source) triples grouped by content: one Rendering per distinct program."""
    grouped: dict[str, tuple[Problem, str, list[str]]] = {}
    for problem, design, source in pairs:
        grouped.setdefault(content_key(problem, source), (problem, source, []))[2].append(design)
    return [Rendering(p, s, tuple(d)) for p, s, d in grouped.values()]


@dataclass
class Table:
    """A table file's header and rows (key -> row)."""

    path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: str | Path) -> Table:
        """The table at ``path`` (empty if there is none); a last line cut short is skipped."""
        path = Path(path)
        table = cls(path)
        if not path.exists():
            return table
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):
                    continue
                raise ConfigError(f"{path}:{number}: not a JSON line") from None
            if "meta" in row:
                table.meta = row["meta"]
            else:
                table.rows[row["key"]] = row
        return table

    def eval_config(self) -> EvalConfig:
        if "eval" not in self.meta:
            raise ConfigError(f"{self.path}: no header line with the evaluation config")
        return EvalConfig(**self.meta["eval"])

    def result(self, key: str) -> EvalResult:
        return EvalResult.from_dict(self.rows[key]["result"])

    def unjudged(self, key: str) -> bool:
        """Whether the row of ``key`` is an infrastructure error."""
        return self.rows[key]["result"]["verdict"] == Verdict.INFRASTRUCTURE_ERROR.value

    def start(self, meta: Mapping[str, Any]) -> None:
        """Write the header of a new table, or check that an existing one was made the same way."""
        if self.meta:
            if self.meta.get("eval") != meta["eval"]:
                raise ConfigError(
                    f"{self.path} was tabulated with another evaluation config; use a new file "
                    f"(its config: {self.meta.get('eval')})"
                )
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"meta": dict(meta)}) + "\n")
        self.meta = dict(meta)

    def append(self, rendering: Rendering, result: EvalResult) -> None:
        row = {"key": rendering.key, "problem": rendering.problem.name, "designs": list(rendering.designs),
               "result": result.to_dict()}  # fmt: skip
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        self.rows[rendering.key] = row


def eval_meta(config: EvalConfig, **extra: Any) -> dict[str, Any]:
    """A table header: the evaluation config (what must match on resume) and anything informative."""
    return {"eval": json.loads(json.dumps(asdict(config))), **extra}


def tabulate(
    env: Env,
    renderings: Sequence[Rendering],
    table: Table,
    config: EvalConfig,
    *,
    in_flight: int = 8,
    deadline: float = float("inf"),
    retry_infrastructure: bool = False,
    console: Console | None = None,
    description: str = "tabulating",
) -> int:
    """Evaluate every rendering the table lacks (and, with ``retry_infrastructure``, those it holds as
    infrastructure errors), writing each result as it arrives; stop submitting at ``deadline``
    (monotonic clock) and finish what is in flight. At most ``in_flight`` evaluations are queued at
    once (a pool runs what is queued even when closed). An infrastructure error is submitted once more
    in the same call, then written as it is: its episodes are dropped in training, as the trainer
    drops every unjudged turn. Returns how many renderings are still missing (0: complete)."""
    todo = [r for r in renderings if r.key not in table.rows or (retry_infrastructure and table.unjudged(r.key))]
    pending: dict[Future, tuple[Rendering, int]] = {}
    missing = len(todo)
    with ProgressReport(len(todo), description, console or Console(stderr=True), interval_s=10.0) as progress:
        queue = [(r, 1) for r in reversed(todo)]
        while queue or pending:
            while queue and len(pending) < in_flight and time.monotonic() < deadline:
                rendering, attempt = queue.pop()
                pending[env.submit(rendering.problem, rendering.source, config)] = (rendering, attempt)
            if not pending:
                break
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                rendering, attempt = pending.pop(future)
                result = future.result()
                if result.verdict is Verdict.INFRASTRUCTURE_ERROR and attempt == 1:
                    log.warning("infrastructure error on %s (%s): submitted again", rendering.problem.name,
                                result.feedback[:200])  # fmt: skip
                    queue.append((rendering, 2))
                    continue
                progress.advance()
                table.append(rendering, result)
                missing -= 1
    return missing


class TableMiss(ConfigError):
    """A (problem, program) pair the table does not hold."""


class TableEnv:
    """An Env answering from a table (the evaluation config of each call is the table's: see its
    header). ``weaken`` clears the result fields of switched-off guards (:data:`WEAKENABLE`)."""

    def __init__(self, table: Table, weaken: Sequence[str] = ()):
        unknown = sorted(set(weaken) - set(WEAKENABLE))
        if unknown:
            raise ConfigError(f"cannot weaken {unknown}; weakenable guards: {', '.join(WEAKENABLE)}")
        self.table, self.weaken = table, tuple(weaken)
        self.lookups = 0
        """Evaluations answered."""

    def answer(self, problem: Problem, candidate: str | bytes) -> EvalResult:
        source = candidate.decode() if isinstance(candidate, bytes) else candidate
        key = content_key(problem, source)
        if key not in self.table.rows:
            raise TableMiss(f"{self.table.path} has no evaluation of this program for {problem.name}; tabulate it")
        data = dict(self.table.rows[key]["result"])
        for guard in self.weaken:
            for name in WEAKENABLE[guard]:
                data[name] = [] if name == "kernels" else None
            data["findings"] = [f for f in data.get("findings", []) if f.get("check") not in WEAKENED_FINDINGS[guard]]
        self.lookups += 1
        return EvalResult.from_dict(data)

    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None) -> Future[EvalResult]:
        future: Future[EvalResult] = Future()
        future.set_result(self.answer(problem, candidate))
        return future

    def evaluate_many(self, tasks: Iterable[Task], config: EvalConfig | None = None):
        return stream_results(self, tasks, config)

    def evaluate_batch(self, tasks: Iterable[Task], config: EvalConfig | None = None) -> list[EvalResult]:
        return batch_results(self, tasks, config)

    def close(self) -> None:
        return None
