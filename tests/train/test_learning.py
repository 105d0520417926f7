"""The kernel-coder preset learns on a tiny vocabulary, and a resumed run repeats the uninterrupted one."""

import statistics

import pytest
import torch

from tritongym.train.config import load_config
from tritongym.train.metrics import read_metrics
from tritongym.train.tiny import build_tiny_model, build_tiny_tokenizer
from tritongym.train.trainer import Trainer

TEMPLATE = "=== user ===\n{{problem_name}}\n=== prefill ===\n<think>\n"
CORPUS = ["user assistant 01_vector_add 02_silu", "<think>\n", "add the rows", "x = y + z\n"]
FORMAT_TOKENS = ["</think>", "```python\n", "```"]


def tiny(seed=0):
    """A 50-token vocabulary where the format's tags are single tokens."""
    tokenizer = build_tiny_tokenizer(CORPUS, vocab_size=48, extra_tokens=FORMAT_TOKENS)
    return build_tiny_model(tokenizer, hidden_size=32, seed=seed), tokenizer


def kernel_coder(tmp_path, out, steps, *extra):
    template = tmp_path / "kc.txt"
    template.write_text(TEMPLATE)
    return load_config(
        preset="kernel-coder",
        overrides=[
            f"run.out='{tmp_path / out}'",
            f"run.steps={steps}",
            "run.tensorboard=false",
            "run.save_trajectories=false",
            "rollout.prompts_per_step=2",
            "rollout.samples_per_prompt=8",
            f"rollout.template='{template}'",
            "rollout.max_completion_tokens=12",
            "data.names=['01_vector_add', '02_silu']",
            "optim.lr=2e-2",
            *extra,
        ],
    )


def test_kernel_coder_reward_rises(tmp_path):
    model, tokenizer = tiny()
    config = kernel_coder(
        tmp_path, "learn", 30, "data.eval_problems=bundled", "data.eval_names=['03_row_sum']", "run.eval_every=15"
    )
    history = Trainer(config, model=model, tokenizer=tokenizer).fit(progress=False)
    rewards = [m["reward_mean"] for m in history]
    first, last = statistics.fmean(rewards[:5]), statistics.fmean(rewards[-5:])
    # a random model rarely closes its reasoning (format 0.5) and almost never adds a code block after
    # it (1.0); learning to close it first is worth +0.5 per answer
    assert last > first + 0.2, rewards
    assert history[-1]["verdict/no_code"] == 1.0  # nothing is evaluated: no answer defines ModelNew
    # held-out evaluation (one greedy episode of 03_row_sum) every 15 steps
    assert [i + 1 for i, m in enumerate(history) if "eval/reward_mean" in m] == [15, 30]
    assert history[-1]["eval/episodes"] == 1.0


def test_resume_repeats_the_uninterrupted_run(tmp_path):
    straight_model, tokenizer = tiny()
    straight = Trainer(kernel_coder(tmp_path, "straight", 3), model=straight_model, tokenizer=tokenizer).fit(
        progress=False
    )

    model, tokenizer = tiny()
    config = kernel_coder(tmp_path, "resumed", 3, "run.checkpoint_every=2")
    Trainer(config, model=model, tokenizer=tokenizer).fit(steps=2, progress=False)
    model2, tokenizer2 = tiny(seed=1)  # other initial weights: everything must come from the checkpoint
    trainer = Trainer(config, model=model2, tokenizer=tokenizer2)
    [third] = trainer.fit(resume=True, progress=False)
    assert trainer.step == 3
    for key in ("reward_mean", "train/loss", "train/grad_norm", "entropy", "tokens/completion"):
        assert third[key] == straight[2][key], key
    assert all(torch.equal(a, b) for a, b in zip(straight_model.parameters(), model2.parameters(), strict=True))
    steps = [row["step"] for row in read_metrics(tmp_path / "resumed")]
    assert steps == [1, 2, 3]


def test_resume_without_checkpoint_fails(tmp_path):
    from tritongym.errors import ConfigError

    model, tokenizer = tiny()
    with pytest.raises(ConfigError, match="has no checkpoint"):
        Trainer(kernel_coder(tmp_path, "empty", 1), model=model, tokenizer=tokenizer).fit(resume=True)


def test_overlap_samples_the_next_batch_before_the_update(tmp_path):
    """With rollout.overlap, step 2's answers were sampled by the weights before step 1's update: its
    behaviour log-probs differ from the trainer's; without it they agree at every step."""
    model, tokenizer = tiny()
    stale = Trainer(kernel_coder(tmp_path, "overlap", 3, "rollout.overlap=true"), model=model, tokenizer=tokenizer)
    history = stale.fit(progress=False)
    gaps = [m["rollout_trainer_logp_gap"] for m in history]
    assert gaps[0] < 1e-4 and gaps[1] > 1e-3 and gaps[2] > 1e-3, gaps
    assert [m["train/optimizer_steps"] for m in history] == [1, 1, 1] and "time/wait_rollout" in history[1]
    model, tokenizer = tiny()
    fresh = Trainer(kernel_coder(tmp_path, "fresh", 2), model=model, tokenizer=tokenizer).fit(progress=False)
    assert all(m["rollout_trainer_logp_gap"] < 1e-4 for m in fresh)
