"""Reports of benchmark runs: ``summary.json``, ``report.md`` and PNG plots in the run directory,
and side-by-side comparisons of several runs (docs/bench.md).

A run directory holds ``trajectories.jsonl`` (one TurnRecord per line) and ``run.json`` (the run's
configuration); everything here is re-derived from those two files.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tritongym.agent.records import TurnRecord, read_records
from tritongym.bench import metrics
from tritongym.errors import ConfigError

log = logging.getLogger(__name__)

TRAJECTORIES = "trajectories.jsonl"
RUN_CONFIG = "run.json"
SUMMARY = "summary.json"
REPORT = "report.md"
COMPARE = "compare.md"
PLOTS = {"fast_p": "fast_p.png", "turns": "turns.png", "verdicts": "verdicts.png"}
"""The plots of one run, by what they show."""
SCHEMA = 1
"""Version of summary.json's layout."""

NOT_MEASURED = "n/a"
_HEADLINE_P = 1.0
"""The p of the fast_p curves drawn per turn and of the comparison's headline (KernelBench's fast_1)."""


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[TurnRecord]]:
    """The configuration and the records of a run directory, with clear errors when they are missing."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run directory")
    path = run_dir / TRAJECTORIES
    if not path.is_file():
        raise ConfigError(f"{run_dir}: not a run directory (no {TRAJECTORIES}); run 'tritongym bench --out DIR' first")
    try:
        records = list(read_records(path))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{path}: malformed trajectory records: {exc}") from exc
    if not records:
        raise ConfigError(f"{path}: no trajectory records yet (the run wrote nothing)")
    config: dict[str, Any] = {}
    config_path = run_dir / RUN_CONFIG
    if config_path.is_file():
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{config_path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
        if not isinstance(config, dict):
            raise ConfigError(f"{config_path}: expected a JSON object")
    else:
        log.warning("%s: no %s; the report shows no run configuration", run_dir, RUN_CONFIG)
    return config, records


def build_summary(config: dict[str, Any], records: Sequence[TurnRecord]) -> dict[str, Any]:
    """summary.json's content: the run's configuration and every metric (metrics.summarize)."""
    try:
        return {"schema": SCHEMA, "run": config, **metrics.summarize(records)}
    except ValueError as exc:  # a verdict no version of tritongym wrote
        raise ConfigError(f"cannot summarize the trajectory records: {exc}") from exc


def write_report(run_dir: Path) -> None:
    """Write ``summary.json``, ``report.md`` and the plots of a run directory (re-rendering them)."""
    render_run(run_dir)


def render_run(run_dir: str | Path) -> dict[str, Any]:
    """What ``write_report`` does; returns the summary it wrote."""
    run_dir = Path(run_dir)
    config, records = load_run(run_dir)
    summary = build_summary(config, records)
    (run_dir / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    plotted = _plots(run_dir, summary)
    (run_dir / REPORT).write_text(render_markdown(summary, run_dir.name, plotted), encoding="utf-8")
    log.info("report written to %s", run_dir / REPORT)
    return summary


def headline_table(summary: dict[str, Any]) -> str:
    """The headline table of one run's summary, as markdown."""
    views = headline_views(summary)
    return _table(["metric", *[label for label, _ in views]], headline_rows(views))


# Formatting


def _pct(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return NOT_MEASURED if value is None else f"{value:.{digits}g}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _config_value(value: Any) -> str:
    if isinstance(value, list | tuple) and len(value) > 8:
        return f"{len(value)} items: {', '.join(map(str, value[:5]))}, ..."
    if isinstance(value, dict | list | tuple):
        return json.dumps(value)
    return str(value)


def headline_views(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The headline views: the first turn alone when a run has one turn, else first and best."""
    if summary["turns"] == 1:
        return [("single turn", summary["first_turn"])]
    return [("first turn", summary["first_turn"]), ("best over turns", summary["best"])]


def _p(p: float) -> str:
    return f"{p:g}"


def headline_rows(views: Sequence[tuple[str, dict[str, Any]]]) -> list[list[str]]:
    """Rows of the headline table: one column per view (a view of a run, or a run in a comparison)."""
    rows = [
        ["attempts (scored)", *[str(b["attempts"]) for _, b in views]],
        ["problems", *[str(b["problems"]) for _, b in views]],
        ["infrastructure errors (excluded)", *[str(b["infrastructure_excluded"]) for _, b in views]],
        ["compile rate", *[_pct(b["compile_rate"]) for _, b in views]],
        ["correct rate (fast_0)", *[_pct(b["correct_rate"]) for _, b in views]],
        ["hack rate", *[_pct(b["hack_rate"]) for _, b in views]],
        ["no code", *[_pct(b["no_code_rate"]) for _, b in views]],
    ]
    for p in metrics.P_VALUES[1:]:
        rows.append([f"fast_{_p(p)} (KernelBench, >)", *[_pct(b["fast_p"]["kernelbench"][_p(p)]) for _, b in views]])
    for p in metrics.P_VALUES[1:]:
        rows.append([f"fast_{_p(p)} (Dr.Kernel, >=)", *[_pct(b["fast_p"]["drkernel"][_p(p)]) for _, b in views]])
    rows.append(["geomean speedup (correct)", *[_num(b["geomean_speedup"]) for _, b in views]])
    ks = sorted({k for _, b in views for k in b["pass_at_k"]}, key=int)
    for k in ks:
        rows.append([f"pass@{k}", *[_pct(b["pass_at_k"].get(k)) if k in b["pass_at_k"] else "-" for _, b in views]])
    return rows


def render_markdown(summary: dict[str, Any], name: str, plotted: bool = True) -> str:
    """report.md of one run."""
    views = headline_views(summary)
    parts = [f"# Benchmark report: {summary['run'].get('model') or name}\n"]
    parts.append(
        f"{summary['records']} turn records, {summary['episodes']} episodes over {summary['problems']} problems, "
        f"{summary['turns']} turn(s) per episode"
        + (f" in {summary['iterations']} iterations" if summary["iterations"] > 1 else "")
        + ". Rates exclude infrastructure errors; "
        f"`{NOT_MEASURED}` means not measured (no timing on the CPU). Definitions: docs/bench.md.\n"
    )
    if summary["run"]:
        parts.append("## Run\n")
        parts.append(_table(["setting", "value"], [[k, _config_value(v)] for k, v in summary["run"].items()]))
    parts.append("## Headline\n")
    parts.append(headline_table(summary))

    parts.append("## fast_p\n")
    header = ["p"] + [f"{label}: {c}" for label, _ in views for c in ("KernelBench >", "Dr.Kernel >=")]
    rows = [
        [_p(p)] + [_pct(b["fast_p"][c][_p(p)]) for _, b in views for c in metrics.CONVENTIONS] for p in metrics.P_VALUES
    ]
    parts.append(_table(header, rows))

    label, final = views[-1]
    ks = list(final["pass_at_k"])
    if ks:
        parts.append(f"## pass@k and fast_p@k ({label}, KernelBench convention)\n")
        header = ["k", "pass@k", *[f"fast_{_p(p)}@k" for p in metrics.P_VALUES[1:]]]
        kb = final["fast_p_at_k"]["kernelbench"]
        rows = [[k, _pct(final["pass_at_k"][k]), *[_pct(kb[_p(p)][k]) for p in metrics.P_VALUES[1:]]] for k in ks]
        parts.append(_table(header, rows))

    if summary["turns"] > 1:
        parts.append("## Per turn\n")
        fp = _p(_HEADLINE_P)
        header = ["turn", "attempts", "compile", "correct", "hack", f"fast_{fp}", "best: correct", f"best: fast_{fp}"]
        header.append("best: geomean speedup")
        rows = []
        for t, (now, best) in enumerate(zip(summary["per_turn"], summary["best_by_turn"], strict=True)):
            rows.append(
                [
                    str(t),
                    str(now["attempts"]),
                    _pct(now["compile_rate"]),
                    _pct(now["correct_rate"]),
                    _pct(now["hack_rate"]),
                    _pct(now["fast_p"]["kernelbench"][fp]),
                    _pct(best["correct_rate"]),
                    _pct(best["fast_p"]["kernelbench"][fp]),
                    _num(best["geomean_speedup"]),
                ]
            )
        parts.append(_table(header, rows))
        parts.append(
            "`best:` each episode's best attempt among its turns up to this one (correct first, then speed).\n"
        )

    if summary["iterations"] > 1:
        parts.append("## Best over iterations\n")
        fp = _p(_HEADLINE_P)
        rows = [
            [str(i), _pct(b["correct_rate"]), _pct(b["fast_p"]["kernelbench"][fp]), _num(b["geomean_speedup"])]
            for i, b in enumerate(summary["best_by_iteration"])
        ]
        parts.append(_table(["iteration", "correct", f"fast_{fp}", "geomean speedup"], rows))

    parts.append("## Verdicts (every turn record)\n")
    total = summary["records"]
    rows = [[v, metrics.verdict_category(v), str(n), f"{100 * n / total:.1f}%"] for v, n in summary["verdicts"].items()]
    parts.append(_table(["verdict", "category", "count", "share"], rows))

    coverage = final["coverage"]
    parts.append(f"## Coverage of correct kernels ({label})\n")
    if coverage is None:
        parts.append(f"{NOT_MEASURED}: no correct kernel was profiled (CPU runs are not).\n")
    else:
        header = ["count", "mean", *[f"q{q}" for q in coverage["quantiles"]]]
        row = [str(coverage["count"]), _num(coverage["mean"]), *[_num(v) for v in coverage["quantiles"].values()]]
        parts.append(_table(header, [row]))

    parts.append("## Plots\n")
    if plotted:
        parts.append("\n".join(f"![{what}]({file})" for what, file in PLOTS.items()) + "\n")
    else:
        parts.append("Not drawn: matplotlib is missing (pip install 'tritongym[bench]').\n")
    return "\n".join(parts)


# Plots


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plots(run_dir: Path, summary: dict[str, Any]) -> bool:
    plt = _pyplot()
    if plt is None:
        log.warning("matplotlib is not installed: no plots (pip install 'tritongym[bench]')")
        return False
    runs = [(run_dir.name, summary)]
    _plot_fast_p(plt, runs, run_dir / PLOTS["fast_p"])
    _plot_turns(plt, runs, run_dir / PLOTS["turns"])
    _plot_verdicts(plt, runs, run_dir / PLOTS["verdicts"])
    return True


def _fast_p_series(block: dict[str, Any], convention: str) -> tuple[list[float], list[float]]:
    points = [(p, block["fast_p"][convention][_p(p)]) for p in metrics.P_VALUES]
    kept = [(p, v) for p, v in points if v is not None]
    return [p for p, _ in kept], [v for _, v in kept]


def _plot_fast_p(plt, runs: Sequence[tuple[str, dict[str, Any]]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    unmeasured = False
    for name, summary in runs:
        views = headline_views(summary)[-1:] if len(runs) > 1 else headline_views(summary)
        for label, block in views:
            for convention, style in (("kernelbench", "-o"), ("drkernel", "--s")):
                xs, ys = _fast_p_series(block, convention)
                unmeasured |= len(xs) < len(metrics.P_VALUES)
                prefix = f"{name}: " if len(runs) > 1 else ""
                ax.plot(xs, [100 * y for y in ys], style, label=f"{prefix}{label}, {convention}")
    if unmeasured:
        ax.text(0.98, 0.95, "speedup not measured for some runs\n(CPU): fast_p, p > 0 not shown",
                transform=ax.transAxes, ha="right", va="top", fontsize=8, color="gray")  # fmt: skip
    ax.set_xlabel("speedup threshold p")
    ax.set_ylabel("fast_p (% of attempts)")
    ax.set_xticks(list(metrics.P_VALUES))
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("fast_p: correct and faster than p x the reference")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_turns(plt, runs: Sequence[tuple[str, dict[str, Any]]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    fp = _p(_HEADLINE_P)
    for name, summary in runs:
        prefix = f"{name}: " if len(runs) > 1 else ""
        turns = list(range(summary["turns"]))
        series = {
            "correct (turn t)": [b["correct_rate"] for b in summary["per_turn"]],
            "compile (turn t)": [b["compile_rate"] for b in summary["per_turn"]],
            "correct (best of turns <= t)": [b["correct_rate"] for b in summary["best_by_turn"]],
            f"fast_{fp} (best of turns <= t)": [b["fast_p"]["kernelbench"][fp] for b in summary["best_by_turn"]],
        }
        for (label, values), style in zip(series.items(), (":o", ":^", "-o", "-s"), strict=True):
            points = [(t, 100 * v) for t, v in zip(turns, values, strict=True) if v is not None]
            if points:
                ax.plot(*zip(*points, strict=True), style, label=prefix + label)
    ax.set_xlabel("turn")
    ax.set_ylabel("% of attempts")
    ax.set_ylim(0, 100)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("per turn and best by turn")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


_CATEGORY_COLOR = {
    metrics.OK: "tab:green",
    metrics.INCORRECT: "tab:orange",
    metrics.FAILED: "tab:red",
    metrics.HACK: "tab:purple",
    metrics.INFRASTRUCTURE: "tab:brown",
}


_HATCHES = ("", "///", "...", "xxx")
"""Bar patterns that tell runs apart in a comparison (colour is the verdict's category)."""


def _plot_verdicts(plt, runs: Sequence[tuple[str, dict[str, Any]]], path: Path) -> None:
    verdicts = sorted({v for _, s in runs for v in s["verdicts"]}, key=lambda v: (metrics.verdict_category(v), v))
    fig, ax = plt.subplots(figsize=(7, 1.5 + 0.35 * len(verdicts) * len(runs)))
    height = 0.8 / len(runs)
    for index, (_, summary) in enumerate(runs):
        shares = [100 * summary["verdicts"].get(v, 0) / summary["records"] for v in verdicts]
        positions = [i + index * height for i in range(len(verdicts))]
        colors = [_CATEGORY_COLOR[metrics.verdict_category(v)] for v in verdicts]
        hatch = _HATCHES[index % len(_HATCHES)]
        bars = ax.barh(positions, shares, height=height, color=colors, hatch=hatch, edgecolor="white")
        ax.bar_label(bars, labels=[str(summary["verdicts"].get(v, 0)) for v in verdicts], fontsize=7, padding=2)
    ax.set_yticks([i + height * (len(runs) - 1) / 2 for i in range(len(verdicts))], verdicts, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("% of turn records")
    if len(runs) > 1:
        from matplotlib.patches import Patch

        handles = [
            Patch(facecolor="lightgray", edgecolor="white", hatch=_HATCHES[i % len(_HATCHES)], label=name)
            for i, (name, _) in enumerate(runs)
        ]
        ax.legend(handles=handles, fontsize=8)
    ax.set_title("verdicts (colour: category)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# Comparison


def _labels(dirs: Sequence[Path]) -> list[str]:
    names = [d.resolve().name for d in dirs]
    return names if len(set(names)) == len(names) else [str(d) for d in dirs]


def compare_runs(dirs: Sequence[str | Path], out_dir: str | Path) -> str:
    """Compare two or more runs side by side: ``compare.md`` and ``compare_*.png`` in ``out_dir``.

    Each run's headline view (its single turn, or its best over turns) is a column; returns the
    markdown of the comparison table.
    """
    dirs = [Path(d) for d in dirs]
    if len(dirs) < 2:
        raise ConfigError("comparing needs two or more run directories")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    labels = _labels(dirs)
    summaries = [build_summary(*load_run(d)) for d in dirs]
    columns = [(label, headline_views(s)[-1][1]) for label, s in zip(labels, summaries, strict=True)]
    table = _table(["metric", *labels], headline_rows(columns))
    parts = [f"# Comparison of {len(dirs)} runs\n"]
    parts.append(
        "Each column is the run's best over turns (its single turn when it has one). Definitions: docs/bench.md.\n"
    )
    rows = [
        [label, str(s["run"].get("model", "")), str(s["turns"]), str(s["iterations"]), str(d)]
        for label, s, d in zip(labels, summaries, dirs, strict=True)
    ]
    parts.append(_table(["run", "model", "turns", "iterations", "directory"], rows))
    parts.append("## Headline\n")
    parts.append(table)
    plt = _pyplot()
    if plt is None:
        parts.append("Plots not drawn: matplotlib is missing (pip install 'tritongym[bench]').\n")
    else:
        runs = list(zip(labels, summaries, strict=True))
        files = {what: f"compare_{file}" for what, file in PLOTS.items()}
        _plot_fast_p(plt, runs, out_dir / files["fast_p"])
        _plot_turns(plt, runs, out_dir / files["turns"])
        _plot_verdicts(plt, runs, out_dir / files["verdicts"])
        parts.append("## Plots\n")
        parts.append("\n".join(f"![{what}]({file})" for what, file in files.items()) + "\n")
    (out_dir / COMPARE).write_text("\n".join(parts), encoding="utf-8")
    return table
