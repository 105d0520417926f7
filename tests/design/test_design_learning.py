"""The learning experiment on the trainer: the design task's policy, a trainer run against a
purpose-built table (one design clearly best), multi-turn feedback, the experiments' aggregation with
confidence intervals, and the command lines."""

import json
import math
import statistics
from pathlib import Path

import pytest
import torch

from tritongym.design import Design, DesignSpace
from tritongym.design.__main__ import main as design_main
from tritongym.design.experiment import (
    design_shares,
    fresh_renderings,
    load_experiments,
    markdown,
    mean_ci,
    outcome_metrics,
    plot,
    run_experiments,
    summarize,
)
from tritongym.design.policy import DesignPolicy, ModelShape, build_model, build_tokenizer, feedback_tokens
from tritongym.design.table import Table
from tritongym.design.task import DesignOptions, design_problems
from tritongym.errors import ConfigError
from tritongym.evaluate import Verdict
from tritongym.policy.base import SamplingConfig
from tritongym.train.config import load_config
from tritongym.train.metrics import read_metrics
from tritongym.train.trainer import Trainer

CONFIGS = Path(__file__).parents[2] / "benchmarks" / "learning" / "configs"
SPACE = {"strategy": ["fused", "split", "lazy", "badorder", "fallback", "alias"], "layout": ["row"],
         "block": ["64"], "warps": ["4"], "stages": ["1"], "vec": ["1"]}  # fmt: skip


def options(table, **extra):
    return {"table": str(table), "generated": 3, "held_out": 1, "small": True, "space": SPACE,
            "model": {"hidden": 32, "layers": 1, "heads": 2}, **extra}  # fmt: skip


def train_config(tmp_path, table, out="run", steps=8, **sections):
    data = {
        "task": {"name": "tritongym.design.task:build", "options": options(table)},
        "rollout": {"prompts_per_step": 2, "samples_per_prompt": 8, "eval_samples": 2},
        "optim": {"lr": 1e-2, "ppo_epochs": 2, "micro_batch_size": 64},
        "run": {"steps": steps, "out": str(tmp_path / out), "tensorboard": False, "eval_every": 4,
                "checkpoint_every": 4, "plot": False},
    }  # fmt: skip
    for name, values in sections.items():
        data[name] = data.get(name, {}) | values
    return load_config(data=data)


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_policy_writes_only_designs_of_its_space_and_reads_feedback():
    tokenizer = build_tokenizer()
    space = DesignSpace.from_mapping({"strategy": ["fused", "lazy"], "block": ["64"]})
    model = build_model(tokenizer, ModelShape(hidden=16, layers=1, heads=2), space, seed=0)
    specs = design_problems(DesignOptions(generated=3, held_out=1, small=True)).specs
    name = sorted(specs)[0]
    policy = DesignPolicy(model, tokenizer, specs, small=True)
    (samples,) = policy.generate([[{"role": "user", "content": name}]], SamplingConfig(n=16))
    for completion in samples:
        design = Design.from_tokens(completion.text.splitlines()[0].split())
        assert design.strategy in ("fused", "lazy") and design.block == 64
        assert "```python\n" in completion.text and "class ModelNew" in completion.text
        assert completion.logprobs[2] == pytest.approx(0.0, abs=1e-6)  # one allowed block size
        assert all(lp <= 0 for lp in completion.logprobs) and len(completion.token_ids) == 6
    # the model's own forward is the constrained distribution the policy sampled from
    ids = torch.tensor([samples[0].prompt_token_ids + samples[0].token_ids])
    logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, :-1]
    logp = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None])[-6:, 0]
    assert logp.tolist() == pytest.approx(samples[0].logprobs, abs=1e-5)
    # the second turn's context holds the first design and its feedback in tokens
    feedback = json.dumps({"verdict": "ok", "correct": True, "speedup": 1.1, "coverage": 0.95})
    conversation = [{"role": "user", "content": name}, {"role": "assistant", "content": samples[0].text},
                    {"role": "user", "content": feedback}]  # fmt: skip
    context = policy.context(conversation)
    assert context[-11:] == [*samples[0].text.split("\n")[0].split(), "<feedback>", "verdict:ok", "speedup:lt1.2",
                             "coverage:ge0.7", "<design>"]  # fmt: skip
    assert feedback_tokens({"verdict": "mismatch"})[2:] == ["speedup:none", "coverage:none"]
    with pytest.raises(ConfigError, match="starts with a problem's name"):
        policy.context([{"role": "user", "content": "no such problem"}])


def test_the_trainer_learns_the_best_design_of_a_purpose_built_table(tmp_path, purpose_built):
    purpose_built(tmp_path / "t.jsonl", options(tmp_path / "t.jsonl"))
    trainer = Trainer(train_config(tmp_path, tmp_path / "t.jsonl"))
    history = trainer.fit(progress=False)
    rows = read_metrics(tmp_path / "run")
    assert [r["step"] for r in rows] == list(range(1, 9))
    rewards = [m["reward_mean"] for m in history]
    # uniform: ~0.45 a sample; the best design (fused) earns 1.725 and the hacks -1
    assert statistics.fmean(rewards[-2:]) > statistics.fmean(rewards[:2]) + 0.4, rewards
    assert history[-1]["hack_rate"] < history[0]["hack_rate"]
    assert max(m["rollout_trainer_logp_gap"] for m in history) < 1e-4  # behaviour = trainer log-probs
    assert "eval/reward_mean" in history[3] and "eval/reward_mean" not in history[2]
    assert (tmp_path / "run" / "checkpoints").is_dir() and trainer.env.lookups > 0


def test_a_resumed_run_collects_the_steps_after_its_checkpoint_once(tmp_path, purpose_built):
    import shutil

    from tritongym.train.metrics import record_step

    purpose_built(tmp_path / "t.jsonl", options(tmp_path / "t.jsonl"))
    config = train_config(tmp_path, tmp_path / "t.jsonl", steps=3, run={"checkpoint_every": 1, "eval_every": 0,
                          "tensorboard": False, "plot": False, "out": str(tmp_path / "run")})  # fmt: skip
    Trainer(config).fit(steps=2, progress=False)
    shutil.rmtree(tmp_path / "run" / "checkpoints" / "step-000002")  # as if it stopped before saving step 2
    trainer = Trainer(config)
    trainer.fit(resume=True, progress=False)
    lines = (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()
    steps = [record_step(json.loads(line)["run_id"]) for line in lines]
    assert steps == [1] * 16 + [2] * 16 + [3] * 16
    assert record_step("run/eval-4") is None and record_step("a/step-12") == 12


def test_two_turns_with_trloo_see_the_feedback(tmp_path, purpose_built):
    purpose_built(tmp_path / "t.jsonl", options(tmp_path / "t.jsonl"))
    config = train_config(tmp_path, tmp_path / "t.jsonl", steps=1, rollout={"turns": 2},
                          advantage={"estimator": "trloo", "options": {"gamma": 1.0}})  # fmt: skip
    Trainer(config).fit(progress=False)
    records = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    second = [r for r in records if r["turn"] == 1]
    assert len(second) == 16
    tokenizer = build_tokenizer()
    for record in second:
        verdict = json.loads(record["messages"][-1]["content"])["verdict"]
        assert tokenizer.convert_tokens_to_ids(f"verdict:{verdict}") in record["prompt_token_ids"]


def test_unjudged_renderings_are_dropped_as_the_trainer_drops_unjudged_turns(tmp_path, purpose_built):
    from tritongym.evaluate import Verdict

    outcomes = {"fused": (Verdict.OK, 1.5, 0.95), "split": (Verdict.OK, 0.6, 0.9), "lazy": (Verdict.OK, 1.4, 0.05),
                "badorder": (Verdict.INFRASTRUCTURE_ERROR, None, None), "fallback": (Verdict.HACK_FALLBACK, None, None),
                "alias": (Verdict.HACK_OUTPUT_ALIAS, None, None)}  # fmt: skip
    table = tmp_path / "t.jsonl"
    purpose_built(table, options(table), outcomes)
    [m1, m2] = Trainer(train_config(tmp_path, table, steps=2)).fit(progress=False)
    assert m1["infra_dropped_episodes"] + m2["infra_dropped_episodes"] > 0
    assert m1["infra_turns"] == m1["infra_dropped_turns"] and m1["episodes"] == 16


EXPERIMENTS = """
[lazy]
question = "PR and PRS"
seeds = [0, 1]
eval_samples = 2
arms = [{ name = "no_pr", reward = { options = { w_coverage = 0.0 } } }, { name = "pr_prs", filters = { prs = true } }]
"""


def test_experiments_run_on_the_trainer_and_aggregate_with_confidence_intervals(tmp_path, purpose_built):
    table = tmp_path / "t.jsonl"
    purpose_built(table, options(table))
    base = tmp_path / "base.toml"
    base.write_text('[task]\nname = "tritongym.design.task:build"\n[run]\ntensorboard = false\n')
    (tmp_path / "exp.toml").write_text(EXPERIMENTS)
    experiments = load_experiments(tmp_path / "exp.toml")
    overrides = {"task": {"options": options(table)}, "run": {"steps": 2},
                 "rollout": {"prompts_per_step": 2, "samples_per_prompt": 8}, "optim": {"lr": 1e-2}}  # fmt: skip
    overrides["run"]["plot"] = False
    run_experiments(base, experiments, tmp_path / "out", overrides)
    summary = summarize(tmp_path / "out", "lazy")
    for arm in ("no_pr", "pr_prs"):
        entry = summary["arms"][arm]
        assert entry["trained_greedy"]["reward"]["n"] == 2 and not math.isnan(entry["trained_greedy"]["reward"]["ci95"])
        assert entry["train/reward_mean"]["first"]["n"] == 2
        assert "fresh_trained_greedy" not in entry
    # the best fixed design by mean training reward: fused with PR (1.725), still fused without (1.25 > 1.2)
    assert summary["arms"]["pr_prs"]["best_fixed_designs"] == [SPACE_FUSED]
    assert summary["arms"]["pr_prs"]["best_fixed"]["optimum_share"]["mean"] == pytest.approx(1.0)
    pairs = json.loads((tmp_path / "out" / "fresh_designs.json").read_text())["pairs"]
    renderings = fresh_renderings(tmp_path / "out" / "fresh_designs.json")
    assert 0 < len(renderings) <= len(pairs) and all(r.key in Table.read(table).rows for r in renderings)
    # the final step's command: a results file that already holds every rendering is complete at once
    assert design_main(["final", "--designs", str(tmp_path / "out" / "fresh_designs.json"), "--table", str(table),
                        "--out", str(table), "--device", "cpu"]) == 0  # fmt: skip
    held_out = summary["arms"]["no_pr"]["trained_greedy"]
    assert any(design == SPACE_FUSED for _, design in pairs) and held_out["correct"]["n"] == 2
    # a fresh evaluation where the fused kernel turned out slower: the fresh metrics say so
    fresh_outcomes = {"fused": ("ok", 0.5, 0.95)}
    fresh = write_fresh(tmp_path / "fresh.jsonl", table, fresh_outcomes)
    again = summarize(tmp_path / "out", "lazy", fresh)
    fixed = again["arms"]["pr_prs"]["fresh_best_fixed"]
    assert fixed["fast1"]["mean"] == 0.0 and fixed["correct"]["mean"] == 1.0
    assert summary["arms"]["pr_prs"]["best_fixed"]["fast1"]["mean"] == 1.0
    text = markdown(again)
    assert "| pr_prs | fresh_best_fixed |" in text and "### lazy" in text
    assert plot(tmp_path / "out", "lazy").stat().st_size > 0


SPACE_FUSED = "strategy:fused layout:row block:64 warps:4 stages:1 vec:1"


def write_fresh(path, table_path, outcomes):
    """A 'fresh' table: the training table's rows, with the strategies of ``outcomes`` judged anew."""
    table, fresh = Table.read(table_path), Table.read(path)
    fresh.start(table.meta)
    for key, row in table.rows.items():
        strategy = Design.from_tokens(row["designs"][0].split()).strategy
        result = dict(row["result"])
        if strategy in outcomes:
            result |= dict(zip(("verdict", "speedup", "coverage"), outcomes[strategy], strict=True))
        fresh.rows[key] = {**row, "result": result}
    return fresh


def test_outcome_statistics():
    assert mean_ci([1.0, 2.0, 3.0]) == pytest.approx({"mean": 2.0, "ci95": 4.303 / math.sqrt(3), "n": 3})
    assert math.isnan(mean_ci([5.0])["ci95"]) and mean_ci([float("nan")])["n"] == 0
    results = [
        {"verdict": "ok", "correct": True, "speedup": 2.0, "coverage": 0.9},
        {"verdict": "ok", "correct": True, "speedup": 1.1, "coverage": 0.1},
        {"verdict": "hack_fallback", "correct": False},
        {"verdict": "mismatch", "correct": False},
    ]
    m = outcome_metrics(results, [1.0, 0.5, -1.0, 0.0], threshold=0.3)
    assert m["reward"] == 0.125 and m["correct"] == 0.5 and m["hack"] == 0.25
    assert m["lazy"] == 0.25 and m["fast1"] == 0.5 and m["fast1.2"] == 0.25
    assert m["geomean_speedup"] == pytest.approx(math.sqrt(2.2))
    shares = design_shares([Design.from_tokens(SPACE_FUSED.split()), Design.from_tokens(
        SPACE_FUSED.replace("fused", "alias").split())])  # fmt: skip
    assert shares["honest_strategy"] == 0.5 and shares["hack_strategy"] == 0.5 and shares["strategy/alias"] == 0.5


def test_config_errors_name_what_is_wrong(tmp_path, purpose_built):
    experiments = load_experiments(CONFIGS / "experiments.toml")
    assert [e.name for e in experiments] == ["learning", "hacking", "lazy", "multiturn"]
    assert all(len(e.seeds) >= 3 for e in experiments)
    bad = tmp_path / "bad.toml"
    bad.write_text("[x]\nseedz = [1]\n")
    with pytest.raises(ConfigError, match="unknown keys"):
        load_experiments(bad)
    with pytest.raises(ConfigError, match="unknown design task option"):
        DesignOptions.from_mapping({"tabel": "x"})
    with pytest.raises(ConfigError, match="no evaluation table"):
        Trainer(train_config(tmp_path, tmp_path / "missing.jsonl"))
    purpose_built(tmp_path / "t.jsonl", options(tmp_path / "t.jsonl"))
    wider = options(tmp_path / "t.jsonl", space={**SPACE, "block": ["64", "256"]})
    with pytest.raises(ConfigError, match=r"lacks \d+ renderings"):
        Trainer(load_config(data={"task": {"name": "tritongym.design.task:build", "options": wider}}))
    other = options(tmp_path / "t.jsonl", eval={"trials": 3})
    with pytest.raises(ConfigError, match="evaluated with other settings"):
        Trainer(load_config(data={"task": {"name": "tritongym.design.task:build", "options": other}}))
    with pytest.raises(ConfigError, match="must be 'module:attr'"):
        Trainer(load_config(data={"task": {"name": "tritongym.design"}}))
    with pytest.raises(ConfigError, match="cannot be imported"):
        Trainer(load_config(data={"task": {"name": "tritongym.design.task:nothing"}}))
    with pytest.raises(ConfigError, match="returned dict, not TaskParts"):
        Trainer(load_config(data={"task": {"name": f"{__name__}:not_parts"}}))
    with pytest.raises(ConfigError, match="a model without its tokenizer"):
        Trainer(load_config(data={"task": {"name": f"{__name__}:model_only"}}))
    # --set changes one key of an options table and keeps the others
    config = load_config(data={"task": {"options": {"table": "a", "generated": 5}}}, overrides=["task.options.table=b"])
    assert config.task.options == {"table": "b", "generated": 5}


def not_parts(config, **options):
    return {}


def model_only(config, **options):
    from tritongym.train.task import TaskParts

    return TaskParts(model=torch.nn.Linear(1, 1))


def test_the_command_lines(tmp_path, purpose_built, capsys):
    from typer.testing import CliRunner

    from tritongym.cli import app

    table = tmp_path / "t.jsonl"
    purpose_built(table, {**load_config(path=CONFIGS / "cpu.toml").task.options, "table": str(table)})
    result = CliRunner().invoke(app, ["train", "--config", str(CONFIGS / "cpu.toml"), "--set",
                                      f"task.options.table='{table}'", "--steps", "2", "--out", str(tmp_path / "r"),
                                      "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(read_metrics(tmp_path / "r")) == 2
    with pytest.raises(SystemExit) as exit_info:
        design_main(["--help"])
    assert exit_info.value.code == 0 and "tabulate" in capsys.readouterr().out
    assert design_main(["train", "--config", str(CONFIGS / "cpu.toml"), "--experiments", str(tmp_path / "none.toml"),
                 "--out", str(tmp_path / "o")]) == 2  # fmt: skip
    assert design_main(["report", str(tmp_path / "empty")]) == 2
    experiments = str(CONFIGS / "experiments.toml")
    assert design_main(["train", "--config", str(CONFIGS / "cpu.toml"), "--experiments", experiments,
                        "--out", str(tmp_path / "o"), "--only", "nope"]) == 2  # fmt: skip
    assert design_main(["tabulate", "--config", str(tmp_path / "none.toml"), "--out", str(table)]) == 2
    assert design_main(["final", "--designs", str(tmp_path / "none.json"), "--table", str(table),
                        "--out", str(tmp_path / "f.jsonl")]) == 2  # fmt: skip
    assert design_main(["final", "--designs", str(tmp_path / "none.json"), "--table", str(tmp_path / "no.jsonl"),
                        "--out", str(tmp_path / "f.jsonl")]) == 2  # fmt: skip


def test_a_validation_split_picks_the_trained_weights_and_resumes(tmp_path, purpose_built, monkeypatch):
    from tritongym.design.experiment import fit_selecting, train_run
    from tritongym.design.task import validation_split

    table = tmp_path / "t.jsonl"
    opts = options(table, stratified=4, validation=2)
    purpose_built(table, opts)
    problems = design_problems(DesignOptions.from_mapping(opts))
    assert sorted(s.kind for s in problems.validation) == ["eltwise", "reduce"]  # the last of each kind in turn
    names = {s.name for s in problems.validation}
    assert not names & {s.name for s in problems.train} and not names & {s.name for s in problems.held_out}
    with pytest.raises(ConfigError, match="at least one must train"):
        validation_split(problems.validation, 2)
    config = train_config(tmp_path, table, steps=4, task={"name": "tritongym.design.task:build", "options": opts})
    trainer = Trainer(config)
    assert {p.name for p in trainer.eval_problems} == names  # the trainer's eval/* is the validation split
    validation = [problems.problems[n] for n in sorted(names)]
    state = fit_selecting(trainer, validation, every=3)
    assert state["steps"] == [0, 3, 4] and trainer.step == 4
    assert state["best"] == max(state["scores"]) and state["chosen"] == max(
        s for s, v in zip(state["steps"], state["scores"], strict=True) if v == state["best"]
    )  # the latest of the best
    chosen = torch.load(tmp_path / "run" / "checkpoints" / "selected.pt")
    assert all(torch.equal(chosen[k], v) for k, v in trainer.model.state_dict().items())
    trainer.close()
    # a validation score that only falls: the initial weights are the ones evaluated after training
    scores = iter([1.0, 0.5, 0.2])
    monkeypatch.setattr("tritongym.design.experiment.validation_reward", lambda *args: next(scores))
    falling = Trainer(train_config(tmp_path, table, out="falling", steps=4, task={"name": "tritongym.design.task:build",
                                   "options": opts}))  # fmt: skip
    initial = {k: v.clone() for k, v in falling.model.state_dict().items()}
    assert fit_selecting(falling, validation, every=2)["chosen"] == 0 and falling.step == 4
    assert all(torch.equal(initial[k], v) for k, v in falling.model.state_dict().items())
    falling.close()
    monkeypatch.undo()
    # resumed with more steps: the scores so far are kept, only the new ones are added
    longer = train_config(tmp_path, table, steps=6, task={"name": "tritongym.design.task:build", "options": opts})
    again = Trainer(longer)
    again.resume()
    assert fit_selecting(again, validation, every=3)["steps"] == [0, 3, 4, 6]
    again.close()
    # train_run uses it when asked and there is a validation split, and records it
    final = train_run(train_config(tmp_path, table, out="run2", steps=2, task={"name": "tritongym.design.task:build",
                                   "options": opts}), eval_samples=1, select_every=1)  # fmt: skip
    assert final["selection"]["steps"] == [0, 1, 2] and final["steps"] == 2
    assert {e["problem"] for e in final["trained_greedy"]} == {s.name for s in problems.held_out}


def masks_matter(strategy, spec):
    """nomask is correct and fast where the last dimension is a power of two, wrong elsewhere; fused
    is correct everywhere and slower: the best design depends on the shape."""
    last = spec.small_sizes["out_features" if spec.kind == "matmul" else "cols"]
    if strategy == "fused":
        return Verdict.OK, 1.2, 0.95
    return (Verdict.OK, 2.0, 0.95) if last & (last - 1) == 0 else (Verdict.MISMATCH, None, None)


@pytest.mark.parametrize(("stratified", "held_out_reward"), [(0, 0.0), (6, 1.575)])
def test_the_policy_generalises_only_where_training_covers_the_shapes(tmp_path, purpose_built, stratified,
                                                                      held_out_reward):  # fmt: skip
    """The first GPU run's failure in miniature: the two generated training problems have power-of-two
    rows, so nomask is always right in training and the policy applies it to the held-out problem
    (50 columns, mismatch); the stratified problems include rows where it is wrong, and the policy
    writes the fused kernel there. (The problem tokens leave the ops out, as the experiment's configs
    do: with them, some seeds key on an op the held-out problem shares with a training one.)"""
    from tritongym.design.experiment import held_out_episodes

    table = tmp_path / "t.jsonl"
    space = {**SPACE, "strategy": ["fused", "nomask"]}
    opts = options(table, space=space, stratified=stratified, describe_ops=False)
    purpose_built(table, opts, masks_matter)
    problems = design_problems(DesignOptions.from_mapping(opts))
    [held_out] = problems.held_out
    assert held_out.small_sizes["cols"] == 50
    assert all(s.small_sizes["cols" if s.kind != "matmul" else "out_features"] in (16, 64) for s in problems.train[:2])
    config = train_config(tmp_path, table, steps=12, task={"name": "tritongym.design.task:build", "options": opts},
                          rollout={"prompts_per_step": 4, "samples_per_prompt": 8, "eval_samples": 2})  # fmt: skip
    trainer = Trainer(config)
    context = trainer.engine.policy.context([{"role": "user", "content": held_out.name}])
    assert "kind:eltwise" in context and not any(token.startswith("op:") for token in context)
    history = trainer.fit(progress=False)
    assert statistics.fmean(m["reward_mean"] for m in history[-2:]) > 1.4  # the training problems are learned
    [episode] = held_out_episodes(trainer, [problems.problems[held_out.name]], 1, 0.0, seed=0)
    trainer.close()
    assert episode["turns"][-1]["reward"] == pytest.approx(held_out_reward)
