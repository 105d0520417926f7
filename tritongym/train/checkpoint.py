"""Checkpoints: everything needed to continue a run exactly, and a model users can load.

``checkpoints/step-000010/`` holds ``trainable.pt`` (the trained parameters: all of them, or the
LoRA adapter's), ``optimizer.pt``, ``scheduler.pt``, ``rng.pt`` (Python, NumPy and torch states),
``state.json`` (step, data position, the config) and ``model/`` (``save_pretrained`` of the model or
adapter, and the tokenizer).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tritongym.errors import ConfigError
from tritongym.train.model import trainable_parameters

PREFIX = "step-"


def checkpoint_dir(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"{PREFIX}{step:06d}"


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint of a run (one with its state.json), or None."""
    root = Path(run_dir) / "checkpoints"
    done = sorted(p for p in root.glob(f"{PREFIX}*") if (p / "state.json").is_file()) if root.is_dir() else []
    return done[-1] if done else None


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    model: Any,
    tokenizer: Any,
    optimizer: Any,
    scheduler: Any,
    state: dict[str, Any],
    keep: int = 2,
) -> Path:
    """Write the checkpoint of ``step`` (state.json last, so a half-written one is never "latest"),
    then remove all but the ``keep`` newest."""
    path = checkpoint_dir(run_dir, step)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    torch.save({k: v.detach().cpu() for k, v in trainable_parameters(model).items()}, path / "trainable.pt")
    torch.save(optimizer.state_dict(), path / "optimizer.pt")
    torch.save(scheduler.state_dict(), path / "scheduler.pt")
    torch.save(rng_state(), path / "rng.pt")
    model.save_pretrained(path / "model")
    tokenizer.save_pretrained(path / "model")
    (path / "state.json").write_text(json.dumps({"step": step, **state}, indent=1), encoding="utf-8")
    root = path.parent
    done = sorted(p for p in root.glob(f"{PREFIX}*") if (p / "state.json").is_file())
    for old in done[: max(0, len(done) - max(keep, 1))]:
        shutil.rmtree(old)
    return path


def load_checkpoint(path: str | Path, model: Any, optimizer: Any, scheduler: Any) -> dict[str, Any]:
    """Restore parameters, optimizer, scheduler and RNG states; returns state.json."""
    path = Path(path)
    if not (path / "state.json").is_file():
        raise ConfigError(f"{path}: not a complete checkpoint (no state.json)")
    saved = torch.load(path / "trainable.pt", map_location="cpu")
    params = trainable_parameters(model)
    if set(saved) != set(params):
        missing, extra = sorted(set(params) - set(saved)), sorted(set(saved) - set(params))
        raise ConfigError(f"{path}: checkpoint does not fit this model (missing {missing[:3]}, unexpected {extra[:3]})")
    with torch.no_grad():
        for name, value in saved.items():
            params[name].copy_(value)
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location="cpu"))
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", map_location="cpu"))
    set_rng_state(torch.load(path / "rng.pt", map_location="cpu", weights_only=False))
    return json.loads((path / "state.json").read_text(encoding="utf-8"))
