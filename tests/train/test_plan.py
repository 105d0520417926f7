"""The step's filters, advantages and loss on a fixed batch, against values computed by hand."""

import math

import pytest
import torch

from tritongym.errors import ConfigError
from tritongym.rl import policy_loss
from tritongym.train.batch import Rows
from tritongym.train.config import TrainConfig, load_config, loss_config, parse_override
from tritongym.train.step import microbatch_weight, plan_update


def _rows(behaviour_shift: dict[int, float]) -> Rows:
    """Six rows of two answer tokens each (targets 1 and 2 of width-3 rows):
    problem 0: episode 0 (turns 0, 1; rewards 0, 1), episode 1 (turns 0, 1; rewards 1, 1);
    problem 1: episode 2 (turn 0; reward 1, correct with coverage 0.1: lazy), episode 3 (turn 0; reward 0)."""
    n = 6
    token_mask = torch.tensor([[False, True, True]] * n)
    old = torch.full((n, 3), -1.0) * token_mask
    behaviour = old.clone()
    for row, shift in behaviour_shift.items():
        behaviour[row] = (old[row] - shift) * token_mask[row]
    return Rows(
        records=[None] * n,
        input_ids=torch.zeros((n, 4), dtype=torch.long),
        attention_mask=torch.ones((n, 4), dtype=torch.long),
        token_mask=token_mask,
        behaviour_logp=behaviour,
        rewards=torch.tensor([0.0, 1.0, 1.0, 1.0, 1.0, 0.0]),
        group=torch.tensor([0, 0, 0, 0, 1, 1]),
        trajectory=torch.tensor([0, 0, 1, 1, 2, 3]),
        turn=torch.tensor([0, 1, 0, 1, 0, 0]),
        correct=torch.tensor([False, True, True, True, True, False]),
        coverage=torch.tensor([math.nan, 0.9, 0.9, 0.9, 0.1, math.nan]),
        speedup=torch.full((n,), math.nan),
    ), old


def test_drkernel_plan_and_loss_by_hand():
    config = load_config(preset="drkernel")
    # episode 1's behaviour log-probs are 0.01 below the trainer's on every token: the geometric mean
    # ratio of its trajectory is e^0.01 = 1.01 > 1.001, so MRS rejects both of its rows
    rows, old = _rows({2: 0.01, 3: 0.01})
    plan = plan_update(rows, old, config, torch.Generator().manual_seed(0))
    # PRS: episode 2 is correct with coverage 0.1 <= 0.3: keep probability 0; the others are kept
    assert plan.counts["prs_rejected"] == 1 and plan.counts["mrs_rejected"] == 2
    assert plan.keep.tolist() == [True, True, False, False, False, True]
    # TRLOO, gamma 1: returns-to-go G = [1, 1 | 2, 1 | 1 | 0]; leave-one-out within (problem, turn)
    # with rejected samples still in the baseline:
    #   (0, t0): 1 - 2 = -1 for episode 0; (0, t1): 1 - 1 = 0; (1, t0): episode 3: 0 - 1 = -1.
    assert plan.advantages.tolist() == [-1.0, 0.0, 0.0, 0.0, 0.0, -1.0]
    assert plan.loss_mask.sum(dim=1).tolist() == [2, 2, 0, 0, 0, 2]
    assert plan.weights is None
    # The current policy is 4x as likely as the old one on episode 0's first turn: the ratio clips
    # at 1.28 but A < 0 takes the unclipped 4 * 1 = 4, and the dual clip caps it at 3 * |A| = 3.
    # Per-token losses: [3, 3 | 0, 0 | 1, 1] over the 6 kept tokens: token-mean = 8 / 6.
    logp = old.clone()
    logp[0, 1:] += math.log(4.0)
    loss, metrics = policy_loss(
        logp=logp, old_logp=old, advantages=plan.advantages, token_mask=plan.loss_mask, config=loss_config(config)
    )
    assert float(loss) == pytest.approx(8 / 6)
    assert metrics["dual_clip_fraction"] == pytest.approx(2 / 6)
    # the same loss from micro-batches of one row, each weighted by its share of the tokens
    total = plan.loss_mask.sum()
    parts = 0.0
    for i in torch.nonzero(plan.keep).flatten().tolist():
        idx = torch.tensor([i])
        part, _ = policy_loss(
            logp=logp[idx],
            old_logp=old[idx],
            advantages=plan.advantages[idx],
            token_mask=plan.loss_mask[idx],
            config=loss_config(config),
        )
        parts += float(part) * microbatch_weight(plan.loss_mask[idx], float(total), 3, "token-mean")
    assert parts == pytest.approx(8 / 6)
    # without the rejected samples in the baselines, each kept sample is alone in its group: A = G
    config = load_config(preset="drkernel", overrides=["advantage.rejected_in_baseline=false"])
    plan = plan_update(rows, old, config, torch.Generator().manual_seed(0))
    assert plan.advantages.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_tis_and_dynamic_sampling():
    config = load_config(
        preset="drkernel",
        overrides=[
            "filters.mrs=off",
            "filters.prs=false",
            "filters.tis=token",
            "filters.tis_cap=1.5",
            "filters.dynamic_sampling=true",
            "advantage.estimator=rloo",
            "advantage.options={}",
        ],
    )
    rows, old = _rows({0: math.log(2.0)})  # behaviour half as likely as the trainer's: rho = 2
    # problem 1's episodes return 1 and 0: kept; problem 0's return 1 and 2: kept; make problem 1 uniform
    rows.rewards[5] = 1.0
    plan = plan_update(rows, old, config, torch.Generator().manual_seed(0))
    assert plan.counts["dynamic_dropped_groups"] == 1
    assert plan.keep.tolist() == [True, True, True, True, False, False]
    # RLOO within (problem, turn): (0, t0): 0 - 1 = -1, 1 - 0 = 1; (0, t1): 1 - 1 = 0
    assert plan.advantages.tolist() == [-1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert plan.weights[0].tolist() == [0.0, 1.5, 1.5]  # min(rho = 2, cap 1.5)
    assert plan.weights[1].tolist() == [0.0, 1.0, 1.0]


def test_microbatch_weights_reassemble_each_aggregation():
    mask = torch.tensor([[True, True, False], [True, False, False], [True, True, True]])
    values = torch.tensor([[1.0, 2.0, 9.0], [3.0, 9.0, 9.0], [4.0, 5.0, 6.0]])
    from tritongym.rl.registry import AGGREGATIONS

    for name in ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean"):
        whole = AGGREGATIONS.get(name)(values, mask)
        parts = sum(
            float(AGGREGATIONS.get(name)(values[i : i + 1], mask[i : i + 1]))
            * microbatch_weight(mask[i : i + 1], float(mask.sum()), 3, name)
            for i in range(3)
        )
        assert parts == pytest.approx(float(whole)), name


def test_config_layers_and_errors(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text("[rollout]\nturns = 2\n[optim]\nlr = 3e-4\n[advantage.options]\ngamma = 0.5\n")
    config = load_config(path=path, preset="drkernel", overrides=["loss.clip_high=0.3", "run.out=somewhere"])
    assert isinstance(config, TrainConfig)
    assert config.rollout.turns == 2 and config.rollout.samples_per_prompt == 4  # file over preset
    assert config.advantage.estimator == "trloo" and config.advantage.options == {"gamma": 0.5}
    assert config.optim.lr == 3e-4 and config.loss.clip_high == 0.3 and config.run.out == "somewhere"
    assert load_config(overrides=["loss.clip_high=1", "loss.dual_clip=none"]).loss.clip_high == 1  # an int is a number
    assert parse_override("filters.mrs_veto=none") == (["filters", "mrs_veto"], None)
    assert parse_override("data.names=['a','b']") == (["data", "names"], ["a", "b"])
    for bad, message in [
        (["rollout.nope=1"], r"unknown field\(s\) of \[rollout\]: rollout.nope; known: engine,"),
        (["filters.mrs=sometimes"], "filters.mrs must be"),
        (["advantage.estimator=magic"], "unknown advantage estimator"),
        (["rollout.history=best:0"], "history must be"),
        (["optim.schedule=wavy"], "optim.schedule"),
        (["loss.dual_clip=0.5"], "dual_clip must be > 1"),
        (["noequals"], "--set expects"),
        (["run.steps=abc"], r"run.steps must be an integer, not 'abc'"),
        (["run.steps=2.5"], "run.steps must be an integer"),
        (["loss.clip_low=high"], "loss.clip_low must be a number"),
        (["loss.dual_clip=x"], "loss.dual_clip must be a number or none"),
        (["run.eval_timing=3"], "run.eval_timing must be true or false"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_config(overrides=bad)
    with pytest.raises(ConfigError, match="unknown preset"):
        load_config(preset="alchemy")
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(path=tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("[rollout\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path=tmp_path / "bad.toml")


def test_docs_list_every_config_field():
    from dataclasses import fields
    from pathlib import Path

    from tritongym.train.config import SFTConfig

    docs = (Path(__file__).parents[2] / "docs" / "training.md").read_text()
    for config in (TrainConfig, SFTConfig):
        for section in fields(config):
            for f in fields(section.default_factory()):
                assert f"| `{f.name}` |" in docs, f"{section.name}.{f.name} is not in docs/training.md"


def test_rows_drop_unjudged_episodes_and_need_token_ids():
    from tritongym.agent.episodes import Episode
    from tritongym.agent.records import TurnRecord
    from tritongym.problems import find_problem
    from tritongym.train.batch import build_rows

    problem = find_problem("01_vector_add")

    def record(turn, reward, tokens=(5, 6), verdict="ok"):
        return TurnRecord(
            "r", problem.name, 0, turn, [{"role": "user", "content": "x"}], "ab", verdict, reward=reward,
            prompt_token_ids=[1, 2, 3], token_ids=list(tokens), logprobs=[-1.0] * len(tokens),
        )  # fmt: skip

    judged = Episode(problem, 0, [record(0, 0.0), record(1, 1.0)])
    unjudged = Episode(problem, 1, [record(0, 0.0), record(1, None, verdict="infrastructure_error")], scored=False)
    rows = build_rows([judged, unjudged], pad_id=0)
    assert len(rows) == 2 and rows.dropped_episodes == 1 and rows.dropped_turns == 2
    assert rows.input_ids[0].tolist() == [1, 2, 3, 5, 6] and rows.token_mask[0].tolist() == [False, False, True, True]
    assert rows.behaviour_logp[0].tolist() == [0.0, 0.0, -1.0, -1.0] and rows.turn.tolist() == [0, 1]
    remote = Episode(problem, 2, [record(0, 1.0, tokens=())])
    with pytest.raises(ConfigError, match="no token ids"):
        build_rows([remote], pad_id=0)


def test_prs_rejects_a_lazy_cpu_turn_by_its_findings():
    """On the CPU no turn is profiled: the rows' coverage is the rewards' proxy (0 for a correct turn with a
    torch_compute or host_read finding, 1 for one without), so PRS rejects the lazy turns (red: kept)."""
    from tritongym.agent.episodes import Episode
    from tritongym.agent.records import TurnRecord
    from tritongym.problems import find_problem
    from tritongym.rl.filters import profiling_rejection
    from tritongym.train.batch import build_rows

    problem = find_problem("01_vector_add")

    def record(sample, verdict, checks=()):
        result = {"verdict": verdict, "correct": verdict == "ok", "coverage": None,
                  "findings": [{"check": c, "message": "m"} for c in checks]}  # fmt: skip
        return TurnRecord(
            "r", problem.name, sample, 0, [{"role": "user", "content": "x"}], "ab", verdict, result=result,
            reward=0.0, prompt_token_ids=[1, 2], token_ids=[5], logprobs=[-1.0],
        )  # fmt: skip

    turns = [record(0, "ok"), record(1, "ok", ["torch_compute"]), record(2, "ok", ["host_read", "sizes"]),
             record(3, "mismatch", ["torch_compute"])]  # fmt: skip
    rows = build_rows([Episode(problem, t.sample, [t]) for t in turns], pad_id=0)
    assert rows.coverage[:3].tolist() == [1.0, 0.0, 0.0] and math.isnan(rows.coverage[3])
    keep = profiling_rejection(rows.correct, rows.coverage, generator=torch.Generator().manual_seed(0))
    assert keep.tolist() == [True, False, False, True]


def test_example_configs_load():
    from pathlib import Path

    root = Path(__file__).parents[2] / "examples"
    drkernel = load_config(path=root / "train_drkernel.toml", preset="drkernel")
    assert drkernel.rollout.turns == 3 and drkernel.model.lora_rank == 16 and drkernel.rollout.overlap
    coder = load_config(path=root / "train_kernel_coder.toml", preset="kernel-coder")
    assert coder.reward.name == "kernel-coder" and coder.rollout.samples_per_prompt == 8
