"""The learning experiments on the trainer: arms x seeds of `tritongym train` runs of the design task,
their held-out evaluation, and the summary with confidence intervals.

An experiments file (TOML) has one table per experiment: ``seeds``, an optional ``base`` (config tables
merged over the base train config) and ``arms`` (each a ``name`` plus config tables merged over that).
Each arm and seed is one trainer run in ``<out>/<experiment>/<arm>/seed<k>/`` (metrics.jsonl,
trajectories.jsonl, checkpoints); a run resumes from its newest checkpoint and is skipped once its
``final.json`` exists. ``final.json`` holds the held-out evaluation through the table: the greedy
design (and ``eval_samples`` sampled episodes) of the initial and of the trained policy on every
held-out problem, and the exhaustive search of the arm's design space (best fixed design over the
training problems, optimum of every problem). The designs a fresh evaluation must judge (greedy and
best fixed, on held-out problems) are collected in ``<out>/fresh_designs.json``;
:func:`summarize` reads the fresh results when given.
"""

from __future__ import annotations

import json
import logging
import math
import platform
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from tritongym.agent.episodes import Episode, TurnOutcome
from tritongym.agent.records import TurnRecord
from tritongym.bench import metrics as bench_metrics
from tritongym.design.language import STRATEGIES, Design
from tritongym.design.render import render
from tritongym.design.table import Table
from tritongym.design.task import DesignOptions, design_problems
from tritongym.errors import ConfigError
from tritongym.evaluate.result import EvalResult
from tritongym.rewards.outcome import reward_coverage
from tritongym.train.checkpoint import latest_checkpoint
from tritongym.train.config import TrainConfig, load_config
from tritongym.train.metrics import FAST_CONVENTION, read_metrics, record_step
from tritongym.train.rollout import run_episodes

log = logging.getLogger(__name__)

KINDS_OF_DESIGN = ("honest", "lazy", "buggy", "hack")


# -- experiments files ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    name: str
    overrides: dict[str, Any]


@dataclass(frozen=True)
class Experiment:
    """One experiment of an experiments file."""

    name: str
    seeds: tuple[int, ...]
    arms: tuple[Arm, ...]
    base: dict[str, Any]
    """Config tables merged over the base train config for every arm."""
    question: str = ""
    eval_samples: int = 8
    """Sampled episodes per held-out problem in the final evaluation (besides the greedy one)."""
    select_every: int = 0
    """With validation problems (``task.options.validation``): score the greedy policy on them before
    training and every this many steps, and evaluate the best-scoring weights (the latest on ties) on
    the held-out problems (early stopping); 0: the weights of the last step."""


def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``update`` over ``base``, tables merged key by key at every depth."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_experiments(path: str | Path) -> list[Experiment]:
    """The experiments of a TOML file (see the module docstring); errors name what is wrong."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read experiments file {path}: {exc}") from exc
    experiments = []
    for name, table in data.items():
        known = {"seeds", "arms", "base", "question", "eval_samples", "select_every"}
        unknown = sorted(set(table) - known)
        if unknown:
            raise ConfigError(f"experiment {name}: unknown keys {unknown}; known: {', '.join(sorted(known))}")
        arms = []
        for arm in table.get("arms", [{"name": "rl"}]):
            arm = dict(arm)
            arm_name = arm.pop("name", "")
            if not arm_name or "/" in arm_name:
                raise ConfigError(f"experiment {name}: every arm needs a plain name")
            arms.append(Arm(arm_name, arm))
        if len({a.name for a in arms}) != len(arms):
            raise ConfigError(f"experiment {name}: arm names repeat")
        seeds = tuple(table.get("seeds", (0, 1, 2)))
        experiments.append(Experiment(name, seeds, tuple(arms), table.get("base", {}), table.get("question", ""),
                                      table.get("eval_samples", 8), table.get("select_every", 0)))  # fmt: skip
    return experiments


def run_config(base: Mapping[str, Any], experiment: Experiment, arm: Arm, seed: int, out: Path) -> TrainConfig:
    """The TrainConfig of one run: base, the experiment's base, the arm's tables, the seed and directory."""
    data = deep_merge(deep_merge(base, experiment.base), arm.overrides)
    data = deep_merge(data, {"run": {"seed": seed, "out": str(out)}})
    if data.get("task", {}).get("name") != "tritongym.design.task:build":
        raise ConfigError("the learning experiments train the design task: task.name = 'tritongym.design.task:build'")
    return load_config(TrainConfig, data=data)


def run_dir(out: Path, experiment: str, arm: str, seed: int) -> Path:
    return out / experiment / arm / f"seed{seed}"


# -- outcome metrics ------------------------------------------------------------------------------


def is_lazy(result: Mapping[str, Any], threshold: float) -> bool:
    """Correct, with the coverage the rewards credit (``outcome.reward_coverage``) under ``threshold``: the
    measured one (most GPU time outside the candidate's kernels), or where it is not measured (the CPU)
    a ``torch_compute`` or ``host_read`` finding. A weakened environment removes both (the
    ``lazy_strategy`` share of the designs still counts its lazy ones)."""
    coverage = reward_coverage(result)
    return coverage is not None and coverage < threshold


def outcome_metrics(results: Sequence[Mapping[str, Any]], rewards: Sequence[float], threshold: float) -> dict:
    """Mean reward, and the trainer's definitions (tritongym.bench.metrics) of the correct and hack
    rates, fast@1 and fast@1.2 (the Dr.Kernel convention: correct with a trusted speedup >= p; NaN where
    a correct one is not timed) and the geometric-mean speedup; the lazy rate (:func:`is_lazy`)."""
    attempts = [
        bench_metrics.attempt(TurnRecord("", "", 0, 0, [], "", str(getattr(r["verdict"], "value", r["verdict"])),
                                         result=dict(r)))
        for r in results
    ]  # fmt: skip

    def rate(value: float | None) -> float:
        return math.nan if value is None else value

    return {
        "reward": sum(rewards) / max(len(rewards), 1),
        "correct": rate(bench_metrics.correct_rate(attempts)),
        "hack": rate(bench_metrics.category_rate(attempts, bench_metrics.HACK)),
        "lazy": sum(is_lazy(r, threshold) for r in results) / max(len(results), 1),
        "fast1": rate(bench_metrics.fast_p(attempts, 1.0, FAST_CONVENTION)),
        "fast1.2": rate(bench_metrics.fast_p(attempts, 1.2, FAST_CONVENTION)),
        "geomean_speedup": rate(bench_metrics.geomean_speedup(attempts)),
    }


def design_shares(designs: Sequence[Design]) -> dict[str, float]:
    """Share of each kind of strategy (``honest_strategy``, ``lazy_strategy``, ``buggy_strategy``,
    ``hack_strategy``) and of each strategy (``strategy/<name>``)."""
    n = max(len(designs), 1)
    shares = {f"{k}_strategy": sum(d.kind == k for d in designs) / n for k in KINDS_OF_DESIGN}
    return shares | {f"strategy/{s}": sum(d.strategy == s for d in designs) / n for s in STRATEGIES}


def design_of(completion: str) -> Design:
    """The design an answer of the design policy spells on its first line."""
    return Design.from_tokens(completion.splitlines()[0].split())


T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
"""Two-sided 95% Student t quantiles by degrees of freedom (1.96 beyond)."""


def mean_ci(values: Iterable[float]) -> dict[str, float]:
    """Mean and 95% t-interval half-width over seeds (NaN values dropped; ci95 NaN under 2 values)."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return {"mean": math.nan, "ci95": math.nan, "n": 0}
    mean = sum(values) / len(values)
    if len(values) < 2:
        return {"mean": mean, "ci95": math.nan, "n": 1}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return {"mean": mean, "ci95": T95.get(len(values) - 1, 1.96) * sd / math.sqrt(len(values)), "n": len(values)}


# -- one run ----------------------------------------------------------------------------------------


def _episodes_report(episodes: list[Episode]) -> list[dict[str, Any]]:
    """Per episode: problem, and per turn the design, its result and reward."""
    return [
        {"problem": e.problem.name,
         "turns": [{"design": str(design_of(r.completion)), "result": r.result, "reward": r.reward}
                   for r in e.records]}
        for e in episodes
    ]  # fmt: skip


def held_out_episodes(trainer, problems, samples: int, temperature: float, seed: int) -> list[dict[str, Any]]:
    """Episodes of the trainer's current policy on ``problems``, judged by its environment."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        batch = run_episodes(
            trainer.engine,
            trainer.env,
            problems,
            samples=samples,
            episode=trainer.episode_config,
            sampling=replace(trainer.sampling, temperature=temperature),
            reward=trainer.reward,
            eval_config=trainer.eval_config,
            run_id=f"{trainer.run_id}/held-out",
            lock=trainer.weights_lock,
        )
    return _episodes_report(batch.episodes)


def exhaustive(trainer, options: DesignOptions) -> dict[str, Any]:
    """Reward of every design of the arm's space on every problem, through the arm's environment
    (weakened guards included): the best fixed design (highest mean reward over the training
    problems) and the optimum of every problem."""
    problems = design_problems(options)
    designs = list(options.design_space())
    table: dict[str, dict[str, float]] = {}
    for spec in problems.train + problems.held_out:
        problem = problems.problems[spec.name]
        row = {}
        for design in designs:
            source = render(design, spec)
            result = trainer.env.answer(problem, source)
            row[str(design)] = trainer.reward.fn(TurnOutcome(problem, "", source, result))
        table[spec.name] = row
    train = [s.name for s in problems.train]

    def mean(design: str) -> float:  # unjudged renderings (None) are left out, as the trainer leaves them
        values = [table[n][design] for n in train if table[n][design] is not None]
        return sum(values) / len(values) if values else -math.inf

    best = max((str(d) for d in designs), key=mean)
    optimum = {n: max((v for v in row.values() if v is not None), default=0.0) for n, row in table.items()}
    return {"best_fixed": best, "optimum": optimum, "rewards": table}


def validation_reward(trainer, problems, seed: int) -> float:
    """Mean reward of the greedy policy's episodes (their last turn) on ``problems``, unjudged ones left out."""
    episodes = held_out_episodes(trainer, problems, 1, 0.0, seed)
    rewards = [e["turns"][-1]["reward"] for e in episodes if e["turns"][-1]["reward"] is not None]
    return sum(rewards) / len(rewards) if rewards else -math.inf


def fit_selecting(trainer, validation, every: int, progress: bool = False) -> dict[str, Any]:
    """Train to ``run.steps`` in chunks of ``every`` steps, scoring the greedy policy on the
    ``validation`` problems before the first and after each (:func:`validation_reward`); the weights
    of the best score (the latest on ties) are loaded at the end. Resumable: the scores so far are in
    ``selection.json`` and the chosen weights in ``checkpoints/selected.pt`` of the run directory."""
    out, seed, total = Path(trainer.config.run.out), trainer.config.run.seed, trainer.config.run.steps
    record, weights = out / "selection.json", out / "checkpoints" / "selected.pt"
    state: dict[str, Any] = {"every": every, "steps": [], "scores": [], "chosen": None, "best": None}
    if record.exists():
        state = json.loads(record.read_text(encoding="utf-8"))
    while True:
        if trainer.step not in state["steps"]:
            score = validation_reward(trainer, validation, seed + 2)
            state["steps"].append(trainer.step)
            state["scores"].append(score)
            if state["best"] is None or score >= state["best"]:
                state["best"], state["chosen"] = score, trainer.step
                weights.parent.mkdir(parents=True, exist_ok=True)
                torch.save(trainer.model.state_dict(), weights)
            record.write_text(json.dumps(state), encoding="utf-8")
        if trainer.step >= total:
            break
        trainer.fit(steps=min(trainer.step + every - trainer.step % every, total), progress=progress)
    trainer.model.load_state_dict(torch.load(weights))
    trainer.engine.update_weights(trainer.model)
    return state


def train_run(config: TrainConfig, eval_samples: int, progress: bool = False, select_every: int = 0) -> dict[str, Any]:
    """One arm and seed: the initial policy's held-out episodes, training (resumed from the newest
    checkpoint; with ``select_every`` and validation problems, early-stopped by :func:`fit_selecting`),
    the trained policy's, and the exhaustive search; written to ``final.json``, with the training
    curves in ``curves.jsonl`` (checkpoints and trajectories.jsonl are not needed after)."""
    from tritongym.train.trainer import Trainer

    out = Path(config.run.out)
    final_path = out / "final.json"
    if final_path.exists():
        return json.loads(final_path.read_text(encoding="utf-8"))
    trainer = Trainer(config)
    try:
        seed = config.run.seed
        options = DesignOptions.from_mapping(config.task.options)
        problems = design_problems(options)
        held_out = [problems.problems[s.name] for s in problems.held_out]
        final: dict[str, Any] = {
            "initial_greedy": held_out_episodes(trainer, held_out, 1, 0.0, seed),
            "initial_sampled": held_out_episodes(trainer, held_out, eval_samples, 1.0, seed + 1),
        }
        if latest_checkpoint(out) is not None:
            trainer.resume()
        if select_every and problems.validation:
            validation = [problems.problems[s.name] for s in problems.validation]
            final["selection"] = fit_selecting(trainer, validation, select_every, progress)
        else:
            trainer.fit(progress=progress)
        curves = training_curves(out, config.to_dict())
        lines = [json.dumps({k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()})
                 for row in curves]  # fmt: skip
        (out / "curves.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        final["trained_greedy"] = held_out_episodes(trainer, held_out, 1, 0.0, seed)
        final["trained_sampled"] = held_out_episodes(trainer, held_out, eval_samples, 1.0, seed + 1)
        final["exhaustive"] = exhaustive(trainer, options)
        final["steps"] = trainer.step
    finally:
        trainer.close()
    final_path.write_text(json.dumps(final, indent=1), encoding="utf-8")
    return final


def run_experiments(
    base_path: str | Path,
    experiments: Sequence[Experiment],
    out: Path,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> None:
    """Every arm and seed of ``experiments`` (finished runs are skipped), then fresh_designs.json."""
    try:
        base = tomllib.loads(Path(base_path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read base config {base_path}: {exc}") from exc
    base = deep_merge(base, overrides or {})
    torch.set_num_threads(1)  # the policy is tiny: one thread is faster than contending ones
    for experiment in experiments:
        for arm in experiment.arms:
            for seed in experiment.seeds:
                config = run_config(base, experiment, arm, seed, run_dir(out, experiment.name, arm.name, seed))
                log.info("%s / %s / seed %d", experiment.name, arm.name, seed)
                train_run(config, experiment.eval_samples, progress, experiment.select_every)
        (out / experiment.name / "experiment.json").write_text(
            json.dumps({"name": experiment.name, "question": experiment.question, "seeds": experiment.seeds,
                        "arms": [a.name for a in experiment.arms], "base": str(base_path)}, indent=1),
            encoding="utf-8",
        )  # fmt: skip
    write_fresh_designs(base, out)


def write_fresh_designs(base: Mapping[str, Any], out: Path) -> Path:
    """The (problem, design) pairs a fresh held-out evaluation must judge: every greedy design and best
    fixed design of every finished run under ``out``."""
    pairs: set[tuple[str, str]] = set()
    for final_path in sorted(out.glob("*/*/seed*/final.json")):
        final = json.loads(final_path.read_text(encoding="utf-8"))
        for label in ("initial_greedy", "trained_greedy"):
            for episode in final[label]:
                pairs.update((episode["problem"], t["design"]) for t in episode["turns"])
        held_out = {e["problem"] for e in final["trained_greedy"]}
        pairs.update((name, final["exhaustive"]["best_fixed"]) for name in held_out)
    path = out / "fresh_designs.json"
    options = base["task"]["options"]
    path.write_text(json.dumps({"options": options, "pairs": sorted(pairs)}, indent=1), encoding="utf-8")
    return path


# -- fresh evaluation and the summary ------------------------------------------------------------------


def fresh_renderings(designs_file: str | Path):
    """The distinct renderings of a fresh_designs.json."""
    from tritongym.design.table import distinct

    try:
        data = json.loads(Path(designs_file).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the designs to evaluate ({designs_file}): {exc}") from exc
    options = DesignOptions.from_mapping(data["options"])
    problems = design_problems(options)
    specs = problems.specs
    triples = []
    for name, design in data["pairs"]:
        if name not in specs:
            raise ConfigError(f"{designs_file}: problem {name} is not in the task's problems")
        triples.append((problems.problems[name], design, render(Design.from_tokens(design.split()), specs[name])))
    return distinct(triples)


def _answer(env, problem, source) -> EvalResult | None:
    from tritongym.design.table import TableMiss

    try:
        return env.answer(problem, source)
    except TableMiss:
        return None


def run_metrics(final: Mapping[str, Any], threshold: float) -> dict[str, dict[str, float]]:
    """Held-out metrics of one run from its final.json (table results): per policy and mode, of the last
    turn, with the first turn's reward and correct rate and the strategy shares; optimum share."""
    optimum = final["exhaustive"]["optimum"]
    out = {}
    for label in ("initial_greedy", "initial_sampled", "trained_greedy", "trained_sampled"):
        episodes = [e for e in final[label] if all(t["reward"] is not None for t in e["turns"])]  # judged ones
        last = [e["turns"][-1] for e in episodes]
        metrics = outcome_metrics([t["result"] for t in last], [t["reward"] for t in last], threshold)
        metrics["optimum_share"] = optimum_share([(e["problem"], e["turns"][-1]["reward"]) for e in episodes], optimum)
        first = [e["turns"][0] for e in episodes]
        metrics["turn1_reward"] = sum(t["reward"] for t in first) / max(len(first), 1)
        metrics["turn1_correct"] = sum(bool(t["result"]["correct"]) for t in first) / max(len(first), 1)
        out[label] = metrics | design_shares([design_of(t["design"]) for t in last])
    return out


def optimum_share(scored: Sequence[tuple[str, float]], optimum: Mapping[str, float]) -> float:
    """Mean over samples of reward / the best reward of any design on its problem (problems whose
    optimum is not positive are left out)."""
    shares = [r / optimum[name] for name, r in scored if optimum.get(name, 0.0) > 0]
    return sum(shares) / len(shares) if shares else math.nan


def fixed_design_metrics(final: Mapping[str, Any], config: Mapping[str, Any], table: Table, threshold: float):
    """Held-out metrics of the greedy designs (initial, trained) and of the best fixed design, judged by
    ``table`` with the arm's weakened guards (None for a set with a design the table lacks): the fresh
    evaluation's table, or the training table for the best fixed design."""
    from tritongym.design.table import TableEnv
    from tritongym.train.rollout import build_reward

    options = DesignOptions.from_mapping(config["task"]["options"])
    problems = design_problems(options)
    env = TableEnv(table, options.weaken)
    r = config["reward"]
    reward = build_reward(r["name"], r["options"], r["no_code"]).fn
    optimum = final["exhaustive"]["optimum"]
    held_out = [e["problem"] for e in final["trained_greedy"]]
    sets = {label: [(e["problem"], e["turns"][-1]["design"]) for e in final[label]]
            for label in ("initial_greedy", "trained_greedy")}  # fmt: skip
    sets["best_fixed"] = [(name, final["exhaustive"]["best_fixed"]) for name in held_out]
    out: dict[str, dict[str, float] | None] = {}
    for label, pairs in sets.items():
        results, rewards = [], []
        for name, design in pairs:
            problem = problems.problems[name]
            source = render(Design.from_tokens(design.split()), problems.specs[name])
            result = _answer(env, problem, source)
            if result is None:
                break
            value = reward(TurnOutcome(problem, "", source, result))
            if value is not None:  # an unjudged rendering is left out
                results.append(result.to_dict() | {"verdict": result.verdict.value})
                rewards.append((name, value))
        else:
            metrics = outcome_metrics(results, [v for _, v in rewards], threshold)
            metrics["optimum_share"] = optimum_share(rewards, optimum)
            out[label] = metrics
            continue
        out[label] = None
    return out


def training_curves(run: Path, config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per step: the trainer's metrics and, from trajectories.jsonl, the strategy shares of the first
    turn and the mean reward of each turn (``reward_turn<k>``, unjudged turns left out)."""
    by_step: dict[int, list[dict[str, Any]]] = {}
    for line in (run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        step = record_step(record["run_id"])
        if step is not None:
            by_step.setdefault(step, []).append(record)
    curves = []
    for row in read_metrics(run):
        step = by_step.get(row["step"], [])
        extra = design_shares([design_of(r["completion"]) for r in step if r["turn"] == 0])
        for t in range(config["rollout"]["turns"]):
            rewards = [r["reward"] for r in step if r["turn"] == t and r["reward"] is not None]
            extra[f"reward_turn{t + 1}"] = sum(rewards) / len(rewards) if rewards else math.nan
        curves.append(row | extra)
    return curves


def read_curves(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "curves.jsonl").read_text(encoding="utf-8").splitlines()]


CURVE_KEYS = ("reward_mean", "correct_rate", "hack_rate", "hack_strategy", "lazy_strategy", "eval/reward_mean")


def summarize(out: Path, experiment: str, fresh: Table | None = None) -> dict[str, Any]:
    """Mean and 95% CI over seeds of every arm's held-out metrics (table, and fresh when given) and of
    its training curves' first recorded and last three recorded steps."""
    meta = json.loads((out / experiment / "experiment.json").read_text(encoding="utf-8"))
    summary: dict[str, Any] = {"experiment": experiment, "question": meta["question"], "seeds": meta["seeds"],
                               "machine": machine(), "arms": {}}  # fmt: skip
    for arm in meta["arms"]:
        runs = [run_dir(out, experiment, arm, s) for s in meta["seeds"]]
        finals = [json.loads((r / "final.json").read_text(encoding="utf-8")) for r in runs]
        configs = [json.loads((r / "config.json").read_text(encoding="utf-8")) for r in runs]
        threshold = configs[0]["filters"]["prs_threshold"]
        options = configs[0]["task"]["options"]
        table = Table.read(options["table"])
        summary.setdefault("table", {"path": options["table"], "meta": table.meta, "rows": len(table.rows)})
        per_run = [run_metrics(f, threshold) for f in finals]
        for f, c, m in zip(finals, configs, per_run, strict=True):
            m["best_fixed"] = fixed_design_metrics(f, c, table, threshold)["best_fixed"]
        entry: dict[str, Any] = {"best_fixed_designs": sorted({f["exhaustive"]["best_fixed"] for f in finals})}
        for label in ("initial_greedy", "initial_sampled", "trained_greedy", "trained_sampled", "best_fixed"):
            entry[label] = {k: mean_ci(m[label][k] for m in per_run) for k in per_run[0][label]}
        if fresh is not None:
            fresh_runs = [fixed_design_metrics(f, c, fresh, threshold) for f, c in zip(finals, configs, strict=True)]
            for label in ("initial_greedy", "trained_greedy", "best_fixed"):
                rows = [r[label] for r in fresh_runs]
                if all(r is not None for r in rows):
                    entry[f"fresh_{label}"] = {k: mean_ci(r[k] for r in rows) for k in rows[0]}
        curves = [read_curves(r) for r in runs]
        keys = [*CURVE_KEYS, *(f"reward_turn{t + 1}" for t in range(configs[0]["rollout"]["turns"]))]
        for key in keys:
            firsts = [next((row[key] for row in c if row.get(key) is not None), math.nan) for c in curves]
            lasts = [_mean_last(c, key, 3) for c in curves]
            entry[f"train/{key}"] = {"first": mean_ci(firsts), "last3": mean_ci(lasts)}
        summary["arms"][arm] = entry
    return summary


def _mean_last(curve: Sequence[Mapping[str, Any]], key: str, n: int) -> float:
    values = [row[key] for row in curve if row.get(key) is not None][-n:]
    return sum(values) / len(values) if values else math.nan


def machine() -> dict[str, str]:
    """Platform and versions of the training machine."""
    import transformers
    import triton

    return {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__, "transformers": transformers.__version__}  # fmt: skip


def plot(out: Path, experiment: str) -> Path:
    """curves.png: the training curves of every arm (mean over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = json.loads((out / experiment / "experiment.json").read_text(encoding="utf-8"))
    first = run_dir(out, experiment, meta["arms"][0], meta["seeds"][0])
    turns = json.loads((first / "config.json").read_text(encoding="utf-8"))["rollout"]["turns"]
    keys = [*CURVE_KEYS, *(["reward_turn2"] if turns > 1 else [])]
    cols = math.ceil(len(keys) / 2)
    fig, grid = plt.subplots(2, cols, figsize=(3.8 * cols, 5.6), squeeze=False)
    axes = list(grid.flat)
    for arm in meta["arms"]:
        curves = []
        for seed in meta["seeds"]:
            curves.append(read_curves(run_dir(out, experiment, arm, seed)))
        for ax, key in zip(axes, keys, strict=False):
            points = []
            for i in range(min(len(c) for c in curves)):
                values = [c[i][key] for c in curves if c[i].get(key) is not None]
                if values:
                    points.append((curves[0][i]["step"], sum(values) / len(values)))
            ax.plot([p[0] for p in points], [p[1] for p in points], label=arm, marker="." if len(points) < 30 else None)
            ax.set_title(key, fontsize=9)
            ax.set_xlabel("step")
    axes[0].legend(fontsize=8)
    for ax in axes[len(keys) :]:
        ax.axis("off")
    fig.suptitle(f"{experiment}: mean of {len(meta['seeds'])} seeds", fontsize=10)
    fig.tight_layout()
    path = out / experiment / "curves.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def markdown(summary: Mapping[str, Any]) -> str:
    """The summary as Markdown tables (held-out metrics per arm and policy; training first vs last)."""
    lines = [f"### {summary['experiment']}", ""]
    if summary.get("question"):
        lines += [summary["question"], ""]
    cols = ("reward", "correct", "hack", "lazy", "fast1", "fast1.2", "geomean_speedup", "optimum_share")
    lines += ["| arm | policy | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    labels = ("initial_greedy", "trained_greedy", "initial_sampled", "trained_sampled", "best_fixed",
              "fresh_initial_greedy", "fresh_trained_greedy", "fresh_best_fixed")  # fmt: skip
    for arm, entry in summary["arms"].items():
        for label in labels:
            if label in entry:
                cells = [_cell(entry[label].get(c)) for c in cols]
                lines.append(f"| {arm} | {label} | " + " | ".join(cells) + " |")
    lines += ["", "| arm | training metric | first step | last 3 steps |", "|---|---|---|---|"]
    for arm, entry in summary["arms"].items():
        for key, value in entry.items():
            if key.startswith("train/") and value["first"]["n"]:
                lines.append(f"| {arm} | {key[6:]} | {_cell(value['first'])} | {_cell(value['last3'])} |")
    return "\n".join(lines) + "\n"


def _cell(stat: Mapping[str, float] | None) -> str:
    if not stat or stat["n"] == 0:
        return "-"
    if math.isnan(stat["ci95"]):
        return f"{stat['mean']:.2f}"
    return f"{stat['mean']:.2f} ± {stat['ci95']:.2f}"
