"""``tritongym bench`` (benchmark a model on a problem set) and ``tritongym report`` (re-render one
run's report, or compare several runs side by side).

Registered on the main app by tritongym/cli.py. ``bench`` Exit codes: 0 the run finished and every turn was
judged; 2 bad usage or input (unknown problem set, bad --ids, unreachable server, a run directory
holding other settings); 3 some turns were left unscored by infrastructure or generation errors
(re-running the same command tries them again); 130 interrupted (Ctrl-C; the same command resumes).
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from tritongym.agent.extract import POLICIES as EXTRACTIONS
from tritongym.agent.records import TurnRecord
from tritongym.bench import metrics
from tritongym.bench.report import COMPARE, REPORT, compare_runs, headline_table, render_run
from tritongym.bench.run import BenchConfig, BenchOutcome, open_service, run_bench
from tritongym.config_options import config_options
from tritongym.errors import TritonGymError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.evaluator import resolve_device
from tritongym.paths import writable_dir
from tritongym.problems.sizes import parse_size_overrides

EXIT_OK, EXIT_USAGE, EXIT_INFRA, EXIT_INTERRUPTED = 0, 2, 3, 130
LOG_EVERY_S = 30.0
"""Without a terminal, a progress line is logged at most this often."""

log = logging.getLogger("tritongym.bench")
err = Console(stderr=True, soft_wrap=True)  # messages hold paths: never broken at the width


def _levels(spec: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in spec.split(",") if x.strip())
    except ValueError:
        raise typer.BadParameter(f"--levels expects numbers such as 1,2, not {spec!r}") from None


class _Progress:
    """A rich progress bar on a terminal; periodic log lines otherwise."""

    def __init__(self) -> None:
        self.correct = self.fast = self.done = self.total = 0
        self.started = time.monotonic()
        self.last_log = 0.0
        self.bar: Progress | None = None
        self.task = None

    def start(self, total: int, done: int) -> None:
        self.total, self.done = total, done
        if err.is_terminal:
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("correct {task.fields[correct]} fast {task.fields[fast]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("turns", total=total, completed=done, correct=0, fast=0)
        if done:
            log.info("resuming: %d of %d turns already recorded", done, total)

    def record(self, record: TurnRecord) -> None:
        self.done += 1
        self.correct += bool(record.result and record.result.get("correct"))
        self.fast += metrics.is_fast(metrics.attempt(record), 1.0, "kernelbench") is True  # fast_1 (docs/bench.md)
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, correct=self.correct, fast=self.fast)
        elif time.monotonic() - self.last_log >= LOG_EVERY_S or self.done == self.total:
            self.last_log = time.monotonic()
            log.info("%d/%d turns, %d correct, %d fast, %.0f s", self.done, self.total, self.correct, self.fast,
                     self.last_log - self.started)  # fmt: skip

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _print_summary(outcome: BenchOutcome) -> None:
    records = outcome.records
    solved = sum(any(r.result and r.result.get("correct") for r in e.records) for e in outcome.episodes)
    correct = sum(bool(r.result and r.result.get("correct")) for r in records)
    err.print(
        f"{len(outcome.episodes)} episodes, {len(records)} turns ({outcome.new_records} new): "
        f"{correct} correct turns, {solved} episodes correct at some turn"
        + (f", [magenta]{outcome.unscored} unscored[/magenta]" if outcome.unscored else "")
    )
    where = "report.md, summary.json and plots" if outcome.report_written else "trajectories.jsonl and run.json"
    err.print(f"{where} in {outcome.run_dir}")


def _usage_error(message: str) -> typer.Exit:
    err.print("[red]error:[/red] ", end="")
    err.print(message, markup=False, highlight=False)
    return typer.Exit(EXIT_USAGE)


@config_options(EvalConfig, on_error=_usage_error)
def bench(
    out: Annotated[Path, typer.Option(help="Run directory (created; re-running the same command resumes it).")],
    policy: Annotated[
        str,
        typer.Option(
            help="'openai' (a chat-completions server), 'scripted' (loopback replay) or 'hf' (a local "
            "transformers model, e.g. a `tritongym train` checkpoint's model/ directory)."
        ),
    ] = "openai",
    model: Annotated[
        str, typer.Option(help="Model name on the server (hf: a model directory or hub name; scripted: a label).")
    ] = "",
    base_url: Annotated[str, typer.Option(help="API root of the server, e.g. http://127.0.0.1:8000/v1.")] = "",
    script: Annotated[
        str, typer.Option(help="Scripted policy: 'fix' (broken kernel, then the known one) or 'replay'.")
    ] = "fix",
    problems: Annotated[
        str, typer.Option(help="'bundled', a directory (KernelBench level), a .py file or a .jsonl/.parquet table.")
    ] = "bundled",
    solutions: Annotated[
        str,
        typer.Option(
            help="Scripted policy: replay the solutions (PROBLEM.py, named after each problem) of this "
            "directory (e.g. from 'tritongym solutions inductor'); problems without one are left out."
        ),
    ] = "",
    levels: Annotated[str, typer.Option(help="Keep these KernelBench levels, e.g. 1,2.")] = "",
    ids: Annotated[str, typer.Option(help="Keep problems with these leading numbers, e.g. 1-20,25.")] = "",
    samples: Annotated[int, typer.Option(help="Episodes per problem.")] = 1,
    turns: Annotated[int, typer.Option(help="Turns per episode (per iteration).")] = 1,
    history: Annotated[str, typer.Option(help="Context of later turns: all, last:K or best:K.")] = "all",
    iterations: Annotated[int, typer.Option(help="STTS iterations, each restarting from the best:K window.")] = 1,
    template: Annotated[
        str, typer.Option(help="First-turn template: kernelbench, kernel-coder or a file.")
    ] = "kernelbench",
    feedback_template: Annotated[str, typer.Option(help="Template of the feedback turns.")] = "drkernel-feedback",
    extraction: Annotated[str, typer.Option(help=f"Code extraction: {', '.join(EXTRACTIONS)}.")] = "last",
    feedback_style: Annotated[str, typer.Option(help="Feedback shown to the model: text or json.")] = "text",
    feedback_chars: Annotated[int, typer.Option(help="Longest feedback message.")] = 2000,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling mass.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(min=1, help="Most new tokens per answer.")] = 8192,
    concurrency: Annotated[int, typer.Option(min=1, help="Requests to the server in flight at once.")] = 32,
    request_timeout: Annotated[float, typer.Option(help="Time limit of one request, seconds.")] = 600.0,
    small: Annotated[
        bool | None,
        typer.Option(
            "--small/--full",
            help="Shrink problems to their CPU sizes (default: small when evaluating locally on the CPU).",
        ),
    ] = None,
    size: Annotated[
        list[str] | None,
        typer.Option(
            "--size", help="Set a size constant of every problem, NAME=INTEGER or NAME[INDEX]=INTEGER (repeatable)."
        ),
    ] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="Warm sandboxes: on the CPU in all, on GPUs per GPU.")] = None,
    env_url: Annotated[
        str,
        typer.Option(
            help="Evaluate on a running 'tritongym serve' at this URL (token: $TRITONGYM_TOKEN), not locally."
        ),
    ] = "",
    *,
    config: EvalConfig,
) -> None:
    """Benchmark a model: episodes of up to TURNS turns per problem and sample, judged by the environment,
    written to OUT (trajectories.jsonl, run.json, then summary.json, report.md and plots)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
        logging.getLogger("tritongym").setLevel(logging.INFO)
    progress = _Progress()
    try:
        resolved = "service" if env_url else resolve_device(config.device)[0]
        if small is None:
            small = resolved == "cpu"
        if resolved == "cpu":
            err.print("[yellow]No GPU in use: kernels run under Triton's interpreter; no timings.[/yellow]")
        bench_config = BenchConfig(
            policy=policy, model=model or (f"scripted-{script}" if policy == "scripted" else ""), base_url=base_url,
            script=script, problems=problems, solutions=solutions, levels=_levels(levels), ids=ids, samples=samples,
            turns=turns, iterations=iterations, history=history, template=template, feedback_template=feedback_template,
            extraction=extraction, feedback_style=feedback_style, feedback_chars=feedback_chars,
            temperature=temperature, top_p=top_p, max_tokens=max_tokens, small=small,
            sizes=parse_size_overrides(size or []), eval=config,
        )  # fmt: skip
        with ExitStack() as stack:
            env = stack.enter_context(open_service(env_url)) if env_url else None
            outcome = run_bench(
                bench_config, out, jobs=jobs, concurrency=concurrency, request_timeout_s=request_timeout, env=env,
                progress=progress.record, on_start=progress.start,
            )  # fmt: skip
    except TritonGymError as exc:
        raise _usage_error(str(exc)) from None
    except KeyboardInterrupt:
        progress.stop()
        err.print(f"interrupted: {progress.done} of {progress.total} turns recorded in ", end="", style="yellow")
        err.print(f"{out}; the same command resumes the run", markup=False, highlight=False, style="yellow")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        progress.stop()
    _print_summary(outcome)
    raise typer.Exit(EXIT_INFRA if outcome.unscored else EXIT_OK)


def report(
    runs: Annotated[
        list[Path], typer.Argument(help="A run directory (re-render its report), or two or more (compare them).")
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Where a comparison writes compare.md and its plots (default: the first run directory)."),
    ] = None,
) -> None:
    """Write a run's summary.json, report.md and plots from its trajectories; with several runs, a
    side-by-side comparison (compare.md, compare_*.png)."""
    console = Console()
    try:
        if len(runs) == 1:
            if out is not None:
                raise TritonGymError("--out is for comparisons; one run's report is written into its directory")
            summary = render_run(runs[0])
            console.print(Markdown(headline_table(summary)))
            console.print(f"report: {runs[0] / REPORT}")
            return
        destination = out or runs[0]
        if out is not None:
            writable_dir(out, "--out")
        console.print(Markdown(compare_runs(runs, destination)))
        console.print(f"comparison: {destination / COMPARE}")
    except TritonGymError as exc:
        err.print("[red]error:[/red] ", end="")
        err.print(str(exc), markup=False, highlight=False)
        raise typer.Exit(EXIT_USAGE) from None
