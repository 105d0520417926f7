"""Time and memory of RL steps: generation, environment and training per step, and peak GPU memory.

    python benchmarks/train_step.py --preset drkernel --steps 3 --out benchmarks/results/train_step_h200.json \
        --set model.config_overrides="{'hidden_size': 512, 'layers': 8, 'heads': 8}" --set data.small=false

The model is built from a config (``model.name = "tiny"`` with ``config_overrides``; no download). A
random model writes no kernels, so ``--answers replay`` (the default) answers from the bundled
solutions through the model (tokens from its tokenizer, behaviour log-probs from the model: the
trainer's ForcedPolicy): turn 0 a broken kernel, later turns the known one, so every turn is evaluated
and the environment's time is real. ``--answers sampled`` samples from the model instead.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from pathlib import Path

import torch

from tritongym.policy.scripted import break_solution, find_turn
from tritongym.problems import load_bundled
from tritongym.train.config import load_config
from tritongym.train.rollout import HFRollout
from tritongym.train.tiny import ForcedPolicy
from tritongym.train.trainer import Trainer

PROBLEMS = [q for p in load_bundled() for q in (p, p.small())]  # prompts hold either size


def replay(messages, call):
    """The known solution of the problem in the prompt (found by its reference source); broken on the
    first turn, fixed after feedback."""
    problem, turn = find_turn(messages, PROBLEMS)
    if problem is None or not problem.solution:
        return "no code"
    return f"```python\n{problem.solution if turn else break_solution(problem.solution)}```"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="drkernel")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--answers", choices=("replay", "sampled"), default="replay")
    parser.add_argument("--set", dest="sets", action="append", default=[])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    run_dir = args.out.with_suffix("")
    config = load_config(
        preset=args.preset, overrides=[f"run.out={str(run_dir)!r}", f"run.steps={args.steps}", *args.sets]
    )
    trainer = Trainer(config)
    if args.answers == "replay":
        policy = ForcedPolicy(trainer.model, trainer.tokenizer, replay, temperature=config.rollout.temperature)
        trainer.engine = HFRollout(policy)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    try:
        history = trainer.fit(progress=False)
    finally:
        trainer.close()
    keys = ("time/generate", "time/env", "time/train", "time/step", "tokens/completion", "correct_rate")
    result = {
        "preset": args.preset,
        "answers": args.answers,
        "steps": args.steps,
        "parameters": sum(p.numel() for p in trainer.model.parameters()),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor() or "cpu",
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        "peak_gpu_memory_gib": torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None,
        "per_step": [{k: m.get(k) for k in keys} for m in history],
        "median_after_first": {
            k: statistics.median(m[k] for m in history[1:]) if len(history) > 1 else None for k in keys
        },
        "config": config.to_dict(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: result[k] for k in ("parameters", "device", "peak_gpu_memory_gib", "median_after_first")}))


if __name__ == "__main__":
    main()
