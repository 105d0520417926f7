"""`tritongym train`, `tritongym sft` and `tritongym export-sft` (registered on the main app by
:func:`register`). Heavy imports (transformers, peft) happen inside the commands."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from tritongym.errors import TritonGymError
from tritongym.paths import writable_dir, writable_file
from tritongym.train.interrupt import TrainingInterrupted

err = Console(stderr=True, soft_wrap=True)  # messages hold paths: never broken at the width
EXIT_USAGE, EXIT_INTERRUPTED = 2, 130

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="A TOML file (tables mirror the config sections).")
]
SetOption = Annotated[
    list[str] | None, typer.Option("--set", "-s", help="Override one field: section.field=value (repeatable).")
]
OutOption = Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (overrides run.out).")]
ResumeOption = Annotated[
    bool, typer.Option("--resume", help="Continue from the newest checkpoint of the run directory.")
]


def _usage(exc: Exception) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(str(exc))}")  # user text (paths, keys) is never read as markup
    return typer.Exit(EXIT_USAGE)


def _interrupted(stop: TrainingInterrupted) -> typer.Exit:
    err.print(escape(f"interrupted after step {stop.step}: its checkpoint is in {stop.out}; the same command with "
                     "--resume goes on from there"), style="yellow")  # fmt: skip
    return typer.Exit(EXIT_INTERRUPTED)


def _overrides(sets: list[str] | None, out: Path | None, **fields: object) -> list[str]:
    items = list(sets or [])
    if out is not None:
        items.append(f"run.out={str(out)!r}")
    items += [f"{key}={value!r}" for key, value in fields.items() if value is not None]
    return items


def train(
    config: ConfigOption = None,
    preset: Annotated[str | None, typer.Option(help="A recipe: drkernel or kernel-coder.")] = None,
    set_: SetOption = None,
    out: OutOption = None,
    steps: Annotated[int | None, typer.Option(help="Training steps (overrides run.steps).")] = None,
    resume: ResumeOption = False,
    progress: Annotated[bool, typer.Option(help="Show the live progress line.")] = True,
) -> None:
    """RL on the environment: rollouts, rewards, advantages, filters, PPO (docs/training.md)."""
    from tritongym.train.config import TrainConfig, load_config
    from tritongym.train.trainer import Trainer

    logging.basicConfig(level=logging.WARNING)
    try:
        cfg = load_config(TrainConfig, config, preset, _overrides(set_, out, **{"run.steps": steps}))
        writable_dir(Path(cfg.run.out), "--out" if out is not None else "run.out")
        trainer = Trainer(cfg)
    except TritonGymError as exc:
        raise _usage(exc) from None
    try:
        history = trainer.fit(resume=resume, progress=progress)
    except TritonGymError as exc:
        raise _usage(exc) from None
    except TrainingInterrupted as stop:
        raise _interrupted(stop) from None
    finally:
        trainer.close()
    if history:
        last = history[-1]
        err.print(f"step {trainer.step}: reward {last['reward_mean']:+.3f}, correct {last['correct_rate']:.2f}")
    err.print(f"metrics, trajectories, checkpoints and training_curves.png in {cfg.run.out}")


def sft(
    config: ConfigOption = None,
    set_: SetOption = None,
    data: Annotated[
        Path | None, typer.Option(help="export-sft JSONL or KernelBook table (overrides data.path).")
    ] = None,
    out: OutOption = None,
    resume: ResumeOption = False,
    progress: Annotated[bool, typer.Option(help="Show the live progress line.")] = True,
) -> None:
    """Supervised fine-tuning on (prompt, completion) pairs, loss on the completion tokens only."""
    from tritongym.train.config import SFTConfig, load_config
    from tritongym.train.sft import run_sft

    logging.basicConfig(level=logging.WARNING)
    try:
        cfg = load_config(SFTConfig, config, None, _overrides(set_, out, **{"data.path": str(data) if data else None}))
        if not cfg.data.path:
            raise TritonGymError("no dataset: pass --data or set data.path")
        writable_dir(Path(cfg.run.out), "--out" if out is not None else "run.out")
        history = run_sft(cfg, resume=resume, progress=progress)
    except TritonGymError as exc:
        raise _usage(exc) from None
    except TrainingInterrupted as stop:
        raise _interrupted(stop) from None
    if history:
        err.print(f"{len(history)} steps, last completion loss {history[-1]['sft/loss']:.4f}; outputs in {cfg.run.out}")


def export_sft_command(
    trajectories: Annotated[list[Path], typer.Argument(help="trajectories.jsonl files of bench/train runs.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The SFT dataset to write (.jsonl).")],
    verdict: Annotated[list[str] | None, typer.Option(help="Verdicts kept (repeatable; default ok).")] = None,
    min_speedup: Annotated[float | None, typer.Option(help="Keep turns at least this fast.")] = None,
    min_coverage: Annotated[float | None, typer.Option(help="Keep turns with at least this coverage.")] = None,
) -> None:
    """Write the turns that pass the filters as SFT pairs (turn context as multi-turn chat)."""
    from tritongym.train.sft import export_sft

    try:
        writable_file(out, "--out", make_parent=True)  # as the run directories of train and sft are made
        counts = export_sft(
            trajectories, out, verdicts=tuple(verdict or ["ok"]), min_speedup=min_speedup, min_coverage=min_coverage
        )
    except (TritonGymError, ValueError) as exc:
        raise _usage(exc) from None
    err.print(
        f"{counts['written']} pairs of {counts['read']} turns written to {out} ({counts['duplicates']} duplicates)"
    )
    if not counts["written"]:  # an empty dataset is no SFT data: say why and fail, as sft would on it
        why = "the trajectory files hold no turns" if not counts["read"] else "no turn passed the filters"
        err.print(f"[red]{why}[/red]: nothing to train on")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the training commands to the main CLI."""
    app.command("train")(train)
    app.command("sft")(sft)
    app.command("export-sft")(export_sft_command)
