"""GRPO with TRL on tritongym problems: the kernel reward evaluates every completion on an Env.

    pip install 'tritongym[trl]'
    python examples/trl_grpo.py --model Qwen/Qwen2.5-Coder-1.5B-Instruct --problems bundled
    python examples/trl_grpo.py --model ... --problems path/to/KernelBench/level1 --env http://host:8000

``--env local`` (default) starts a local pool on this host's GPUs (the CPU interpreter without one,
then add ``--small``); ``--env ray`` uses the Ray cluster; a URL uses ``tritongym serve``. With
``--tool`` the model tests its kernels itself through the ``evaluate_kernel`` tool (multi-turn; needs a
model and chat template that do tool calling).
"""

from __future__ import annotations

import argparse
import logging

from tritongym.integrations.scoring import env_from_spec
from tritongym.integrations.trl import AsyncKernelReward, kernel_dataset, kernel_environment_factory
from tritongym.problems import load_problems
from tritongym.rewards import FormatReward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="Hugging Face model id or path")
    parser.add_argument("--problems", default="bundled", help="bundled, a directory, a .py file or a .jsonl/.parquet")
    parser.add_argument("--env", default="local", help="local, ray, or the URL of `tritongym serve`")
    parser.add_argument("--small", action="store_true", help="shrink the problems to their CPU sizes")
    parser.add_argument("--tool", action="store_true", help="multi-turn: the model calls evaluate_kernel")
    parser.add_argument("--output-dir", default="runs/trl-grpo", help="where TRL writes checkpoints and logs")
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps (GRPOConfig.max_steps)")
    parser.add_argument("--generations", type=int, default=8, help="completions per prompt (the group size)")
    parser.add_argument("--max-completion-length", type=int, default=4096, help="most tokens a completion may have")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    from trl import GRPOConfig, GRPOTrainer

    env = env_from_spec(args.env)
    dataset = kernel_dataset(load_problems(args.problems), small=args.small)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        num_generations=args.generations,
        per_device_train_batch_size=args.generations,
        max_completion_length=args.max_completion_length,
        logging_steps=1,
        log_completions=True,
    )
    if args.tool:
        trainer = GRPOTrainer(
            model=args.model, args=config, train_dataset=dataset, environment_factory=kernel_environment_factory(env)
        )
    else:
        reward = AsyncKernelReward(env, format_reward=FormatReward(), format_weight=0.1)
        trainer = GRPOTrainer(model=args.model, reward_funcs=[reward], args=config, train_dataset=dataset)
    try:
        trainer.train()
    finally:
        env.close()


if __name__ == "__main__":
    main()
