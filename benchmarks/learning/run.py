"""Run (or resume) one learning experiment.

    python benchmarks/learning/run.py --config CONFIG --device cuda --out DIR


Every phase resumes from what DIR already holds (evaluation cache, exhaustive tables, checkpoints,
final reports), so a long experiment runs as several calls of under ``--time-budget-s`` each: exit
status 0 means the summary (DIR/<name>/summary.json, curves.png) is written, 3 means "run me again".
Needs only torch, triton, transformers, numpy and matplotlib besides tritongym.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from tritongym.design.experiment import ExperimentConfig, run_experiment
from tritongym.env.local import LocalEnv, PoolConfig
from tritongym.errors import ConfigError

USAGE = 2
INCOMPLETE = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="experiment TOML (benchmarks/learning/configs/*.toml)")
    parser.add_argument("--device", default="cuda", choices=["cpu", "cuda"], help="where candidates and the policy run")
    parser.add_argument("--out", required=True, type=Path, help="results directory (resumed if it exists)")
    parser.add_argument("--time-budget-s", type=float, default=540.0, help="stop cleanly after this many seconds")
    parser.add_argument("--sandboxes", type=int, default=None, help="sandboxes per GPU (CPU: in all)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    deadline = time.monotonic() + args.time_budget_s
    try:
        config = ExperimentConfig.load(args.config)
    except (OSError, ConfigError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        logging.error("cannot load %s: %s", args.config, exc)
        return USAGE
    env = LocalEnv(PoolConfig(devices=args.device, sandboxes_per_device=args.sandboxes))
    try:
        summary = run_experiment(config, env, args.out / config.name, args.device, deadline)
    finally:
        env.close()
    if summary is None:
        logging.info("time budget spent: run the same command again to resume")
        return INCOMPLETE
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
