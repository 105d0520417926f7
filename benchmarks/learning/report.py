"""Markdown tables of finished learning experiments, for BENCHMARKS.md.

python benchmarks/learning/report.py RUN_DIR   # RUN_DIR/<experiment>/summary.json, any of them
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

POLICIES = (("initial_sampled", "initial (sampled)"), ("trained_sampled", "trained (sampled)"),
            ("trained_greedy", "trained (greedy)"), ("best_fixed", "best fixed design"))  # fmt: skip
HELD_OUT = ("reward", "correct", "hack", "lazy", "fast1", "fast1.2", "geomean_speedup", "optimum_share")


def cell(stat: dict | None) -> str:
    if not stat or math.isnan(stat["mean"]):
        return "-"
    ci = stat.get("ci95", float("nan"))
    return f"{stat['mean']:.2f}" + ("" if math.isnan(ci) else f" ± {ci:.2f}")


def held_out_table(summary: dict) -> list[str]:
    lines = ["| arm | policy | " + " | ".join(HELD_OUT) + " |", "|---|---|" + "---|" * len(HELD_OUT)]
    for arm, entry in summary["arms"].items():
        for key, label in POLICIES:
            lines.append(f"| {arm} | {label} | " + " | ".join(cell(entry[key].get(m)) for m in HELD_OUT) + " |")
    return lines


def training_table(summary: dict) -> list[str]:
    keys = ["reward", "hack", "hack_strategy", "lazy", "lazy_strategy"]
    lines = ["| arm | " + " | ".join(f"{k}: first step -> last 3" for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for arm, entry in summary["arms"].items():
        cells = [f"{cell(entry.get(f'train_{k}_first_step'))} -> {cell(entry.get(f'train_{k}_last3'))}" for k in keys]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return lines


def turns_table(summary: dict) -> list[str]:
    lines = ["| arm | held-out reward, turn 1 | turn 2 | training reward turn 2, last 3 |", "|---|---|---|---|"]
    for arm, entry in summary["arms"].items():
        trained = entry["trained_sampled"]
        lines.append(f"| {arm} | {cell(trained.get('turn1_reward'))} | {cell(trained.get('reward'))} | "
                     f"{cell(entry.get('train_reward_turn2_last3'))} |")  # fmt: skip
    return lines


def report(run_dir: Path) -> str:
    out = []
    for path in sorted(run_dir.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        machine = summary.get("machine", {})
        header = (
            f"{machine.get('gpu', 'CPU')}, torch {machine.get('torch')}, triton {machine.get('triton')}; "
            f"train {len(summary['train_problems'])} problems, held out {len(summary['held_out_problems'])}, "
            f"{summary['space_size']} designs. Held out (fresh evaluations), mean ± 95% CI over seeds:"
        )
        out += [f"### {summary['experiment']}", "", header, "", *held_out_table(summary)]
        out += ["", "Training:", "", *training_table(summary)]
        if any("turn1_reward" in e["trained_sampled"] for e in summary["arms"].values()):
            out += ["", "Turns:", "", *turns_table(summary)]
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args(argv)
    text = report(args.run_dir)
    if not text:
        print(f"no */summary.json under {args.run_dir}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
