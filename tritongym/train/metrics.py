"""Metrics of a step's episodes, the per-step JSONL (and TensorBoard) writer, the live progress line
and the plot of the training curves. How each metric is computed: docs/training.md."""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from tritongym.agent.episodes import UNEVALUATED, Episode
from tritongym.agent.records import TurnRecord
from tritongym.bench import metrics as bench_metrics
from tritongym.evaluate.result import Verdict
from tritongym.rewards.outcome import reward_coverage

log = logging.getLogger(__name__)

INFRASTRUCTURE = Verdict.INFRASTRUCTURE_ERROR.value

FAST_THRESHOLDS = (1.0, 1.2)
"""The p of the ``fast@p`` metrics."""
FAST_CONVENTION: bench_metrics.Convention = "drkernel"
"""fast@p counts correct answers with a trusted speedup >= p (tritongym.bench.metrics.fast_p, the
Dr.Kernel convention; ``tritongym bench`` reports both conventions)."""


def _rate(value: float | None) -> float:
    return math.nan if value is None else value


def _lazy(record: TurnRecord, threshold: float) -> bool:
    """A correct turn whose coverage (measured, or on the CPU its findings' share: outcome.reward_coverage)
    is below ``threshold``."""
    coverage = reward_coverage({**(record.result or {}), "verdict": record.verdict})
    return coverage is not None and coverage < threshold


def rollout_metrics(episodes: list[Episode], lazy_threshold: float = 0.3) -> dict[str, float]:
    """Rates over the scored turns of ``episodes`` (infrastructure errors excluded and counted). The
    outcome rates are tritongym.bench.metrics' definitions over the evaluated turns (a text-only
    reward's ``unevaluated`` turns have none: NaN); NaN also where a rate is not measured."""
    turns = [r for e in episodes for r in e.records if r.verdict != INFRASTRUCTURE]
    infra = sum(1 for e in episodes for r in e.records if r.verdict == INFRASTRUCTURE)
    n = len(turns)
    out: dict[str, float] = {"episodes": float(len(episodes)), "turns": float(n), "infra_turns": float(infra)}
    rewards = [r.reward for r in turns if r.reward is not None]
    out["reward_mean"] = statistics.fmean(rewards) if rewards else 0.0
    out["reward_std"] = statistics.pstdev(rewards) if len(rewards) > 1 else 0.0
    for verdict, count in sorted(Counter(r.verdict for r in turns).items()):
        out[f"verdict/{verdict}"] = count / n
    attempts = [bench_metrics.attempt(r) for e in episodes for r in e.records if r.verdict != UNEVALUATED]
    out["compile_rate"] = _rate(bench_metrics.compile_rate(attempts))
    out["correct_rate"] = _rate(bench_metrics.correct_rate(attempts))
    out["hack_rate"] = _rate(bench_metrics.category_rate(attempts, bench_metrics.HACK))
    for p in FAST_THRESHOLDS:
        out[f"fast@{p:g}"] = _rate(bench_metrics.fast_p(attempts, p, FAST_CONVENTION))
    coverage = bench_metrics.coverage_distribution(bench_metrics.scored(attempts))
    out["coverage_mean"] = coverage["mean"] if coverage else math.nan
    lazy = [
        _lazy(r, lazy_threshold) for e in episodes for r in e.records if r.verdict not in (UNEVALUATED, INFRASTRUCTURE)
    ]
    out["lazy_rate"] = sum(lazy) / len(lazy) if lazy else math.nan
    best, _ = bench_metrics.best_within(attempts, lambda a: True)
    out["episode_correct_rate"] = _rate(bench_metrics.correct_rate(best))
    out["tokens/prompt"] = float(sum(r.prompt_tokens for r in turns))
    out["tokens/completion"] = float(sum(r.completion_tokens for r in turns))
    out["tokens/completion_mean"] = out["tokens/completion"] / n if n else 0.0
    out["truncated_rate"] = sum(r.finish_reason == "length" for r in turns) / n if n else 0.0
    return out


class MetricsWriter:
    """Appends one JSON object per step to ``metrics.jsonl``; mirrors scalars to TensorBoard when
    ``tensorboard`` is installed and asked for."""

    def __init__(self, out: str | Path, tensorboard: bool = True):
        self.path = Path(out) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(Path(out) / "tensorboard"))
            except ImportError:
                log.info("tensorboard is not installed: metrics go to %s only", self.path)

    def write(self, step: int, metrics: dict[str, Any]) -> None:
        row = {"step": step, **{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        if self._tb is not None:
            for key, value in row.items():
                if isinstance(value, int | float) and key != "step":
                    self._tb.add_scalar(key, value, step)
            self._tb.flush()

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a metrics.jsonl (a run directory or the file); a cut-short last line is skipped."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def truncate_metrics(path: Path, last_step: int) -> None:
    """Drop the rows after ``last_step`` (a resumed run rewrites the steps after its checkpoint)."""
    if not path.exists():
        return
    kept = [line for line in path.read_text(encoding="utf-8").splitlines() if _step_of(line) <= last_step]
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def record_step(run_id: str) -> int | None:
    """The training step of a trajectory record (its run id ends with ``/step-N``), else None."""
    _, sep, step = run_id.rpartition("/step-")
    return int(step) if sep and step.isdigit() else None


def truncate_trajectories(path: Path, last_step: int) -> None:
    """Drop the training records of the steps after ``last_step`` (a resumed run collects them again)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            step = record_step(str(json.loads(line).get("run_id", "")))
        except json.JSONDecodeError:
            continue  # the cut-short last line of an interrupted run
        if step is None or step <= last_step:
            kept.append(line)
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def _step_of(line: str) -> int:
    try:
        return int(json.loads(line).get("step", 0))
    except (json.JSONDecodeError, TypeError, ValueError):
        return 1 << 62


PLOTTED = (
    ("reward_mean", "reward (mean)"),
    ("correct_rate", "correct rate"),
    ("hack_rate", "hack rate"),
    ("fast@1", "fast@1"),
    ("coverage_mean", "coverage (mean)"),
    ("entropy", "entropy"),
    ("train/clip_fraction", "clip fraction"),
    ("train/loss", "loss"),
    ("eval/correct_rate", "held-out correct rate"),
    ("eval/reward_mean", "held-out reward"),
    ("sft/loss", "SFT loss"),
    ("sft/eval_loss", "SFT held-out loss"),
)


def plot_metrics(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """training_curves.png: one panel per metric the run recorded (from metrics.jsonl)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    rows = read_metrics(run_dir)
    panels = [(key, title) for key, title in PLOTTED if any(r.get(key) is not None for r in rows)]
    out = Path(out) if out else run_dir / "training_curves.png"
    cols = 3
    nrows = max(1, math.ceil(len(panels) / cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 2.8 * nrows), squeeze=False)
    for ax, (key, title) in zip(axes.flat, panels, strict=False):
        points = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="." if len(points) < 30 else None)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
