"""The learning experiment: RL of a design policy against the real environment.

Phases, each resumable (``run_experiment`` returns False when its deadline passed; run it again):
1. exhaustive search of the design space on every problem (fills the evaluation cache);
2. per arm and seed: RL steps (rollouts of designs, rewards from cached evaluations, advantages,
   filters and the PPO loss of ``tritongym.rl``), checkpointed;
3. per arm and seed: a fresh evaluation (never a training evaluation; shared by arms and seeds of one
   results directory) of the initial and trained policies on held-out problems, and of the best fixed
   design found by exhaustive search;
4. a summary with 95% confidence intervals over seeds and a figure of the learning curves.

Evaluations are cached by content hash (problem source, candidate source, evaluation config): the
environment is deterministic up to timing noise and the space of renderings is finite.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import torch

from tritongym.design.language import SLOTS, STRATEGIES, Design, DesignSpace
from tritongym.design.policy import DesignPolicy, ModelShape, build_model, build_tokenizer, feedback_tokens
from tritongym.design.problems import KINDS, FusionSpec, bundled_specs, generate_specs, spec_problem, split_specs
from tritongym.design.render import render
from tritongym.env.base import Env, Task
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.problems import Problem
from tritongym.rewards import VerifiableReward
from tritongym.rl import PolicyLossConfig, advantages_with_rejection, policy_loss, profiling_rejection

log = logging.getLogger(__name__)

INFRASTRUCTURE = "infrastructure_error"
POLICY_DEVICE = "cpu"
"""The policy is tiny: it trains on the CPU and leaves the GPU to the environment's sandboxes."""


@dataclass(frozen=True)
class ExperimentConfig:
    """One experiment: problems, design space, policy, RL settings, environment, and its arms."""

    name: str
    """Experiment name (results go under <out>/<name>)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds (policy init, sampling); every arm runs every seed."""
    generated: int = 12
    """Generated fusion-chain problems."""
    problem_seed: int = 0
    """Seed of the problem generator and of the held-out split."""
    kinds: tuple[str, ...] = KINDS
    """Problem kinds to generate (eltwise, reduce, matmul)."""
    held_out: int = 4
    """Generated problems set aside for the final evaluation, never trained on."""
    bundled: bool = False
    """Also train on the bundled problems the language expresses (02_silu, 03_row_sum, 04_softmax, 06_linear_relu)."""
    small: bool = False
    """Evaluate problems at their small (CPU interpreter) sizes."""
    space: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Design values per slot (missing slots: all of the language's values)."""
    model: ModelShape = field(default_factory=ModelShape)
    """The policy transformer's size."""
    steps: int = 40
    """RL steps per arm and seed."""
    samples: int = 8
    """Episodes per problem and step (the group of GRPO/TRLOO)."""
    problems_per_step: int = 0
    """Training problems per step (0: all of them)."""
    turns: int = 1
    """Turns per episode; turns after the first see the previous turn's feedback tokens."""
    advantage: str = "grpo"
    """Advantage estimator (a tritongym.rl registry name: grpo, rloo, trloo, ...)."""
    lr: float = 3e-3
    """Adam learning rate."""
    ppo_epochs: int = 2
    """Optimisation passes over each step's batch."""
    clip_low: float = 0.2
    """PPO clip below 1."""
    clip_high: float = 0.28
    """PPO clip above 1 (clip-higher)."""
    entropy_coef: float = 0.0
    """Entropy bonus weight."""
    reward: dict[str, float] = field(default_factory=dict)
    """VerifiableReward fields (w_correct, w_speedup, speedup_cap, w_coverage, hack_penalty, failure)."""
    prs: bool = False
    """Profiling-based rejection sampling of correct samples with low coverage."""
    prs_threshold: float = 0.3
    """PRS coverage threshold (also the threshold of the lazy rate)."""
    prs_band: float = 0.1
    """PRS ramp width above the threshold."""
    eval: dict[str, Any] = field(default_factory=dict)
    """EvalConfig overrides of the environment (trials, timing_budget_s, torch_compute, profile, ...)."""
    eval_samples: int = 8
    """Sampled designs per held-out problem in the final evaluation (plus the greedy one)."""
    checkpoint_every: int = 5
    """Steps between checkpoints."""
    arms: tuple[dict[str, Any], ...] = ({"name": "rl"},)
    """Variants compared: each a name plus overrides of the fields above (nested reward/eval dicts merge)."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ExperimentConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown experiment settings {unknown}; known: {', '.join(sorted(known))}")
        values = dict(data)
        for key in ("seeds", "kinds", "arms"):
            if key in values:
                values[key] = tuple(values[key])
        if "space" in values:
            values["space"] = {k: tuple(str(v) for v in vs) for k, vs in values["space"].items()}
        if "model" in values:
            values["model"] = ModelShape(**values["model"])
        config = cls(**values)
        for arm in config.arms:
            config.arm(arm.get("name", ""))
        return config

    @classmethod
    def load(cls, path: str | Path) -> ExperimentConfig:
        with open(path, "rb") as f:
            return cls.from_mapping(tomllib.load(f))

    @property
    def arm_names(self) -> list[str]:
        return [arm.get("name", "") for arm in self.arms]

    def arm(self, name: str) -> ExperimentConfig:
        """This config with the overrides of arm ``name`` applied."""
        found = [a for a in self.arms if a.get("name") == name]
        if len(found) != 1:
            raise ConfigError(f"experiment {self.name} has no single arm {name!r} (arms: {self.arm_names})")
        overrides = {k: v for k, v in found[0].items() if k != "name"}
        allowed = {"reward", "eval", "prs", "prs_threshold", "advantage", "turns", "lr", "entropy_coef", "steps"}
        bad = sorted(set(overrides) - allowed)
        if bad:
            raise ConfigError(f"arm {name!r} overrides {bad}; arms may override {', '.join(sorted(allowed))}")
        for key in ("reward", "eval"):
            if key in overrides:
                overrides[key] = {**getattr(self, key), **overrides[key]}
        return replace(self, **overrides)

    def design_space(self) -> DesignSpace:
        return DesignSpace.from_mapping(self.space)

    def eval_config(self, device: str) -> EvalConfig:
        return EvalConfig(device=device, **self.eval)

    def reward_fn(self) -> VerifiableReward:
        return VerifiableReward(**self.reward)


# -- problems -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProblemSet:
    """Training and held-out problems with their Problems at the experiment's sizes."""

    train: list[FusionSpec]
    held_out: list[FusionSpec]
    problems: dict[str, Problem]

    def prompt(self, spec: FusionSpec, small: bool) -> list[str]:
        return ["<bos>", *spec.prompt_tokens(small), "<design>"]


def problem_set(config: ExperimentConfig) -> ProblemSet:
    specs = generate_specs(config.generated, config.problem_seed, config.kinds)
    train, held_out = split_specs(specs, config.held_out, config.problem_seed)
    if config.bundled:
        train = train + bundled_specs()
    problems = {}
    for spec in train + held_out:
        problem = spec_problem(spec)
        problems[spec.name] = problem.small() if config.small else problem
    return ProblemSet(train, held_out, problems)


# -- evaluations --------------------------------------------------------------------------------


def _compact(result: Any) -> dict[str, Any]:
    return {
        "verdict": str(result.verdict.value),
        "correct": bool(result.correct),
        "speedup": result.speedup,
        "coverage": result.coverage,
        "findings": [{"check": f.check} for f in result.findings],
        "feedback": result.feedback[:300],
    }


class Evaluations:
    """Evaluations of (problem, candidate source) pairs on an Env, cached by content hash.

    Two caches, each a JSONL file: one for training and the exhaustive search, one for the final
    held-out evaluations (``fresh``), which never reuse a training evaluation. Infrastructure errors
    are never cached.
    """

    def __init__(self, env: Env, config: EvalConfig, path: Path | None, fresh_path: Path | None = None):
        self.env, self.config = env, config
        self.paths = {False: path, True: fresh_path}
        self.caches: dict[bool, dict[str, dict[str, Any]]] = {False: _read_cache(path), True: _read_cache(fresh_path)}
        self.misses = 0
        """Evaluations run so far (cache misses)."""
        config_key = json.dumps(asdict(config), sort_keys=True, default=str)
        self._config_hash = hashlib.sha256(config_key.encode()).hexdigest()

    def key(self, problem: Problem, source: str) -> str:
        h = hashlib.sha256()
        for part in (problem.source, problem.entry_point, source, self._config_hash):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def evaluate(self, pairs: list[tuple[Problem, str]], fresh: bool = False) -> list[dict[str, Any]]:
        """Results of ``pairs`` in order, each distinct pair evaluated once per cache."""
        keys = [self.key(p, s) for p, s in pairs]
        cache, path = self.caches[fresh], self.paths[fresh]
        todo: dict[str, tuple[Problem, str]] = {}
        for k, pair in zip(keys, pairs, strict=True):
            if k not in cache and k not in todo:
                todo[k] = pair
        found: dict[str, dict[str, Any]] = {}
        if todo:
            self.misses += len(todo)
            tasks = [Task(p, s, label=k) for k, (p, s) in todo.items()]
            out = path.open("a") if path is not None else None
            try:
                for task, result in self.env.evaluate_many(tasks, self.config):
                    row = _compact(result)
                    found[task.label] = row
                    if row["verdict"] != INFRASTRUCTURE:
                        cache[task.label] = row
                        if out is not None:
                            out.write(json.dumps({"key": task.label, "problem": task.problem.name, "result": row}))
                            out.write("\n")
                            out.flush()
            finally:
                if out is not None:
                    out.close()
        return [found[k] if k in found else cache[k] for k in keys]


def _read_cache(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None or not path.exists():
        return {}
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {row["key"]: row["result"] for row in rows}


# -- outcome metrics ------------------------------------------------------------------------------


def is_lazy(result: Mapping[str, Any], threshold: float) -> bool:
    """Correct but with most GPU time outside the candidate's kernels (coverage under ``threshold``);
    where coverage is not measured (CPU), correct with PyTorch compute reported in forward."""
    if not result.get("correct"):
        return False
    coverage = result.get("coverage")
    if coverage is not None:
        return coverage < threshold
    return any(f.get("check") == "torch_compute" for f in result.get("findings", []))


def outcome_metrics(
    results: list[Mapping[str, Any]], rewards: list[float | None], threshold: float
) -> dict[str, float]:
    """Mean reward, correct/hack/lazy rates, fast@1/fast@1.2 and the geometric-mean speedup of correct ones."""
    n = max(len(results), 1)
    scored = [r for r in rewards if r is not None]
    correct = [r for r in results if r.get("correct")]
    speedups = [r["speedup"] for r in correct if r.get("speedup")]
    return {
        "reward": sum(scored) / max(len(scored), 1),
        "correct": len(correct) / n,
        "hack": sum(str(r.get("verdict", "")).startswith("hack_") for r in results) / n,
        "lazy": sum(is_lazy(r, threshold) for r in results) / n,
        "fast1": sum(1 for r in correct if (r.get("speedup") or 0) > 1.0) / n,
        "fast1.2": sum(1 for r in correct if (r.get("speedup") or 0) > 1.2) / n,
        "geomean_speedup": math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else float("nan"),
    }


# -- exhaustive search ------------------------------------------------------------------------------


def exhaustive(
    config: ExperimentConfig,
    problems: ProblemSet,
    evaluations: Evaluations,
    reward: Callable,
    deadline: float = float("inf"),
) -> dict[str, dict[str, float | None]] | None:
    """Reward of every design of the space on every problem: {problem: {design string: reward}}; None
    when the deadline passed first (the evaluations done so far are cached)."""
    designs = list(config.design_space())
    table: dict[str, dict[str, float | None]] = {}
    for spec in problems.train + problems.held_out:
        if time.monotonic() > deadline:
            return None
        problem = problems.problems[spec.name]
        results = evaluations.evaluate([(problem, render(d, spec)) for d in designs])
        table[spec.name] = {str(d): reward(r) for d, r in zip(designs, results, strict=True)}
    return table


def best_fixed_design(table: Mapping[str, Mapping[str, float | None]], names: Iterable[str]) -> str:
    """The one design with the highest mean reward over the problems ``names``."""
    names = list(names)
    designs = next(iter(table.values())).keys()

    def mean(design: str) -> float:
        values = [table[n][design] for n in names]
        return sum(v if v is not None else 0.0 for v in values) / len(values)

    return max(designs, key=mean)


# -- training ------------------------------------------------------------------------------------


@dataclass
class Episode:
    spec: FusionSpec
    group: int
    ids: list[int]
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    designs: list[Design] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    rewards: list[float | None] = field(default_factory=list)


def rollout(
    policy: DesignPolicy,
    specs: list[FusionSpec],
    samples: int,
    turns: int,
    problems: ProblemSet,
    small: bool,
    evaluations: Evaluations,
    reward: Callable,
    generator: torch.Generator,
    greedy: bool = False,
    fresh: bool = False,
) -> list[Episode]:
    """``samples`` episodes of ``turns`` turns per problem: designs sampled, rendered, evaluated, rewarded."""
    episodes = [
        Episode(spec, g, policy.ids(problems.prompt(spec, small)))
        for g, spec in enumerate(specs)
        for _ in range(samples)
    ]
    for turn in range(turns):
        if turn:
            for ep in episodes:
                ep.ids += policy.ids([*feedback_tokens(ep.results[-1]), "<design>"])
        chosen = policy.sample([ep.ids for ep in episodes], generator, greedy=greedy)
        pairs = []
        for ep, tokens in zip(episodes, chosen, strict=True):
            ep.starts.append(len(ep.ids))
            ep.ids += policy.ids(tokens)
            ep.ends.append(len(ep.ids))
            design = Design.from_tokens(tokens)
            ep.designs.append(design)
            pairs.append((problems.problems[ep.spec.name], render(design, ep.spec)))
        for ep, result in zip(episodes, evaluations.evaluate(pairs, fresh=fresh), strict=True):
            ep.results.append(result)
            ep.rewards.append(reward(result))
    return episodes


def _update(
    policy: DesignPolicy, optimizer, episodes: list[Episode], config: ExperimentConfig, generator: torch.Generator
) -> dict[str, float]:
    """Advantages (with PRS), then PPO epochs over one row per (episode, turn)."""
    rows = [(i, t) for i, ep in enumerate(episodes) for t in range(len(ep.designs))]
    rewards = torch.tensor([episodes[i].rewards[t] if episodes[i].rewards[t] is not None else 0.0 for i, t in rows])
    valid = torch.tensor([episodes[i].rewards[t] is not None for i, t in rows])
    group = torch.tensor([episodes[i].group for i, _ in rows])
    turn = torch.tensor([t for _, t in rows])
    trajectory = torch.tensor([i for i, _ in rows])
    keep = valid.clone()
    counts: dict[str, float] = {}
    if config.prs:
        results = [episodes[i].results[t] for i, t in rows]
        correct = torch.tensor([bool(r.get("correct")) for r in results])
        coverage = torch.tensor([r["coverage"] if r.get("coverage") is not None else float("nan") for r in results])
        prs_keep = profiling_rejection(correct, coverage, threshold=config.prs_threshold, band=config.prs_band,
                                       generator=generator)  # fmt: skip
        counts["prs_rejected"] = float((valid & ~prs_keep).sum())
        keep &= prs_keep
    options = {"turn": turn, "trajectory": trajectory} if config.turns > 1 else {}
    advantages = advantages_with_rejection(config.advantage, rewards, group, keep, mask=valid, **options)
    sequences = [episodes[i].ids[: episodes[i].ends[t]] for i, t in rows]
    starts = [episodes[i].starts[t] for i, t in rows]
    mask = keep[:, None].expand(len(rows), len(SLOTS))
    loss_config = PolicyLossConfig(
        clip_low=config.clip_low, clip_high=config.clip_high, entropy_coef=config.entropy_coef
    )
    with torch.no_grad():
        old, _ = policy.logprobs(sequences, starts)
    metrics: dict[str, float] = {}
    device = policy.device
    for _ in range(config.ppo_epochs):
        logp, entropy = policy.logprobs(sequences, starts)
        loss, metrics = policy_loss(
            logp=logp,
            old_logp=old,
            advantages=advantages.to(device),
            token_mask=mask.to(device),
            config=loss_config,
            entropy=entropy,
        )
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        optimizer.step()
    return {**{k: metrics.get(k, 0.0) for k in ("loss", "entropy", "clip_fraction")}, **counts}


def step_metrics(episodes: list[Episode], config: ExperimentConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in range(config.turns):
        results = [ep.results[t] for ep in episodes]
        rewards = [ep.rewards[t] for ep in episodes]
        suffix = "" if t == 0 else f"_turn{t + 1}"
        out |= {f"{k}{suffix}": v for k, v in outcome_metrics(results, rewards, config.prs_threshold).items()}
        if t == 0:
            out |= design_shares([ep.designs[t] for ep in episodes])
    return out


def design_shares(designs: list[Design]) -> dict[str, Any]:
    """Share of each strategy, and of each kind of strategy (``honest_strategy``, ``hack_strategy`` ...)."""
    n = max(len(designs), 1)
    strategies = [d.strategy for d in designs]
    kinds = [d.kind for d in designs]
    shares: dict[str, Any] = {f"{k}_strategy": kinds.count(k) / n for k in ("honest", "lazy", "buggy", "hack")}
    return shares | {"strategy_share": {s: strategies.count(s) / n for s in STRATEGIES}}


@contextmanager
def single_thread() -> Iterator[None]:
    """The policy is tiny: one CPU thread runs it many times faster than several contending ones."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _paths(out: Path, arm: str, seed: int) -> tuple[Path, Path, Path]:
    stem = f"{arm}_seed{seed}"
    return out / f"{stem}.ckpt", out / f"{stem}_metrics.jsonl", out / f"{stem}_final.json"


def _new_policy(config: ExperimentConfig, seed: int, device: str) -> tuple[DesignPolicy, Any]:
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, config.model, seed).to(device)
    policy = DesignPolicy(model, tokenizer, config.design_space())
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    return policy, optimizer


def train(
    config: ExperimentConfig,
    seed: int,
    problems: ProblemSet,
    evaluations: Evaluations,
    out: Path,
    arm: str,
    device: str,
    deadline: float,
) -> DesignPolicy | None:
    """RL of one arm and seed, resumed from its checkpoint; None when the deadline stopped it."""
    with single_thread():
        return _train(config, seed, problems, evaluations, out, arm, device, deadline)


def _train(
    config: ExperimentConfig,
    seed: int,
    problems: ProblemSet,
    evaluations: Evaluations,
    out: Path,
    arm: str,
    device: str,
    deadline: float,
) -> DesignPolicy | None:
    ckpt, metrics_path, _ = _paths(out, arm, seed)
    policy, optimizer = _new_policy(config, seed, device)
    generator = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    step = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        policy.model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
        rng.setstate(state["rng"])
        step = state["step"]
        lines = metrics_path.read_text().splitlines() if metrics_path.exists() else []
        metrics_path.write_text("".join(line + "\n" for line in lines[:step]))
    elif metrics_path.exists():
        metrics_path.unlink()
    reward = config.reward_fn()

    def save() -> None:
        torch.save({"model": policy.model.state_dict(), "optimizer": optimizer.state_dict(),
                    "generator": generator.get_state(), "rng": rng.getstate(), "step": step}, ckpt)  # fmt: skip

    while step < config.steps:
        if time.monotonic() > deadline:
            save()
            return None
        started = time.monotonic()
        misses = evaluations.misses
        specs = problems.train
        if config.problems_per_step and config.problems_per_step < len(specs):
            specs = rng.sample(specs, config.problems_per_step)
        episodes = rollout(policy, specs, config.samples, config.turns, problems, config.small, evaluations, reward,
                           generator)  # fmt: skip
        update = _update(policy, optimizer, episodes, config, generator)
        step += 1
        row = {"step": step, **step_metrics(episodes, config), **update,
               "evaluations": evaluations.misses - misses, "seconds": time.monotonic() - started}  # fmt: skip
        with metrics_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        log.info("%s seed %d step %d: reward %.3f correct %.2f hack %.2f", arm, seed, step, row["reward"],
                 row["correct"], row["hack"])  # fmt: skip
        if step % config.checkpoint_every == 0 or step == config.steps:
            save()
    return policy


def held_out_report(
    policy: DesignPolicy,
    config: ExperimentConfig,
    problems: ProblemSet,
    evaluations: Evaluations,
    optimum: Mapping[str, float],
    seed: int,
) -> dict[str, Any]:
    """Fresh evaluation of ``policy`` on the held-out problems: sampled and greedy designs."""
    reward = config.reward_fn()
    generator = torch.Generator().manual_seed(10_000 + seed)
    sampled = rollout(policy, problems.held_out, config.eval_samples, config.turns, problems, config.small,
                      evaluations, reward, generator, fresh=True)  # fmt: skip
    greedy = rollout(policy, problems.held_out, 1, config.turns, problems, config.small, evaluations, reward,
                     generator, greedy=True, fresh=True)  # fmt: skip
    report: dict[str, Any] = {}
    for label, episodes in (("sampled", sampled), ("greedy", greedy)):
        last = [ep.results[-1] for ep in episodes]
        metrics = outcome_metrics(last, [ep.rewards[-1] for ep in episodes], config.prs_threshold)
        metrics["optimum_share"] = optimum_share([(ep.spec.name, ep.rewards[-1]) for ep in episodes], optimum)
        if config.turns > 1:
            first = outcome_metrics([ep.results[0] for ep in episodes], [ep.rewards[0] for ep in episodes],
                                    config.prs_threshold)  # fmt: skip
            metrics["turn1_reward"] = first["reward"]
            metrics["turn1_correct"] = first["correct"]
        report[label] = metrics | design_shares([ep.designs[-1] for ep in episodes])
    report["greedy_designs"] = {ep.spec.name: [str(d) for d in ep.designs] for ep in greedy}
    return report


def optimum_share(scored: list[tuple[str, float | None]], optimum: Mapping[str, float]) -> float:
    """Mean over samples of reward / the exhaustive optimum of its problem (problems whose optimum is
    not positive are skipped)."""
    shares = [(r or 0.0) / optimum[name] for name, r in scored if optimum.get(name, 0.0) > 0]
    return sum(shares) / len(shares) if shares else float("nan")


# -- the whole experiment ---------------------------------------------------------------------------

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def mean_ci(values: list[float]) -> dict[str, float]:
    """Mean and 95% t-interval half-width over seeds."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return {"mean": float("nan"), "ci95": float("nan"), "n": 0}
    mean = sum(values) / len(values)
    if len(values) < 2:
        return {"mean": mean, "ci95": float("nan"), "n": len(values)}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return {"mean": mean, "ci95": T95.get(len(values) - 1, 1.96) * sd / math.sqrt(len(values)), "n": len(values)}


def run_experiment(
    config: ExperimentConfig, env: Env, out: Path, device: str, deadline: float = float("inf")
) -> dict[str, Any] | None:
    """Run (or resume) every phase; the summary, or None when the deadline stopped it (run again)."""
    with single_thread():
        return _run_experiment(config, env, out, device, deadline)


def _run_experiment(
    config: ExperimentConfig, env: Env, out: Path, device: str, deadline: float
) -> dict[str, Any] | None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(config), indent=1, default=str))
    problems = problem_set(config)
    evaluators: dict[str, Evaluations] = {}

    def evaluations_for(arm_config: ExperimentConfig) -> Evaluations:
        eval_config = arm_config.eval_config(device)
        key = json.dumps(asdict(eval_config), sort_keys=True)
        if key not in evaluators:
            digest = hashlib.sha256(key.encode()).hexdigest()[:12]
            evaluators[key] = Evaluations(
                env, eval_config, out.parent / f"cache_{digest}.jsonl", out.parent / f"fresh_{digest}.jsonl"
            )
        return evaluators[key]

    searches: dict[str, dict[str, Any]] = {}
    for arm in config.arm_names:
        arm_config = config.arm(arm)
        path = out / f"exhaustive_{arm}.json"
        if path.exists():
            searches[arm] = json.loads(path.read_text())
            continue
        table = exhaustive(arm_config, problems, evaluations_for(arm_config), arm_config.reward_fn(), deadline)
        if table is None:
            return None
        best = best_fixed_design(table, [s.name for s in problems.train])
        optimum = {name: max((v for v in row.values() if v is not None), default=0.0) for name, row in table.items()}
        searches[arm] = {"table": table, "best_fixed": best, "optimum": optimum}
        path.write_text(json.dumps(searches[arm], indent=1))
    finals: dict[str, dict[int, dict[str, Any]]] = {}
    for arm in config.arm_names:
        arm_config = config.arm(arm)
        evaluations = evaluations_for(arm_config)
        finals[arm] = {}
        for seed in config.seeds:
            _, _, final_path = _paths(out, arm, seed)
            if final_path.exists():
                finals[arm][seed] = json.loads(final_path.read_text())
                continue
            initial, _ = _new_policy(arm_config, seed, POLICY_DEVICE)
            policy = train(arm_config, seed, problems, evaluations, out, arm, POLICY_DEVICE, deadline)
            if policy is None or time.monotonic() > deadline:
                return None
            search = searches[arm]
            final = {
                "initial": held_out_report(initial, arm_config, problems, evaluations, search["optimum"], seed),
                "trained": held_out_report(policy, arm_config, problems, evaluations, search["optimum"], seed),
            }
            best = Design.from_tokens(search["best_fixed"].split())
            pairs = [(problems.problems[s.name], render(best, s)) for s in problems.held_out]
            results = evaluations.evaluate(pairs, fresh=True)
            rewards = [arm_config.reward_fn()(r) for r in results]
            fixed = outcome_metrics(results, rewards, arm_config.prs_threshold)
            scored = [(s.name, r) for s, r in zip(problems.held_out, rewards, strict=True)]
            fixed["optimum_share"] = optimum_share(scored, search["optimum"])
            final["best_fixed"] = fixed
            final_path.write_text(json.dumps(final, indent=1))
            finals[arm][seed] = final
    summary = summarize(config, problems, searches, finals, out)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot(config, out)
    return summary


def summarize(config, problems: ProblemSet, searches, finals, out: Path) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "experiment": config.name,
        "machine": machine(),
        "train_problems": [s.name for s in problems.train],
        "held_out_problems": [s.name for s in problems.held_out],
        "space_size": len(config.design_space()),
        "arms": {},
    }
    for arm in config.arm_names:
        entry: dict[str, Any] = {"best_fixed_design": searches[arm]["best_fixed"]}
        for policy_name in ("initial", "trained", "best_fixed"):
            for mode in ("sampled", "greedy") if policy_name != "best_fixed" else ("",):
                rows = [finals[arm][s][policy_name] for s in config.seeds]
                rows = [r[mode] for r in rows] if mode else rows
                label = f"{policy_name}_{mode}" if mode else policy_name
                keys = [k for k, v in rows[0].items() if isinstance(v, (int, float))]
                entry[label] = {k: mean_ci([float(r[k]) for r in rows]) for k in keys}
        curves = []
        for seed in config.seeds:
            _, metrics_path, _ = _paths(out, arm, seed)
            curves.append([json.loads(line) for line in metrics_path.read_text().splitlines()])
        keys = ["reward", "correct", "hack", "lazy", "hack_strategy", "lazy_strategy"]
        keys += ["reward_turn2", "correct_turn2"] if config.turns > 1 else []
        for key in keys:
            entry[f"train_{key}_first_step"] = mean_ci([c[0][key] for c in curves])
            entry[f"train_{key}_last3"] = mean_ci([sum(r[key] for r in c[-3:]) / len(c[-3:]) for c in curves])
        summary["arms"][arm] = entry
    return summary


def machine() -> dict[str, str]:
    """Platform, versions and GPU of this run."""
    import platform

    import transformers
    import triton

    info = {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__, "transformers": transformers.__version__}  # fmt: skip
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def plot(config: ExperimentConfig, out: Path) -> None:
    """Learning curves (mean over seeds): reward, correct, hack and lazy rates per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ["reward", "correct", "hack", "hack_strategy", "lazy"] + (["reward_turn2"] if config.turns > 1 else [])
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.2))
    for arm in config.arm_names:
        curves = []
        for seed in config.seeds:
            _, metrics_path, _ = _paths(out, arm, seed)
            curves.append([json.loads(line) for line in metrics_path.read_text().splitlines()])
        steps = min(len(c) for c in curves)
        for ax, key in zip(axes, keys, strict=True):
            mean = [sum(c[i].get(key, 0.0) for c in curves) / len(curves) for i in range(steps)]
            ax.plot(range(1, steps + 1), mean, label=arm)
            ax.set_title(key)
            ax.set_xlabel("step")
    axes[0].legend()
    fig.suptitle(f"{config.name}: mean of {len(config.seeds)} seeds")
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=100)
    plt.close(fig)
