"""The learning experiment: its pure parts, the policy, and the CPU variant end to end (the same code
as the GPU runs, on Triton's interpreter), which must improve the reward."""

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from helpers import DEVICE
from tritongym.design import Design, DesignSpace
from tritongym.design.experiment import (
    Evaluations,
    ExperimentConfig,
    best_fixed_design,
    is_lazy,
    mean_ci,
    optimum_share,
    outcome_metrics,
    problem_set,
    run_experiment,
    single_thread,
    train,
)
from tritongym.design.language import SLOTS
from tritongym.design.policy import DesignPolicy, ModelShape, build_model, build_tokenizer, feedback_tokens
from tritongym.errors import ConfigError

CPU_CONFIG = Path(__file__).parents[2] / "benchmarks" / "learning" / "configs" / "cpu.toml"
CONFIGS = CPU_CONFIG.parent


def test_statistics_and_outcome_metrics():
    assert mean_ci([1.0, 2.0, 3.0]) == pytest.approx({"mean": 2.0, "ci95": 4.303 / math.sqrt(3), "n": 3})
    assert math.isnan(mean_ci([5.0])["ci95"]) and mean_ci([float("nan")])["n"] == 0
    results = [
        {"verdict": "ok", "correct": True, "speedup": 2.0, "coverage": 0.9},
        {"verdict": "ok", "correct": True, "speedup": 1.1, "coverage": 0.1},
        {"verdict": "hack_fallback", "correct": False},
        {"verdict": "mismatch", "correct": False},
    ]
    m = outcome_metrics(results, [1.0, 0.5, -1.0, None], threshold=0.3)
    assert m["reward"] == pytest.approx(0.5 / 3) and m["correct"] == 0.5 and m["hack"] == 0.25
    assert m["lazy"] == 0.25 and m["fast1"] == 0.5 and m["fast1.2"] == 0.25
    assert m["geomean_speedup"] == pytest.approx(math.sqrt(2.2))
    cpu_lazy = {"verdict": "ok", "correct": True, "coverage": None, "findings": [{"check": "torch_compute"}]}
    assert is_lazy(cpu_lazy, 0.3) and not is_lazy({**cpu_lazy, "findings": []}, 0.3)
    assert optimum_share([("a", 0.5), ("a", None), ("b", 1.0)], {"a": 1.0, "b": 0.0}) == 0.25
    table = {"p": {"x": 1.0, "y": 0.5}, "q": {"x": -1.0, "y": 0.5}}
    assert best_fixed_design(table, ["p", "q"]) == "y" and best_fixed_design(table, ["p"]) == "x"


def test_feedback_tokens_bin_the_outcome():
    assert feedback_tokens({"verdict": "ok", "speedup": 1.1, "coverage": 0.95}) == [
        "<feedback>", "verdict:ok", "speedup:lt1.2", "coverage:ge0.7"]  # fmt: skip
    assert feedback_tokens({"verdict": "mismatch"})[2:] == ["speedup:none", "coverage:none"]


@single_thread()
def test_policy_samples_only_allowed_values_and_scores_them_consistently():
    tokenizer = build_tokenizer()
    space = DesignSpace.from_mapping({"strategy": ["fused", "lazy"], "block": ["64"]})
    policy = DesignPolicy(build_model(tokenizer, ModelShape(hidden=16, layers=1, heads=2), seed=0), tokenizer, space)
    prompts = [policy.ids(["<bos>", "kind:eltwise", "op:relu", "<design>"]), policy.ids(["<bos>", "<design>"])]
    designs = policy.sample(prompts, torch.Generator().manual_seed(0))
    for tokens in designs:
        design = Design.from_tokens(tokens)
        assert design.strategy in ("fused", "lazy") and design.block == 64
    sequences = [p + policy.ids(t) for p, t in zip(prompts, designs, strict=True)]
    logp, entropy = policy.logprobs(sequences, [len(p) for p in prompts])
    assert logp.shape == (2, len(SLOTS)) and (logp <= 0).all()
    assert logp[:, 2].abs().max() < 1e-6  # one allowed block size: probability 1
    assert 0.9 * math.log(2) < entropy[:, 0].min() and entropy[:, 0].max() <= math.log(2) + 1e-5  # uniform-ish
    assert policy.sample(prompts, torch.Generator(), greedy=True) == policy.sample(
        prompts, torch.Generator(), greedy=True
    )


def test_config_files_load_and_errors_are_named():
    for path in sorted(CONFIGS.glob("*.toml")):
        config = ExperimentConfig.load(path)
        assert len(config.seeds) >= 3, path
        for arm in config.arm_names:
            config.arm(arm).design_space()
    with pytest.raises(ConfigError, match="unknown experiment settings"):
        ExperimentConfig.from_mapping({"name": "x", "stepz": 3})
    with pytest.raises(ConfigError, match="arms may override"):
        ExperimentConfig.from_mapping({"name": "x", "arms": [{"name": "a", "generated": 3}]})
    with pytest.raises(ConfigError, match="no single arm"):
        ExperimentConfig.from_mapping({"name": "x"}).arm("b")
    merged = ExperimentConfig.from_mapping(
        {"name": "x", "eval": {"trials": 2}, "arms": [{"name": "a", "eval": {"torch_compute": "allow"}}]}
    ).arm("a")
    assert merged.eval == {"trials": 2, "torch_compute": "allow"}


@pytest.fixture(scope="module")
def cpu_run(design_env, tmp_path_factory):
    config = ExperimentConfig.load(CPU_CONFIG)
    out = tmp_path_factory.mktemp("learning") / config.name
    summary = run_experiment(config, design_env, out, DEVICE)
    return config, out, summary


def test_cpu_variant_improves_the_reward_and_drops_hacks(cpu_run):
    config, out, summary = cpu_run
    arm = summary["arms"]["rl"]
    assert arm["train_reward_last3"]["mean"] > arm["train_reward_first_step"]["mean"] + 0.25
    assert arm["train_hack_last3"]["mean"] < arm["train_hack_first_step"]["mean"]
    # held out, fresh: the trained policy is at least as good and no longer hacks
    assert arm["trained_sampled"]["reward"]["mean"] >= arm["initial_sampled"]["reward"]["mean"]
    assert arm["trained_sampled"]["hack"]["mean"] == 0.0
    assert arm["best_fixed"]["correct"]["mean"] == 1.0  # an honest design solves every problem
    exhaustive = json.loads((out / "exhaustive_rl.json").read_text())
    assert set(exhaustive["table"]) == set(summary["train_problems"]) | set(summary["held_out_problems"])
    assert (out / "curves.png").stat().st_size > 0
    steps = [json.loads(line) for line in (out / "rl_seed0_metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == list(range(1, config.steps + 1))
    assert sum(s["evaluations"] for s in steps) == 0  # the exhaustive search cached every rendering


def test_a_finished_experiment_resumes_to_the_same_summary(cpu_run, design_env):
    config, out, summary = cpu_run
    again = run_experiment(config, design_env, out, DEVICE)
    assert json.dumps(again, sort_keys=True) == json.dumps(summary, sort_keys=True)


def test_training_resumes_bit_for_bit_and_stops_at_its_deadline(cpu_run, design_env, tmp_path):
    config, out, _ = cpu_run
    config = replace(config, steps=2, checkpoint_every=1, samples=2)
    problems = problem_set(config)
    cache = next(out.parent.glob("cache_*.jsonl"))
    evaluations = Evaluations(design_env, config.eval_config(DEVICE), cache)
    assert train(config, 0, problems, evaluations, tmp_path, "a", "cpu", deadline=0.0) is None
    assert (tmp_path / "a_seed0.ckpt").exists() and not (tmp_path / "a_seed0_metrics.jsonl").exists()
    train(replace(config, steps=1), 0, problems, evaluations, tmp_path, "a", "cpu", float("inf"))
    resumed = train(config, 0, problems, evaluations, tmp_path, "a", "cpu", float("inf"))
    straight = train(config, 0, problems, evaluations, tmp_path, "b", "cpu", float("inf"))
    for p, q in zip(resumed.model.parameters(), straight.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert len((tmp_path / "a_seed0_metrics.jsonl").read_text().splitlines()) == 2
    assert evaluations.misses == 0


class CountingEnv:
    """An Env that answers at once: 'ok' for sources containing 'good', an infrastructure error for 'flaky'."""

    def __init__(self):
        self.evaluated: list[str] = []

    def evaluate_many(self, tasks, config=None):
        from tritongym.evaluate import EvalResult, Verdict

        for task in tasks:
            self.evaluated.append(task.candidate)
            verdict = Verdict.OK if "good" in task.candidate else Verdict.INFRASTRUCTURE_ERROR
            yield task, EvalResult(problem=task.problem.name, verdict=verdict, feedback="", correct=verdict == "ok")


def test_evaluations_are_cached_by_content_and_fresh_ones_apart(tmp_path):
    from tritongym.evaluate import EvalConfig
    from tritongym.problems import find_problem

    env, problem = CountingEnv(), find_problem("02_silu")
    evaluations = Evaluations(env, EvalConfig(device="cpu"), tmp_path / "c.jsonl", tmp_path / "f.jsonl")
    first = evaluations.evaluate([(problem, "good"), (problem, "good"), (problem, "flaky")])
    assert [r["verdict"] for r in first] == ["ok", "ok", "infrastructure_error"]
    assert env.evaluated == ["good", "flaky"]
    evaluations.evaluate([(problem, "good"), (problem, "flaky")])
    assert env.evaluated == ["good", "flaky", "flaky"]  # infrastructure errors are not cached
    evaluations.evaluate([(problem, "good")], fresh=True)
    assert env.evaluated[-1] == "good" and evaluations.misses == 4  # a fresh evaluation never reuses training's
    reloaded = Evaluations(env, EvalConfig(device="cpu"), tmp_path / "c.jsonl", tmp_path / "f.jsonl")
    reloaded.evaluate([(problem, "good")])
    reloaded.evaluate([(problem, "good")], fresh=True)
    assert reloaded.misses == 0
    other = Evaluations(env, EvalConfig(device="cpu", trials=1), tmp_path / "c.jsonl")
    assert other.key(problem, "good") != evaluations.key(problem, "good")  # the config is part of the key


def test_multi_turn_arms_and_prs_run_on_the_cached_space(cpu_run, design_env):
    config, out, _ = cpu_run
    arms = ({"name": "trloo", "advantage": "trloo", "prs": True}, {"name": "grpo", "advantage": "grpo"})
    config = replace(config, name="multiturn", seeds=(0,), turns=2, steps=2, samples=4, eval_samples=2, arms=arms)
    summary = run_experiment(config, design_env, out.parent / "multiturn", DEVICE)
    for arm in ("trloo", "grpo"):
        entry = summary["arms"][arm]
        assert "train_reward_turn2_last3" in entry and "turn1_reward" in entry["trained_sampled"]
        steps = (out.parent / "multiturn" / f"{arm}_seed0_metrics.jsonl").read_text().splitlines()
        assert all("reward_turn2" in json.loads(line) for line in steps)
    final = json.loads((out.parent / "multiturn" / "trloo_seed0_final.json").read_text())
    (designs,) = final["trained"]["greedy_designs"].values()
    assert len(designs) == 2  # one design per turn


def test_the_script_refuses_a_bad_config_with_exit_status_2(tmp_path, caplog):
    import importlib.util

    spec = importlib.util.spec_from_file_location("learning_run", CONFIGS.parent / "run.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nstepz = 3\n')
    assert script.main(["--config", str(bad), "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert "unknown experiment settings ['stepz']" in caplog.text
    assert script.main(["--config", str(tmp_path / "missing.toml"), "--out", str(tmp_path)]) == 2


def test_the_report_tabulates_committed_results(tmp_path):
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("learning_report", CONFIGS.parent / "report.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    shutil.copytree(CONFIGS.parents[1] / "results" / "learning_cpu", tmp_path / "cpu")
    text = script.report(tmp_path)
    assert "### cpu" in text and "| rl | trained (sampled) | 0.50 ± 0.00 | 1.00 ± 0.00 | 0.00 ± 0.00 |" in text
    assert script.main([str(tmp_path / "empty")]) == 2
