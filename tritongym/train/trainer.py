"""The RL trainer: builds the model, rollout engine, environment and optimizer from a TrainConfig and
runs :func:`tritongym.train.step.rl_step` for each step, with evaluation, checkpoints, metrics and a
live progress line."""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from tritongym.agent.episodes import Episode
from tritongym.agent.records import write_records
from tritongym.env.base import Env
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.policy.base import SamplingConfig
from tritongym.policy.hf import HFPolicy
from tritongym.problems import Problem, load_problems
from tritongym.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from tritongym.train.config import TrainConfig
from tritongym.train.interrupt import StopAfterStep, TrainingInterrupted
from tritongym.train.metrics import (
    MetricsWriter,
    plot_metrics,
    rollout_metrics,
    truncate_metrics,
    truncate_trajectories,
)
from tritongym.train.model import build_optimizer, load_model
from tritongym.train.rollout import HFRollout, RolloutEngine, build_reward, episode_config, run_episodes
from tritongym.train.step import collect, rl_step
from tritongym.train.task import load_task

log = logging.getLogger(__name__)


def select_problems(source: str, names: list[str], small: bool) -> list[Problem]:
    problems = load_problems(source)
    if names:
        known = {p.name for p in problems}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ConfigError(f"problems {unknown} are not in {source}; it has: {', '.join(sorted(known))}")
        problems = [p for p in problems if p.name in names]
    return [p.small() for p in problems] if small else problems


class Trainer:
    """One training run. ``engine``, ``env``, ``model``/``tokenizer`` may be passed in (tests, a
    custom rollout engine, a remote environment); otherwise they come from the config's task plug-in
    (``task.name``, tritongym.train.task) or are built from the config."""

    def __init__(
        self,
        config: TrainConfig,
        *,
        env: Env | None = None,
        engine: RolloutEngine | None = None,
        model: Any = None,
        tokenizer: Any = None,
    ):
        self.config = config
        run = config.run
        self.out = Path(run.out)
        self.run_id = self.out.name
        torch.manual_seed(run.seed)
        parts = load_task(config)
        data = config.data
        small = data.small if data.small is not None else _evaluates_on_cpu(run.env_devices)
        self.problems = parts.problems
        if self.problems is None:
            self.problems = select_problems(data.problems, data.names, small)
        self.eval_problems: list[Problem] = list(parts.eval_problems or [])
        if parts.eval_problems is None and data.eval_problems:
            self.eval_problems = select_problems(data.eval_problems, data.eval_names, small)
        held_out = {p.name for p in self.eval_problems}
        self.problems = [p for p in self.problems if p.name not in held_out]
        if not self.problems:
            raise ConfigError("no training problems left (every one is held out for evaluation)")
        if model is None and parts.model is not None:
            model, tokenizer = parts.model, parts.tokenizer
        elif model is None:
            model, tokenizer = load_model(config.model, run.seed)
        self.model, self.tokenizer = model, tokenizer
        self.engine = (
            engine
            or parts.engine
            or HFRollout(
                HFPolicy(model, tokenizer, name=config.model.name, max_prompt_tokens=config.rollout.max_prompt_tokens)
            )
        )
        self.reward = build_reward(config.reward.name, config.reward.options, config.reward.no_code)
        self._owns_env = False
        if env is None and parts.env is not None:
            env, self._owns_env = parts.env, True
        if env is None and self.reward.needs_env:
            from tritongym.env import LocalEnv, PoolConfig

            env = LocalEnv(PoolConfig(devices=run.env_devices, sandboxes_per_device=run.env_workers))
            self._owns_env = True
        self.env = env
        r = config.rollout
        if r.temperature <= 0:
            raise ConfigError("rollout.temperature must be > 0 for training (the trainer's log-probs divide by it)")
        self.episode_config = parts.episode or episode_config(
            r.template, r.feedback_template, r.extraction, r.turns, r.history
        )
        self.sampling = SamplingConfig(temperature=r.temperature, top_p=r.top_p, max_tokens=r.max_completion_tokens)
        self.eval_config = EvalConfig(
            trials=run.eval_trials,
            timing=run.eval_timing,
            profile=run.eval_profile,
            device=_env_device(run.env_devices),
        )
        self.optimizer, self.scheduler = build_optimizer(model, config.optim, run.steps)
        self.ref_model = None
        if config.loss.kl_coef > 0 and config.model.lora_rank == 0:
            self.ref_model = copy.deepcopy(model).eval().requires_grad_(False)
        self.step = 0
        self.phase: Callable[[str], None] | None = None
        """Told what a step is doing now (generating, updating): fit's progress line and log."""
        self.weights_lock = threading.Lock()
        """Held while generating and while the weights change (rl_step's update)."""
        self.out.mkdir(parents=True, exist_ok=True)

    # -- data ---------------------------------------------------------------------------------

    def step_seed(self, step: int) -> int:
        """The seed of everything random in ``step`` (sampling, PRS draws, PPO order)."""
        return self.config.run.seed * 1_000_003 + step

    def problems_for_step(self, step: int) -> list[Problem]:
        """The ``prompts_per_step`` problems of ``step`` (1-based): consecutive items of the passes over
        the problems, each pass in its own seeded order, so the data position is a function of the step."""
        per_step = self.config.rollout.prompts_per_step
        n = len(self.problems)
        chosen = []
        for position in range((step - 1) * per_step, step * per_step):
            epoch, index = divmod(position, n)
            order = list(range(n))
            if self.config.data.shuffle:
                order = torch.randperm(
                    n, generator=torch.Generator().manual_seed(self.config.run.seed + epoch)
                ).tolist()
            chosen.append(self.problems[order[index]])
        return chosen

    # -- the loop -----------------------------------------------------------------------------

    def fit(self, steps: int | None = None, resume: bool = False, progress: bool = True) -> list[dict[str, float]]:
        """Train until step ``steps`` (default: run.steps); ``resume`` continues from the newest checkpoint."""
        run, r = self.config.run, self.config.rollout
        total = steps or run.steps
        if resume:
            self.resume()
        writer = MetricsWriter(self.out, tensorboard=run.tensorboard)
        (self.out / "config.json").write_text(json.dumps(self.config.to_dict(), indent=1), encoding="utf-8")
        history = []
        console = Console(stderr=True)
        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
        ahead = ThreadPoolExecutor(1, thread_name_prefix="tritongym-rollout") if r.overlap else None
        pending: Future | None = None
        with StopAfterStep() as stop, Progress(*columns, console=console, disable=not progress, transient=False) as bar:
            task = bar.add_task("training", total=total, completed=self.step)

            def phase(text: str) -> None:  # a CPU step takes minutes: say which part is under way
                bar.update(task, description=text)
                log.info(text)

            self.phase = phase
            try:
                while self.step < total and not stop.requested:
                    step = self.step + 1
                    log.info("step %d of %d started", step, total)
                    waited = time.monotonic()
                    rollout = pending.result() if pending is not None else None
                    waited = time.monotonic() - waited
                    pending = None
                    if ahead is not None and step < total:
                        if rollout is None:
                            rollout = collect(self, step)
                        pending = self._collect_ahead(ahead, step + 1)
                    metrics = rl_step(self, step, rollout)
                    if ahead is not None:
                        metrics["time/wait_rollout"] = waited
                    self.step = step
                    if run.eval_every and self.eval_problems and step % run.eval_every == 0:
                        metrics |= self.evaluate(step)
                    writer.write(step, metrics)
                    history.append(metrics)
                    if (run.checkpoint_every and step % run.checkpoint_every == 0) or step == total or stop.requested:
                        self.save(step)
                    bar.update(task, completed=step, description=_progress_line(step, metrics))
                    log.info(_progress_line(step, metrics))
            finally:
                self.phase = None
                writer.close()
                if ahead is not None:
                    ahead.shutdown(wait=True, cancel_futures=True)
        if history and run.plot:
            plot_metrics(self.out)
        if self.step < total:  # Ctrl-C: the last step finished and its checkpoint is saved
            raise TrainingInterrupted(self.step, self.out)
        return history

    def _collect_ahead(self, pool: ThreadPoolExecutor, step: int) -> Future:
        """Start the rollouts of ``step`` in the background and return once their first generation is
        done: it used the weights from before the current step's update (one step of staleness), and
        their evaluation overlaps that update."""
        generated = threading.Event()
        future = pool.submit(collect, self, step, generated)
        while not generated.wait(0.05) and not future.done():
            pass
        return future

    def evaluate(self, step: int) -> dict[str, float]:
        """Episodes on the held-out problems with the evaluation sampling; metrics prefixed ``eval/``."""
        r = self.config.rollout
        sampling = replace(self.sampling, temperature=r.eval_temperature)
        with torch.random.fork_rng():
            torch.manual_seed(self.step_seed(step) + 7919)
            batch = run_episodes(
                self.engine,
                self.env,
                self.eval_problems,
                samples=r.eval_samples,
                episode=self.episode_config,
                sampling=sampling,
                reward=self.reward,
                eval_config=self.eval_config,
                run_id=f"{self.run_id}/eval-{step}",
                lock=self.weights_lock,
            )
        metrics = rollout_metrics(batch.episodes, self.config.filters.prs_threshold)
        return {f"eval/{k}": v for k, v in metrics.items()}

    def save_records(self, episodes: list[Episode], step: int) -> None:
        if self.config.run.save_trajectories:
            write_records(self.out / "trajectories.jsonl", [r for e in episodes for r in e.records])

    # -- checkpoints --------------------------------------------------------------------------

    def save(self, step: int) -> Path:
        state = {
            "data_position": step * self.config.rollout.prompts_per_step,
            "run_id": self.run_id,
            "config": self.config.to_dict(),
        }
        return save_checkpoint(
            self.out,
            step,
            self.model,
            self.tokenizer,
            self.optimizer,
            self.scheduler,
            state,
            keep=self.config.run.keep_checkpoints,
        )

    def resume(self, path: str | Path | None = None) -> int:
        """Load the newest (or the given) checkpoint; metrics and training trajectories after it are
        dropped. Returns its step."""
        path = Path(path) if path else latest_checkpoint(self.out)
        if path is None:
            raise ConfigError(f"--resume: {self.out} has no checkpoint")
        state = load_checkpoint(path, self.model, self.optimizer, self.scheduler)
        self.step = int(state["step"])
        self.engine.update_weights(self.model)
        truncate_metrics(self.out / "metrics.jsonl", self.step)
        truncate_trajectories(self.out / "trajectories.jsonl", self.step)
        log.info("resumed from %s (step %d)", path, self.step)
        return self.step

    def close(self) -> None:
        if self._owns_env and self.env is not None:
            self.env.close()


def _env_device(devices: str) -> str:
    return "cpu" if devices == "cpu" else "auto"


def _evaluates_on_cpu(devices: str) -> bool:
    return devices == "cpu" or (devices == "auto" and not torch.cuda.is_available())


def _progress_line(step: int, m: dict[str, float]) -> str:
    return (
        f"step {step} reward {m.get('reward_mean', 0.0):+.3f} correct {m.get('correct_rate', 0.0):.2f} "
        f"hack {m.get('hack_rate', 0.0):.2f} {m.get('time/step', 0.0):.1f}s"
    )
