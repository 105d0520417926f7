"""tritongym: evaluate LLM-written Triton kernels against PyTorch references.

Exit codes of ``eval`` and ``demo``: 0 every candidate is correct; 1 at least one candidate is not
(its verdict says why); 2 bad usage or input (a missing file, an unknown problem, a bad option);
3 at least one evaluation hit an infrastructure error (not the candidate's fault).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tritongym.bench.cli import bench as bench_command
from tritongym.bench.cli import report as report_command
from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.errors import ConfigError, TritonGymError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.evaluator import evaluate, resolve_device
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.problems import Problem, TableColumns, find_problem, load_problems
from tritongym.problems.sizes import parse_size_overrides
from tritongym.train.cli import register as register_training

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3

app = typer.Typer(help=__doc__, no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
problems_app = typer.Typer(help="Inspect problem sets.", no_args_is_help=True)
app.add_typer(problems_app, name="problems")
app.command("bench")(bench_command)
out = Console()
err = Console(stderr=True)

_VERDICT_STYLE = {Verdict.OK: "green", Verdict.INFRASTRUCTURE_ERROR: "magenta"}


def _fail_usage(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(EXIT_USAGE)


def _parse_sizes(sizes: list[str]) -> dict[str, int]:
    try:
        return parse_size_overrides(sizes)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


def _prepare(problem: Problem, small: bool, sizes: dict[str, int]) -> Problem:
    return problem.prepare(small=small, sizes=sizes)


def _announce_sizes(problems: list[Problem]) -> None:
    """Say which problems run at shrunk sizes, and what changed; nothing when none was shrunk."""
    shrunk = [p for p in problems if p.shrunk]
    if shrunk:
        lines = "; ".join(f"{p.name}: {p.size_notice}" for p in shrunk)
        err.print(f"[yellow]small sizes (--full to keep them): {lines}[/yellow]", soft_wrap=True)


def _announce_device(config: EvalConfig) -> tuple[str, bool]:
    """Resolve the device, say what it is, and return it with whether small sizes are the default."""
    device, _ = resolve_device(config.device)
    if device == "cpu":
        err.print(
            "[yellow]No GPU in use: kernels run on the CPU with Triton's interpreter "
            "(TRITON_INTERPRET=1); correctness only, no timings.[/yellow]"
        )
    return device, device == "cpu"


def _exit_code(results: list[EvalResult]) -> int:
    if any(r.verdict is Verdict.INFRASTRUCTURE_ERROR for r in results):
        return EXIT_INFRA
    return EXIT_OK if all(r.verdict is Verdict.OK for r in results) else EXIT_FAILED


def _results_table(results: list[EvalResult], title: str) -> Table:
    table = Table(title=title)
    for column in ("problem", "verdict", "trials", "max abs err", "speedup", "coverage", "seconds"):
        table.add_column(column)
    for r in sorted(results, key=lambda r: r.problem):
        style = _VERDICT_STYLE.get(r.verdict, "red")
        seconds = r.stage_seconds.get("sandbox_wall")
        table.add_row(
            r.problem,
            f"[{style}]{r.verdict.value}[/{style}]",
            f"{r.trials_passed}/{r.trials}" if r.trials else "-",
            f"{r.errors.max_abs_error:.2e}" if r.errors else "-",
            f"{r.speedup:.2f}x" if r.speedup is not None else "-",
            f"{r.coverage:.2f}" if r.coverage is not None else "-",
            f"{seconds:.1f}" if seconds is not None else "-",
        )
    return table


def _pool(config: EvalConfig, jobs: int | None) -> LocalEnv:
    """The local pool on the configured device: ``jobs`` sandboxes (default: the cores on the CPU,
    one per GPU)."""
    return LocalEnv(PoolConfig(devices=config.device, sandboxes_per_device=jobs))


def _run_batch(tasks: list[Task], config: EvalConfig, jobs: int | None, out_path: Path | None, title: str) -> int:
    rows: list[tuple[str, EvalResult]] = []
    sink = out_path.open("w", encoding="utf-8") if out_path else None
    try:
        with _pool(config, jobs) as env, Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, transient=True,
        ) as progress:  # fmt: skip
            bar = progress.add_task("evaluating", total=len(tasks))
            for task, result in env.evaluate_many(tasks, config):
                rows.append((task.label, result))
                if sink:
                    sink.write(json.dumps({"candidate": task.label, **result.to_dict()}) + "\n")
                    sink.flush()
                progress.advance(bar)
    finally:
        if sink:
            sink.close()
    results = [r for _, r in rows]
    out.print(_results_table(results, title))
    for label, r in sorted(rows, key=lambda row: row[1].problem):
        if r.verdict is not Verdict.OK:
            out.print(f"[bold]{r.problem}[/bold] ({label}): ", end="")
            out.print(r.feedback, markup=False, highlight=False)
    passed = sum(r.verdict is Verdict.OK for r in results)
    out.print(f"{passed}/{len(results)} correct" + (f"; results written to {out_path}" if out_path else ""))
    return _exit_code(results)


def _config(trials, tolerance, timeout, device, memory_limit_mb, **guards) -> EvalConfig:
    try:
        return EvalConfig(
            trials=trials,
            tolerance=tolerance,
            timeout_s=timeout,
            device=device,
            memory_limit_mb=memory_limit_mb,
            **guards,
        )
    except TritonGymError as exc:
        raise _fail_usage(str(exc)) from None


TrialsOpt = Annotated[int, typer.Option(help=EvalConfig.help("trials"))]
ToleranceOpt = Annotated[str, typer.Option(help=EvalConfig.help("tolerance"))]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help=EvalConfig.help("timeout_s"))]
DeviceOpt = Annotated[str, typer.Option(help=EvalConfig.help("device"))]
MemoryOpt = Annotated[int, typer.Option("--memory-limit-mb", help=EvalConfig.help("memory_limit_mb"))]
TorchComputeOpt = Annotated[str, typer.Option(help=EvalConfig.help("torch_compute"))]
TimingOpt = Annotated[bool, typer.Option("--timing/--no-timing", help=EvalConfig.help("timing"))]
BaselineOpt = Annotated[str, typer.Option(help=EvalConfig.help("baseline"))]
TimingBudgetOpt = Annotated[float, typer.Option("--timing-budget", help=EvalConfig.help("timing_budget_s"))]
ProfileOpt = Annotated[bool, typer.Option("--profile/--no-profile", help=EvalConfig.help("profile"))]
StaticChecksOpt = Annotated[
    bool, typer.Option("--static-checks/--no-static-checks", help=EvalConfig.help("static_checks"))
]
JobsOpt = Annotated[
    int | None,
    typer.Option(help="Warm sandboxes: on the CPU in all (default: the cores), on GPUs per GPU (default 1)."),
]
SmallOpt = Annotated[
    bool | None,
    typer.Option(
        "--small/--full",
        help="Shrink problems to CPU sizes: a bundled problem's own, any other's size constants to a budget "
        "(default: small on the CPU, full on a GPU).",
    ),
]
SourceColumnOpt = Annotated[
    str, typer.Option(help="Column with the reference source in a .jsonl/.parquet problem table.")
]
EntryPointColumnOpt = Annotated[
    str, typer.Option(help="Column naming the reference class in a problem table (missing: Model).")
]
SizeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--size", help="Override a size constant, NAME=INTEGER or NAME[INDEX]=INTEGER for a shape tuple (repeatable)."
    ),
]


@problems_app.command("list")
def problems_list(
    source: Annotated[
        str,
        typer.Argument(help="'bundled', a .py file, a directory (e.g. KernelBench level1/), or .jsonl/.parquet"),
    ] = "bundled",
    source_column: SourceColumnOpt = TableColumns.source,
    entry_point_column: EntryPointColumnOpt = "entry_point",
) -> None:
    """List the problems of a source."""
    try:
        problems = load_problems(source, TableColumns(source=source_column, entry_point=entry_point_column))
    except TritonGymError as exc:
        raise _fail_usage(str(exc)) from None
    table = Table(title=f"{len(problems)} problems from {source}")
    for column in ("name", "class", "level", "tags", "sizes"):
        table.add_column(column, overflow="fold")
    for p in problems:
        try:
            sizes = ", ".join(f"{k}={v}" for k, v in p.sizes.items())
        except TritonGymError:
            sizes = "[red]does not parse[/red]"
        table.add_row(p.name, p.entry_point, str(p.level or "-"), ", ".join(p.tags), sizes)
    out.print(table)


@app.command("eval")
def eval_command(
    candidate: Annotated[
        Path, typer.Option(help="A solution .py file, or a directory of <problem name>.py solutions (batch).")
    ],
    problem: Annotated[str | None, typer.Option(help="A problem .py file or bundled name (single candidate).")] = None,
    problems: Annotated[
        str, typer.Option(help="Problem source matched by file name in batch mode (see 'problems list').")
    ] = "bundled",
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON (single candidate).")] = False,
    out_path: Annotated[Path | None, typer.Option("--out", help="Write results as JSONL (batch).")] = None,
    small: SmallOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = 5,
    tolerance: ToleranceOpt = "float64",
    timeout: TimeoutOpt = 180.0,
    device: DeviceOpt = "auto",
    memory_limit_mb: MemoryOpt = 8192,
    jobs: JobsOpt = None,
    source_column: SourceColumnOpt = TableColumns.source,
    entry_point_column: EntryPointColumnOpt = "entry_point",
    torch_compute: TorchComputeOpt = "penalize",
    static_checks: StaticChecksOpt = True,
    timing: TimingOpt = True,
    baseline: BaselineOpt = "eager",
    timing_budget: TimingBudgetOpt = 10.0,
    profile: ProfileOpt = True,
) -> None:
    """Evaluate a candidate solution (or a directory of them): correctness, the guards, and on a GPU
    the speedup over the reference and the profiling coverage."""
    config = _config(
        trials,
        tolerance,
        timeout,
        device,
        memory_limit_mb,
        torch_compute=torch_compute,
        static_checks=static_checks,
        timing=timing,
        baseline=baseline,
        timing_budget_s=timing_budget,
        profile=profile,
    )
    sizes = _parse_sizes(size or [])
    try:
        _, small_default = _announce_device(config)
        small = small_default if small is None else small
        if candidate.is_dir():
            columns = TableColumns(source=source_column, entry_point=entry_point_column)
            tasks = _batch_tasks(candidate, problems, columns, small, sizes)
            _announce_sizes([t.problem for t in tasks])
            code = _run_batch(tasks, config, jobs, out_path, f"{len(tasks)} candidates from {candidate}")
            raise typer.Exit(code)
        if problem is None:
            raise _fail_usage("--problem is required when --candidate is a file")
        if not candidate.is_file():
            raise _fail_usage(f"{candidate}: no such file")
        task = Task(_prepare(find_problem(problem), small, sizes), candidate.read_bytes(), str(candidate))
        _announce_sizes([task.problem])
    except TritonGymError as exc:
        raise _fail_usage(str(exc)) from None
    result = evaluate(task.problem, task.candidate, config)
    if json_output:
        print(result.to_json())
    else:
        style = _VERDICT_STYLE.get(result.verdict, "red")
        out.print(f"[bold {style}]{result.verdict.value}[/bold {style}]  {result.problem}")
        out.print(result.feedback, markup=False, highlight=False)
    raise typer.Exit(_exit_code([result]))


def _batch_tasks(directory: Path, source: str, columns: TableColumns, small: bool, sizes: dict[str, int]) -> list[Task]:
    by_name = {p.name: p for p in load_problems(source, columns)}
    files = sorted(directory.glob("*.py"))
    unmatched = [f.name for f in files if f.stem not in by_name]
    if unmatched:
        err.print(f"[yellow]skipped (no problem of that name in {source}): {', '.join(unmatched)}[/yellow]")
    tasks = [Task(_prepare(by_name[f.stem], small, sizes), f.read_bytes(), str(f)) for f in files if f.stem in by_name]
    if not tasks:
        raise TritonGymError(f"{directory}: no <problem name>.py file matches a problem of {source}")
    return tasks


@app.command()
def demo(
    device: DeviceOpt = "auto",
    jobs: JobsOpt = None,
    out_path: Annotated[Path | None, typer.Option("--out", help="Write results as JSONL.")] = None,
) -> None:
    """Evaluate the bundled reference solutions on the bundled problems and print a table."""
    config = _config(5, "float64", 180.0, device, 8192)
    try:
        resolved, small = _announce_device(config)
        problems = load_problems("bundled")
    except TritonGymError as exc:
        raise _fail_usage(str(exc)) from None
    tasks = [Task(p.small() if small else p, p.solution, f"bundled/solutions/{p.name}.py") for p in problems]
    _announce_sizes([t.problem for t in tasks])
    raise typer.Exit(_run_batch(tasks, config, jobs, out_path, f"bundled solutions on {resolved}"))


app.command("report")(report_command)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; beyond loopback a token is required.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    db: Annotated[Path, typer.Option(help="SQLite file holding tasks and results (created if missing).")] = Path(
        "tritongym.db"
    ),
    devices: Annotated[str, typer.Option(help="'auto', 'cpu', 'cuda' (every GPU) or 'cuda:0,2'.")] = "auto",
    jobs: JobsOpt = None,
    max_body_mb: Annotated[int, typer.Option(help="Largest request body accepted, in MiB.")] = 16,
    backend: Annotated[str, typer.Option(help="'local' (this host) or 'ray' (a Ray cluster).")] = "local",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster to join ('auto' for the one `ray start` made); default: local.")
    ] = None,
) -> None:
    """Run the evaluation service (HTTP). The bearer token is read from $TRITONGYM_TOKEN."""
    try:
        import uvicorn

        from tritongym.env.service import ServiceConfig, create_app
        from tritongym.env.store import TaskStore
    except ImportError:
        raise _fail_usage("the service needs its extra: pip install 'tritongym[serve]'") from None
    token = os.environ.get("TRITONGYM_TOKEN") or None
    if host not in LOOPBACK and token is None:
        raise _fail_usage(f"binding {host} beyond loopback requires a bearer token in $TRITONGYM_TOKEN")
    try:
        if backend == "local":
            env = LocalEnv(PoolConfig(devices=devices, sandboxes_per_device=jobs))
        elif backend == "ray":
            from tritongym.env.ray_backend import RayEnv

            env = RayEnv(address=ray_address, devices=devices, num_workers=jobs)
        else:
            raise _fail_usage(f"--backend must be 'local' or 'ray', not {backend!r}")
    except ImportError:
        raise _fail_usage("the Ray backend needs its extra: pip install 'tritongym[ray]'") from None
    except TritonGymError as exc:
        raise _fail_usage(str(exc)) from None
    store = TaskStore(db)
    try:
        service = create_app(env, store, ServiceConfig(token=token, max_body_bytes=max_body_mb << 20))
        err.print(f"serving {env.slots} sandbox(es) ({backend}, {env.device}) at http://{host}:{port}; tasks in {db}")
        uvicorn.run(service, host=host, port=port, log_level="warning")
    finally:
        env.close()
        store.close()


register_training(app)


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())
