"""verl: the estimator and loss mappings on tensors of verl's documented shapes, compute_score on a
bundled solution and on a hack, the dataset rows.

verl itself is not installed in CI (it pins an older transformers and pulls in wandb, ray extras and
a serving stack), so the mappings are tested here on verl's shapes ([B, T] token-level rewards and
response mask, a numpy ``uid`` array) against hand-computed values. The tests at the end run through
verl's own registries and compare with verl's estimators and loss; they run where verl is importable
(see docs/integrations.md) and are skipped elsewhere.
"""

import asyncio
import math
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import small_problem
from tritongym.errors import ConfigError
from tritongym.evaluate import EvalResult, Verdict
from tritongym.integrations.verl import (
    compute_score,
    compute_score_batch,
    compute_score_sync,
    estimator_options,
    problem_of,
    register_with_verl,
    turn_of_tokens,
    verl_advantages,
    verl_estimator,
    verl_policy_loss,
    verl_rows,
    write_verl_dataset,
)

HACKS = Path(__file__).parents[1] / "adversarial" / "candidates"
PROBLEM = small_problem("vector_add")

# Three answers to one prompt (uid "a"), two turns each: tokens 0-1 and 4-5 are the model's, 2-3 and
# 6-7 the environment's feedback / padding. Each turn's reward sits on its last token.
MULTI_MASK = torch.tensor([[1, 1, 0, 0, 1, 1, 0, 0]] * 3)
MULTI_REWARDS = torch.zeros(3, 8)
MULTI_REWARDS[0, 5] = 1.0  # turn 0: 0, turn 1: 1
MULTI_REWARDS[1, 1] = 0.5  # turn 0: 0.5, turn 1: 0 (after a success: not a meaningful turn)
UIDS = np.array(["a", "a", "a"], dtype=object)


def outcome_rows(scores, lengths, width=6):
    """verl's outcome layout: one score per row on its last response token."""
    mask = torch.zeros(len(scores), width, dtype=torch.long)
    rewards = torch.zeros(len(scores), width)
    for row, (score, length) in enumerate(zip(scores, lengths, strict=True)):
        mask[row, :length] = 1
        rewards[row, length - 1] = score
    return rewards, mask


def test_turns_are_the_runs_of_response_tokens_with_what_follows_them():
    mask = torch.tensor([[1, 1, 0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]])
    assert turn_of_tokens(mask).tolist() == [[0, 0, 0, 0, 1, 1, 1, 1], [0] * 8, [0] * 8]


def test_rloo_and_grpo_on_outcome_rewards_match_hand_computed_values():
    rewards, mask = outcome_rows([1.0, 0.0, 0.5, 0.2], [3, 2, 5, 1])
    uid = np.array(["a", "a", "b", "b"], dtype=object)
    advantages, returns = verl_advantages("rloo", rewards, mask, uid)
    expected = torch.tensor([1.0, -1.0, 0.3, -0.3])  # r_i - r_j with two answers per prompt
    assert torch.allclose(advantages, expected[:, None] * mask, atol=1e-6)
    assert torch.allclose(returns, torch.tensor([1.0, 0.0, 0.5, 0.2])[:, None] * mask)
    advantages, _ = verl_advantages("grpo", rewards, mask, uid, normalize_std=False)
    assert torch.allclose(advantages, torch.tensor([0.5, -0.5, 0.15, -0.15])[:, None] * mask, atol=1e-6)
    advantages, _ = verl_advantages("grpo", rewards, mask, uid)  # (r - mean) / (unbiased std + eps)
    assert torch.allclose(advantages[:, 0], torch.tensor([1, -1, 1, -1]) / math.sqrt(2), atol=1e-4)


def test_without_a_uid_every_row_is_its_own_group():
    rewards, mask = outcome_rows([1.0, 0.0], [2, 2])
    advantages, _ = verl_advantages("rloo", rewards, mask, None)
    assert torch.allclose(advantages, rewards.sum(dim=1, keepdim=True) * mask)


def test_trloo_on_multi_turn_rows_matches_hand_computed_values():
    advantages, returns = verl_advantages("trloo", MULTI_REWARDS, MULTI_MASK, UIDS)
    # turn 0 returns (1, 0.5, 0): A = G - mean of the others; turn 1 (row 1's is not meaningful): (1, -, 0)
    expected = torch.tensor([[0.75, 0.75, 0, 0, 1, 1, 0, 0], [0] * 8, [-0.75, -0.75, 0, 0, -1, -1, 0, 0]])
    assert torch.allclose(advantages, expected)
    assert torch.allclose(returns, torch.tensor([[1.0, 1, 0, 0, 1, 1, 0, 0], [0.5, 0.5, 0, 0, 0, 0, 0, 0], [0] * 8]))


def test_discounted_returns_take_gamma_from_the_options():
    advantages, returns = verl_advantages("discounted", MULTI_REWARDS, MULTI_MASK, UIDS, gamma=0.5, baseline="none")
    assert returns[0].tolist() == pytest.approx([0.5, 0.5, 0, 0, 1, 1, 0, 0])  # G_0 = 0 + 0.5 * 1
    assert advantages[0].tolist() == pytest.approx([0.5, 0.5, 0, 0, 1, 1, 0, 0])


def test_a_nan_reward_leaves_its_row_out_of_every_baseline():
    rewards = torch.cat([MULTI_REWARDS, torch.full((1, 8), 0.0)])
    rewards[3, 5] = math.nan  # an infrastructure error (compute_score's score)
    mask = torch.cat([MULTI_MASK, MULTI_MASK[:1]])
    advantages, returns = verl_advantages("trloo", rewards, mask, np.array(["a"] * 4, dtype=object))
    clean, _ = verl_advantages("trloo", MULTI_REWARDS, MULTI_MASK, UIDS)
    assert torch.equal(advantages[:3], clean) and not advantages[3].any() and not returns[3].any()
    assert not torch.isnan(advantages).any()


def test_a_row_without_response_tokens_is_left_out():
    rewards, mask = outcome_rows([1.0, 0.0, 0.0], [2, 2, 1])
    mask[2] = 0  # a response truncated to nothing
    advantages, returns = verl_advantages("rloo", rewards, mask, np.array(["a"] * 3, dtype=object))
    assert advantages[:, 0].tolist() == [1.0, -1.0, 0.0] and not returns[2].any()


def test_registering_without_verl_says_how_to_install_it():
    try:
        import verl  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"tritongym\[verl\]"):
            register_with_verl()
    else:
        pytest.skip("verl is installed: the registry tests below cover registration")


def test_the_registered_function_reads_verls_algorithm_config():
    assert estimator_options("grpo", {"norm_adv_by_std_in_grpo": False}) == {"normalize_std": False}
    assert estimator_options("discounted", {"gamma": 0.4}) == {"gamma": 0.4}
    assert estimator_options("trloo", None) == {"gamma": 1.0}
    assert estimator_options("rloo", {"gamma": 0.4}) == {}
    estimator = verl_estimator("discounted")
    advantages, returns = estimator(
        token_level_rewards=MULTI_REWARDS, response_mask=MULTI_MASK, index=UIDS, config={"gamma": 0.5}
    )
    assert returns[0, 0] == pytest.approx(0.5) and advantages.shape == (3, 8)
    with pytest.raises(ConfigError, match="choose one of"):
        verl_estimator("gae")


LOGP = torch.log(torch.tensor([[1.5, 0.5], [5.0, 1.0]]))
OLD = torch.zeros(2, 2)
ADV = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
MASK = torch.tensor([[1, 1], [1, 0]])
ACTOR = {"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0}
# per-token losses: ratio 1.5 -> clipped 1.28 -> -1.28; ratio 0.5 -> max(-0.5, -0.8) = -0.5;
# A = -1, ratio 5 -> max(5, 1.28) = 5, dual clip caps it at 3 (the padding token does not count)


def test_the_dual_clip_loss_matches_hand_computed_values_for_each_aggregation():
    for mode, batch, expected in [
        ("token-mean", {}, (-1.28 - 0.5 + 3) / 3),
        ("token-mean", {"dp_size": 2, "batch_num_tokens": 12}, (-1.28 - 0.5 + 3) / 12 * 2),
        ("token-sum", {"dp_size": 2}, (-1.28 - 0.5 + 3) * 2),
        ("seq-mean-token-sum", {}, (-1.78 + 3) / 2),
        ("seq-mean-token-sum-norm", {"global_batch_size": 4, "loss_scale_factor": 10}, (-1.78 + 3) / 4 / 10),
        ("seq-mean-token-mean", {}, (-0.89 + 3) / 2),
        ("seq-mean-token-mean", {"dp_size": 2, "global_batch_size": 8}, (-0.89 + 3) / 8 * 2),
    ]:
        loss, metrics = verl_policy_loss(OLD, LOGP, ADV, MASK, mode, {**ACTOR, "global_batch_info": batch})
        assert float(loss) == pytest.approx(expected, rel=1e-5), mode
    assert metrics["actor/pg_clipfrac_lower"] == pytest.approx(1 / 3)
    weighted, _ = verl_policy_loss(OLD, LOGP, ADV, MASK, "token-mean", ACTOR, rollout_is_weights=torch.zeros(2, 2))
    assert float(weighted) == 0.0
    with pytest.raises(ConfigError, match="loss_agg_mode"):
        verl_policy_loss(OLD, LOGP, ADV, MASK, "token-max", ACTOR)


def info(problem=PROBLEM):
    return verl_rows([problem])[0]["extra_info"]


def test_compute_score_pays_a_bundled_solution_and_penalises_a_hack(env):
    solution = f"<think>add</think>\n```python\n{PROBLEM.solution}\n```"
    hack = f"```python\n{(HACKS / 'pytorch_only.py').read_text()}\n```"
    good = asyncio.run(compute_score("tritongym", solution, PROBLEM.solution, info(), env=env))
    assert good == {"score": 1.0, "correct": 1, "compiled": 1, "hack": 0, "no_code": 0, "infrastructure_error": 0}
    bad, none = compute_score_batch(["tritongym"] * 2, [hack, "no code"], [None] * 2, [info()] * 2, env=env)
    assert bad["score"] == -1.0 and bad["hack"] == 1.0 and bad["correct"] == 0.0
    assert none["score"] == 0.0 and none["no_code"] == 1.0


class ScriptedEnv:
    """Results by candidate text, for what needs no real evaluation."""

    def __init__(self, results):
        self.results = results

    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None):
        future = Future()
        future.set_result(self.results[candidate.strip()])
        return future


def test_the_sync_and_batch_scores_keep_input_order_and_take_the_named_reward():
    ok = EvalResult(problem="p", verdict=Verdict.OK, feedback="", correct=True, compiled=True)
    wrong = EvalResult(problem="p", verdict=Verdict.MISMATCH, feedback="", compiled=True)
    scripted = ScriptedEnv({"class ModelNew: ok": ok, "class ModelNew: wrong": wrong})
    answers = ["```python\nclass ModelNew: wrong\n```", "```python\nclass ModelNew: ok\n```"]
    batch = compute_score_batch(["tritongym"] * 2, answers, [None] * 2, [info()] * 2, env=scripted, reward="tiered")
    assert [s["score"] for s in batch] == [-1.0, 0.0]  # tiered: not correct, correct but untimed (CPU)
    assert compute_score_sync("tritongym", answers[1], None, info(), env=scripted)["score"] == 1.0  # coverage 1


class FailingEnv:
    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None):
        future = Future()
        future.set_result(EvalResult(problem=problem.name, verdict=Verdict.INFRASTRUCTURE_ERROR, feedback=""))
        return future


def test_an_infrastructure_error_scores_nan_or_the_chosen_number():
    answer = "```python\nclass ModelNew: pass\n```"
    score = compute_score_sync("tritongym", answer, None, info(), env=FailingEnv())
    assert math.isnan(score["score"]) and score["infrastructure_error"] == 1.0
    score = compute_score_sync("tritongym", answer, None, info(), env=FailingEnv(), infrastructure_score=0.0)
    assert score["score"] == 0.0


def test_compute_score_refuses_rows_without_a_problem_and_unknown_settings():
    with pytest.raises(ConfigError, match="verl_rows"):
        compute_score_sync("tritongym", "x", None, {"index": 0}, env=FailingEnv())
    with pytest.raises(ConfigError, match="reward must be one of"):
        compute_score_sync("tritongym", "x", None, info(), env=FailingEnv(), reward="speed")
    with pytest.raises(ConfigError, match="TRITONGYM_ENV"):
        compute_score_sync("tritongym", "x", None, info(), env="grpc://nowhere")


def test_dataset_rows_carry_the_problem_in_extra_info_and_round_trip_through_parquet(tmp_path):
    import pyarrow.parquet as pq

    rows = verl_rows([small_problem("silu")], agent_name="tritongym_kernel", split="test")
    row = rows[0]
    assert row["data_source"] == "tritongym" and row["prompt"][-1]["role"] == "user"
    assert row["extra_info"]["problem"] == "02_silu" and row["extra_info"]["split"] == "test"
    assert row["agent_name"] == "tritongym_kernel" and row["reward_model"]["ground_truth"]
    back = pq.read_table(write_verl_dataset(rows, tmp_path / "data" / "train.parquet")).to_pylist()
    assert back == rows
    # what was shrunk comes back with the problem: the judge's second size is made from it
    assert problem_of(back[0]["extra_info"]).resized().size_notice == "batch_size 8->16, dim 96->160"
    with pytest.raises(ValueError, match="no problems"):
        verl_rows([])


# --- through verl's own registries (where verl is installed) ----------------------------------------


@pytest.fixture(scope="module")
def core_algos():
    pytest.importorskip("verl")
    from verl.trainer.ppo import core_algos

    from tritongym.integrations.verl import register_with_verl

    register_with_verl()
    return core_algos


def test_verls_registry_runs_our_estimators_and_they_agree_with_verls_own(core_algos):
    rewards, mask = outcome_rows([1.0, 0.0, 0.5, 0.2], [3, 2, 5, 1])
    uid = np.array(["a", "a", "b", "b"], dtype=object)
    for ours, theirs in [("tritongym_rloo", "rloo"), ("tritongym_grpo", "grpo")]:
        mine, _ = core_algos.get_adv_estimator_fn(ours)(
            token_level_rewards=rewards, response_mask=mask, index=uid, config={}
        )
        reference, _ = core_algos.get_adv_estimator_fn(theirs)(
            token_level_rewards=rewards, response_mask=mask, index=uid, config=None
        )
        assert torch.allclose(mine, reference, atol=1e-4), ours
    trloo, _ = core_algos.get_adv_estimator_fn("tritongym_trloo")(
        token_level_rewards=MULTI_REWARDS, response_mask=MULTI_MASK, index=UIDS, config={"gamma": 1.0}
    )
    assert trloo[0].tolist() == pytest.approx([0.75, 0.75, 0, 0, 1, 1, 0, 0])


def test_verls_registry_runs_our_loss_and_it_agrees_with_verls_dual_clip(core_algos):
    from omegaconf import OmegaConf

    mine_fn = core_algos.get_policy_loss_fn("tritongym_dual_clip")
    for mode, batch in [
        ("token-mean", {"dp_size": 2, "batch_num_tokens": 12}),
        ("seq-mean-token-sum", {"dp_size": 1, "global_batch_size": 2}),
        ("seq-mean-token-mean", {"dp_size": 2, "global_batch_size": 8}),
        ("seq-mean-token-sum-norm", {"dp_size": 1, "global_batch_size": 2, "loss_scale_factor": 7}),
    ]:
        config = OmegaConf.create({**ACTOR, "global_batch_info": batch})
        args = dict(old_log_prob=OLD, log_prob=LOGP, advantages=ADV, response_mask=MASK, loss_agg_mode=mode)
        mine, metrics = mine_fn(**args, config=config, rollout_is_weights=None)
        reference, theirs = core_algos.compute_policy_loss_vanilla(**args, config=config, rollout_is_weights=None)
        assert float(mine) == pytest.approx(float(reference), rel=1e-5), mode
        assert metrics["actor/pg_clipfrac_lower"] == pytest.approx(theirs["actor/pg_clipfrac_lower"])


class ScriptedServer:
    """verl's LLM server client, answering from a script (one word token, then end of sequence)."""

    def __init__(self, vocab, answers):
        self.vocab, self.answers = vocab, list(answers)

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        return TokenOutput(token_ids=[self.vocab[self.answers.pop(0)], self.vocab["<eos>"]])


class VerdictEnv:
    """Answers holding the word ``good`` are correct, the rest mismatch."""

    def submit(self, problem, candidate, config=None, *, priority=0, timeout_s=None):
        future, ok = Future(), "good" in candidate
        verdict = Verdict.OK if ok else Verdict.MISMATCH
        future.set_result(EvalResult(problem=problem.name, verdict=verdict, feedback="", correct=ok, compiled=True))
        return future


def run_episode(answers, turns=3):
    from omegaconf import OmegaConf
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    from tritongym.integrations.scoring import Scorer
    from tritongym.integrations.verl_agent import KernelAgentLoop

    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "<unk>", "bad", "good"])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} <eos> {% endfor %}"
        "{% if add_generation_prompt %}assistant {% endif %}"
    )
    rollout = {"prompt_length": 4096, "response_length": 512, "multi_turn": {"max_assistant_turns": turns}}
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}, "data": {}})
    row = verl_rows([PROBLEM])[0]

    async def episode():
        loop = KernelAgentLoop(
            trainer_config=DictConfigWrap(config),
            server_manager=ScriptedServer(vocab, answers),
            tokenizer=tokenizer,
            processor=None,
            dataset_cls=None,
            data_config=DictConfigWrap(config.data),
        )
        loop.scorer = Scorer(VerdictEnv(), extract=lambda text, problem: text)
        return await loop.run({"temperature": 1.0}, raw_prompt=row["prompt"], extra_info=row["extra_info"])

    return asyncio.run(episode()), vocab


def test_the_agent_loop_feeds_back_until_correct_and_masks_the_feedback(core_algos):
    output, vocab = run_episode(["bad", "good", "bad"])
    assert output.extra_fields["turn_verdicts"] == ["mismatch", "ok"]  # stopped when correct
    assert output.extra_fields["turn_scores"] == [0.0, 1.0] and output.reward_score == 1.0
    mask, ids = torch.tensor(output.response_mask), torch.tensor(output.response_ids)
    assert ids[mask.bool()].tolist() == [vocab["bad"], vocab["<eos>"], vocab["good"], vocab["<eos>"]]
    assert turn_of_tokens(mask[None]).max() == 1 and not mask[2:-2].any()  # two turns, feedback masked
    output, _ = run_episode(["bad", "bad", "bad"])
    assert output.extra_fields["turn_verdicts"] == ["mismatch"] * 3 and output.reward_score == 0.0


def test_the_agent_loop_refuses_an_unknown_episode_reward(core_algos, monkeypatch):
    monkeypatch.setenv("TRITONGYM_EPISODE_REWARD", "mean")
    with pytest.raises(ConfigError, match="best' or 'last"):
        run_episode(["bad"])


def test_the_episode_reward_is_the_best_or_last_turn_and_nan_for_an_infrastructure_error(core_algos):
    from tritongym.integrations.scoring import Score
    from tritongym.integrations.verl_agent import episode_reward

    turns = [Score(0.5, "ok"), Score(None, "infrastructure_error")]
    assert episode_reward(turns) == 0.5 and math.isnan(episode_reward(turns, "last"))
    hacked = [Score(-1.0, "hack_no_triton"), Score(0.5, "ok")]  # a hack's penalty stays (red team 5 #6)
    assert episode_reward(hacked) == episode_reward(hacked, "last") == -1.0
    assert math.isnan(episode_reward([Score(None, "infrastructure_error")])) and math.isnan(episode_reward([]))
