"""The bias of GRPO's self-included baseline, measured on a toy bandit with our estimators.

A softmax policy over K arms with Bernoulli rewards; groups of N samples of one prompt. The
per-group gradient estimate is g = (1/N) sum_i A_i * d log pi(a_i) / d logits. Its expectation,
projected on the true gradient of E[r], is (N-1)/N for GRPO (mean-centred, no std) and 1 for RLOO
and TRLOO. Variable group sizes (as when multi-turn trajectories stop early) shrink GRPO's
gradient unevenly across prompts.

    python benchmarks/trloo_bias.py    # writes results/trloo_bias.json and results/trloo_bias.png
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import torch

from tritongym.rl import grpo, rloo, trloo

RESULTS = Path(__file__).parent / "results"
LOGITS = torch.tensor([0.5, -0.3, 0.1, 0.8], dtype=torch.float64)
SUCCESS = torch.tensor([0.9, 0.1, 0.4, 0.6], dtype=torch.float64)
ESTIMATORS = {
    "grpo": lambda r, g: grpo(r, g, normalize_std=False),
    "rloo": rloo,
    "trloo": lambda r, g: trloo(r, g, trajectory=torch.arange(len(r)), turn=torch.zeros_like(g)),
}


def true_gradient() -> torch.Tensor:
    probs = torch.softmax(LOGITS, 0)
    return probs * (SUCCESS - (probs * SUCCESS).sum())


def gradient_ratio(sizes: torch.Tensor, generator: torch.Generator) -> dict[str, tuple[float, float]]:
    """Mean and standard error of <g, true> / |true|^2 over groups of the given sizes."""
    probs = torch.softmax(LOGITS, 0)
    group = torch.repeat_interleave(torch.arange(len(sizes)), sizes)
    actions = torch.multinomial(probs, len(group), replacement=True, generator=generator)
    rewards = torch.bernoulli(SUCCESS[actions], generator=generator)
    score = torch.nn.functional.one_hot(actions, len(probs)).double() - probs
    true = true_gradient()
    out = {}
    for name, estimator in ESTIMATORS.items():
        advantages = estimator(rewards, group)
        per_group = torch.zeros(len(sizes), len(probs), dtype=torch.float64)
        per_group.index_add_(0, group, advantages[:, None] * score / sizes[group, None])
        projection = per_group @ true / true.dot(true)
        out[name] = (float(projection.mean()), float(projection.std() / len(sizes) ** 0.5))
    return out


def main() -> None:
    generator = torch.Generator().manual_seed(0)
    groups = 400_000
    rows = []
    for n in (2, 3, 4, 6, 8, 16):
        ratios = gradient_ratio(torch.full((groups,), n), generator)
        rows.append({"group_size": n, "expected_grpo": (n - 1) / n, **{k: v for k, v in ratios.items()}})
    mixed_sizes = torch.randint(2, 9, (groups,), generator=generator)
    mixed = gradient_ratio(mixed_sizes, generator)
    mixed_expected = float(((mixed_sizes - 1) / mixed_sizes).double().mean())
    report = {
        "benchmark": "trloo_bias",
        "setup": {"logits": LOGITS.tolist(), "success_probability": SUCCESS.tolist(), "groups_per_size": groups},
        "machine": {"platform": platform.platform(), "torch": torch.__version__},
        "fixed_sizes": rows,
        "mixed_sizes_2_to_8": {"expected_grpo": mixed_expected, **mixed},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "trloo_bias.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'N':>3} {'(N-1)/N':>8} {'grpo':>16} {'rloo':>16} {'trloo':>16}")
    for r in rows:
        cells = " ".join(f"{r[k][0]:>8.4f}±{r[k][1]:.4f}" for k in ESTIMATORS)
        print(f"{r['group_size']:>3} {r['expected_grpo']:>8.4f} {cells}")
    cells = " ".join(f"{mixed[k][0]:>8.4f}±{mixed[k][1]:.4f}" for k in ESTIMATORS)
    print(f"mix {mixed_expected:>8.4f} {cells}")
    plot(rows)


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["group_size"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(sizes, [r["expected_grpo"] for r in rows], "k--", label="(N-1)/N")
    for name, marker in (("grpo", "o"), ("rloo", "s"), ("trloo", "^")):
        means = [r[name][0] for r in rows]
        errors = [2 * r[name][1] for r in rows]
        ax.errorbar(sizes, means, yerr=errors, marker=marker, linestyle="none", capsize=3, label=name)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("group size N")
    ax.set_ylabel("E[gradient] / true gradient (projection)")
    ax.set_title("GRPO shrinks the expected gradient; leave-one-out does not")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "trloo_bias.png", dpi=120)


if __name__ == "__main__":
    main()
