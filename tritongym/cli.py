"""tritongym: evaluate LLM-written Triton kernels against PyTorch references.

Exit codes of ``eval`` and ``demo``: 0 every candidate is correct; 1 at least one candidate is not
(its verdict says why); 2 bad usage or input (a missing file, an unknown problem, a bad option),
found before any evaluation starts; 3 at least one evaluation hit an infrastructure error (not the
candidate's fault); 130 interrupted (Ctrl-C), after saying how many results were written.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
from concurrent.futures import as_completed
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from tritongym.bench.cli import bench as bench_command
from tritongym.bench.cli import report as report_command
from tritongym.config_options import config_options
from tritongym.env import LocalEnv, PoolConfig, Task
from tritongym.errors import ConfigError, TritonGymError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.evaluator import evaluate, resolve_device
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.paths import writable_file
from tritongym.problems import Problem, TableColumns, find_problem, load_problems, match_problem
from tritongym.problems.problem import shrunk_notice
from tritongym.problems.sizes import parse_size_overrides
from tritongym.progress import ProgressReport
from tritongym.solutions.cli import app as solutions_app
from tritongym.train.cli import register as register_training

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

app = typer.Typer(
    help=__doc__,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="markdown",
)
problems_app = typer.Typer(help="Inspect problem sets.", no_args_is_help=True, rich_markup_mode="markdown")
app.add_typer(problems_app, name="problems")
app.add_typer(solutions_app, name="solutions")
app.command("bench")(bench_command)
out = Console()
err = Console(stderr=True, soft_wrap=True)  # messages hold paths: never broken at the width

_VERDICT_STYLE = {Verdict.OK: "green", Verdict.INFRASTRUCTURE_ERROR: "magenta"}


def _version(shown: bool) -> None:
    if shown:
        import torch
        import triton

        from tritongym import __version__

        print(f"tritongym {__version__} (torch {torch.__version__}, triton {triton.__version__})")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _logging(
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_version, help="Print the versions and exit.")
    ] = False,
) -> None:
    """Log lines (progress without a terminal, warnings) go to stderr."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("tritongym").setLevel(logging.INFO)


def _fail_usage(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(EXIT_USAGE)


def _check_output(path: Path | None, option: str = "--out") -> None:
    """Refuse an output file that cannot be written before any work starts."""
    if path is None:
        return
    try:
        writable_file(path, option)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


def _parse_sizes(sizes: list[str]) -> dict[str, int]:
    try:
        return parse_size_overrides(sizes)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


def _prepare(problem: Problem, small: bool, sizes: dict[str, int]) -> Problem:
    return problem.prepare(small=small, sizes=sizes)


def _announce_sizes(problems: list[Problem]) -> None:
    """Say which problems run at shrunk sizes, and what changed; nothing when none was shrunk."""
    if notice := shrunk_notice(problems):
        err.print(f"[yellow]{escape(notice)}[/yellow]")


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


def _findings(result: EvalResult) -> str:
    return ", ".join(dict.fromkeys(f.check for f in result.findings)) or "-"


def _print_table(table: Table) -> None:
    """A table on stdout: on a terminal at the terminal's width; otherwise (a pipe, a log file, CI) at
    its natural width, so that no column is folded into a sliver by the default 80 columns."""
    if out.is_terminal:
        out.print(table)
        return
    width = max(out.width, Measurement.get(out, out.options.update_width(1000), table).maximum)
    Console(file=out.file, width=width, no_color=out.no_color).print(table)


def _results_table(rows: list[tuple[str, EvalResult]], title: str) -> Table:
    """One row per result. Problem names are never cut (they are what the reader looks up); columns
    with nothing to say (speedup on the CPU, candidate when each problem has one) are left out."""
    columns = ["problem", "candidate", "verdict", "findings", "trials", "max abs err", "speedup", "coverage", "seconds"]
    cells = []
    for label, r in sorted(rows, key=lambda row: (row[1].problem, row[0])):
        style = _VERDICT_STYLE.get(r.verdict, "red")
        seconds = r.stage_seconds.get("sandbox_wall")
        cells.append([
            escape(r.problem),
            escape(Path(label).name if label.endswith(".py") else label),
            f"[{style}]{r.verdict.value}[/{style}]",
            escape(_findings(r)),
            f"{r.trials_passed}/{r.trials}" if r.trials else "-",
            f"{r.errors.max_abs_error:.2e}" if r.errors else "-",
            f"{r.speedup:.2f}x" if r.speedup is not None else "-",
            f"{r.coverage:.2f}" if r.coverage is not None else "-",
            f"{seconds:.1f}" if seconds is not None else "-",
        ])  # fmt: skip
    one_per_problem = len({r.problem for _, r in rows}) == len(rows)
    keep = [
        i for i, name in enumerate(columns)
        if i in (0, 2) or not ((name == "candidate" and one_per_problem) or all(row[i] == "-" for row in cells))
    ]  # fmt: skip
    table = Table(title=escape(title))
    words = {  # whole words, never cut or folded: the problem and the verdict
        0: max((len(r.problem) for _, r in rows), default=7),
        2: max((len(r.verdict.value) for _, r in rows), default=7),
    }
    for i in keep:
        table.add_column(columns[i], min_width=words.get(i), no_wrap=i in words, overflow="fold")
    for row in cells:
        table.add_row(*(row[i] for i in keep))
    return table


def _size_hint(problem: Problem, result: EvalResult) -> str:
    """For a problem shrunk by --small whose evaluation failed outside the candidate (most often the
    reference itself at the shrunk sizes: a dilated kernel larger than its input), what to try."""
    if result.verdict is not Verdict.INFRASTRUCTURE_ERROR or not problem.shrunk:
        return ""
    return f"(at small sizes: {problem.size_notice}; --full or --size NAME=VALUE may run it)"


def _print_result(result: EvalResult, label: str | None = None, hint: str = "") -> None:
    """Verdict, findings and feedback of one result, as text (user text is never read as markup)."""
    style = _VERDICT_STYLE.get(result.verdict, "red")
    where = f"  ({escape(label)})" if label else ""
    out.print(f"[bold {style}]{result.verdict.value}[/bold {style}]  [bold]{escape(result.problem)}[/bold]{where}")
    for finding in result.findings:
        out.print(f"  finding ({finding.check}): {finding.message}", markup=False, highlight=False)
    if result.verdict is not Verdict.OK or not result.findings:
        out.print(result.feedback, markup=False, highlight=False)
    if hint:
        out.print(hint, markup=False, highlight=False, style="yellow")


def _row(label: str, result: EvalResult) -> str:
    """One line of the results JSONL (docs/results.md): the candidate's label, then the EvalResult."""
    return json.dumps({"candidate": label, **result.to_dict()})


def _pool(config: EvalConfig, jobs: int | None) -> LocalEnv:
    """The local pool on the configured device: ``jobs`` sandboxes (default: the cores on the CPU,
    one per GPU)."""
    return LocalEnv(PoolConfig(devices=config.device, sandboxes_per_device=jobs))


def _resume(out_path: Path, tasks: list[Task]) -> tuple[list[Task], list[tuple[str, EvalResult]]]:
    """``--resume``: the tasks that ``out_path`` holds no result for yet, and the results it holds for
    the others. The file is rewritten first without its infrastructure errors (tried again) and
    without a last line an interruption cut short."""
    kept: list[str] = []
    done: dict[tuple[str, str], EvalResult] = {}
    lines = out_path.read_text(encoding="utf-8").splitlines() if out_path.is_file() else []
    for line in lines:
        try:
            row = json.loads(line)
            label, result = row.pop("candidate"), EvalResult.from_dict(row)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # not a result row (a line cut short)
        if result.verdict is not Verdict.INFRASTRUCTURE_ERROR:
            kept.append(line)
            done[(label, result.problem)] = result
    temporary = out_path.with_name(out_path.name + ".tmp")
    temporary.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    temporary.replace(out_path)
    left = [t for t in tasks if (t.label, t.problem.name) not in done]
    rows = [(t.label, done[(t.label, t.problem.name)]) for t in tasks if (t.label, t.problem.name) in done]
    if rows:
        err.print(escape(f"resuming: {len(rows)} of {len(tasks)} results already in {out_path}"))
    return left, rows


def _announce_overwrite(out_path: Path, hint: str = "") -> None:
    """Say that ``out_path`` is overwritten where it holds something."""
    if out_path.is_file() and out_path.stat().st_size:
        err.print(f"[yellow]{escape(f'{out_path} is overwritten{hint}')}[/yellow]")


def _run_batch(
    tasks: list[Task],
    config: EvalConfig,
    jobs: int | None,
    out_path: Path | None,
    title: str,
    as_json: bool = False,
    resume: bool | None = None,
) -> int:
    """Evaluate ``tasks`` in the local pool, writing each result to ``out_path`` as it comes. ``resume``
    (batch eval's --resume; None where the command has no such option): keep the results ``out_path``
    already holds and evaluate only the rest."""
    rows: list[tuple[str, EvalResult]] = []
    if resume and out_path:
        tasks, rows = _resume(out_path, tasks)
    elif out_path:
        _announce_overwrite(out_path, " (--resume keeps them and evaluates the rest)" if resume is False else "")
    total = len(tasks) + len(rows)
    hints: dict[int, str] = {}
    if as_json:
        for label, result in rows:
            print(_row(label, result), flush=True)
    sink = out_path.open("a" if resume else "w", encoding="utf-8") if out_path else None
    try:
        with (
            _pool(config, jobs) if tasks else nullcontext() as env,
            ProgressReport(len(tasks), "evaluating", err) as progress,
        ):
            futures = {env.submit(t.problem, t.candidate, config, priority=t.priority): t for t in tasks}
            try:
                for future in as_completed(futures):
                    label, result = futures[future].label, future.result()
                    hints[id(result)] = _size_hint(futures[future].problem, result)
                    rows.append((label, result))
                    if sink:
                        sink.write(_row(label, result) + "\n")
                        sink.flush()
                    if as_json:
                        print(_row(label, result), flush=True)
                    progress.advance()
            except KeyboardInterrupt:
                for future in futures:
                    future.cancel()  # what has not started; the pool finishes what is running
                raise
    except KeyboardInterrupt:
        where = f" written to {out_path}" if out_path else " (no --out: nothing written)"
        if out_path and resume is not None:
            where += "; the same command with --resume evaluates the rest"
        err.print(f"[yellow]interrupted: {len(rows)} of {total} results{escape(where)}[/yellow]")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        if sink:
            sink.close()
    results = [r for _, r in rows]
    passed = sum(r.verdict is Verdict.OK for r in results)
    summary = f"{passed}/{len(results)} correct" + (f"; results written to {out_path}" if out_path else "")
    if as_json:
        err.print(escape(summary))
        return _exit_code(results)
    _print_table(_results_table(rows, title))
    for label, r in sorted(rows, key=lambda row: (row[1].problem, row[0])):
        if r.verdict is not Verdict.OK:
            out.print(f"[bold]{escape(r.problem)}[/bold] ({escape(label)}): ", end="")
            out.print(r.feedback, markup=False, highlight=False)
            if hints.get(id(r)):  # a result kept by --resume has none
                out.print(hints[id(r)], markup=False, highlight=False, style="yellow")
    out.print(escape(summary))
    return _exit_code(results)


JobsOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Warm sandboxes: on the CPU in all (default: the cores), on GPUs per GPU (default 1)."),
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
DeviceOpt = Annotated[str, typer.Option(help=EvalConfig.help("device"))]


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
    table = Table(title=escape(f"{len(problems)} problems from {source}"))
    for column in ("name", "class", "level", "tags", "sizes"):
        table.add_column(column, overflow="fold")
    unusable = 0
    for p in problems:
        try:
            p.require_definitions()
            sizes = escape(", ".join(f"{k}={v}" for k, v in p.sizes.items()))
        except TritonGymError as exc:
            unusable += 1
            sizes = f"[red]not a problem: {escape(str(exc))}[/red]"
        table.add_row(escape(p.name), escape(p.entry_point), str(p.level or "-"), escape(", ".join(p.tags)), sizes)
    _print_table(table)
    if unusable:
        err.print(f"[red]{unusable} of {len(problems)} cannot be evaluated[/red] (the sizes column says why)")
        raise typer.Exit(1)


@app.command("eval")
@config_options(EvalConfig, on_error=_fail_usage)
def eval_command(
    candidate: Annotated[
        Path,
        typer.Option(
            help="A solution .py file; a directory of .py solutions (batch: each named after its problem, or "
            "all for --problem); or a .jsonl file of {problem, candidate[, id]} rows (batch; the candidate "
            "is the source text)."
        ),
    ],
    problem: Annotated[
        str | None,
        typer.Option(help="A problem .py file or bundled name; with a directory, the problem of every file in it."),
    ] = None,
    problems: Annotated[
        str, typer.Option(help="Problem source that batch mode looks names up in (see 'problems list').")
    ] = "bundled",
    json_output: Annotated[
        bool, typer.Option("--json", help="Print results as JSON: one object, or one line per candidate (batch).")
    ] = False,
    out_path: Annotated[Path | None, typer.Option("--out", help="Also write the results as JSONL.")] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Batch: keep the results already in --out and evaluate only the candidates it has none for "
            "(an infrastructure error is tried again). Without it an existing --out is overwritten.",
        ),
    ] = False,
    small: SmallOpt = None,
    size: SizeOpt = None,
    jobs: JobsOpt = None,
    source_column: SourceColumnOpt = TableColumns.source,
    entry_point_column: EntryPointColumnOpt = "entry_point",
    *,
    config: EvalConfig,
) -> None:
    """Evaluate a candidate solution (or many): correctness, the guards, and on a GPU the speedup over
    the reference and the profiling coverage."""
    sizes = _parse_sizes(size or [])
    _check_output(out_path)
    try:
        _, small_default = _announce_device(config)
        small = small_default if small is None else small
        columns = TableColumns(source=source_column, entry_point=entry_point_column)
        if candidate.is_dir() or candidate.suffix == ".jsonl":
            tasks = _batch_tasks(candidate, problem, problems, columns, small, sizes)
            _announce_sizes([t.problem for t in tasks])
            title = f"{len(tasks)} candidates from {candidate}"
            if resume and out_path is None:
                raise _fail_usage("--resume needs --out, the results file of the run to continue")
            raise typer.Exit(_run_batch(tasks, config, jobs, out_path, title, as_json=json_output, resume=resume))
        if resume:
            raise _fail_usage("--resume is for batch mode (a directory or .jsonl of candidates)")
        if problem is None:
            raise _fail_usage("--problem is required when --candidate is a file")
        if not candidate.is_file():
            raise _fail_usage(f"{candidate}: no such file")
        task = Task(_prepare(find_problem(problem), small, sizes), candidate.read_bytes(), str(candidate))
        _announce_sizes([task.problem])
    except TritonGymError as exc:
        raise _fail_usage(str(exc)) from None
    if out_path:
        _announce_overwrite(out_path)
    result = evaluate(task.problem, task.candidate, config)
    if out_path:
        out_path.write_text(_row(task.label, result) + "\n", encoding="utf-8")
    if json_output:
        print(result.to_json())
    else:
        _print_result(result, hint=_size_hint(task.problem, result))
    raise typer.Exit(_exit_code([result]))


def _batch_tasks(
    candidate: Path, problem: str | None, source: str, columns: TableColumns, small: bool, sizes: dict[str, int]
) -> list[Task]:
    """The tasks of batch mode: a .jsonl of rows, a directory for one --problem, or a directory of
    <problem name>.py files (short names such as 'softmax' count)."""
    if candidate.suffix == ".jsonl":
        if problem is not None:
            raise TritonGymError("--problem does not apply to a .jsonl of candidates: each row names its problem")
        return _jsonl_tasks(candidate, load_problems(source, columns), small, sizes)
    files = sorted(candidate.glob("*.py"))
    if problem is not None:
        target = _prepare(find_problem(problem), small, sizes)
        tasks = [Task(target, f.read_bytes(), str(f)) for f in files]
    else:
        available = load_problems(source, columns)
        matched = [(f, match_problem(available, f.stem)) for f in files]
        unmatched = [f.name for f, p in matched if p is None]
        if unmatched:
            skipped = f"skipped (no problem of that name in {source}): {', '.join(unmatched)}"
            err.print(f"[yellow]{escape(skipped)}[/yellow]")
        tasks = [Task(_prepare(p, small, sizes), f.read_bytes(), str(f)) for f, p in matched if p is not None]
    if not tasks:
        wanted = ".py file" if problem else f"<problem name>.py file matching a problem of {source}"
        raise TritonGymError(f"{candidate}: no {wanted}")
    return tasks


def _jsonl_tasks(path: Path, available: list[Problem], small: bool, sizes: dict[str, int]) -> list[Task]:
    if not path.is_file():
        raise TritonGymError(f"{path}: no such file")
    prepared: dict[str, Problem] = {}
    tasks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TritonGymError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("problem"), str)
            or not isinstance(row.get("candidate"), str)
        ):
            raise TritonGymError(f'{path}:{number}: expected {{"problem": NAME, "candidate": SOURCE}} with strings')
        name = row["problem"]
        if name not in prepared:
            found = match_problem(available, name)
            if found is None:
                raise TritonGymError(f"{path}:{number}: no problem {name!r} in the problem source (see --problems)")
            prepared[name] = _prepare(found, small, sizes)
        tasks.append(Task(prepared[name], row["candidate"], str(row.get("id", f"{path.name}:{number}"))))
    if not tasks:
        raise TritonGymError(f"{path}: no rows")
    return tasks


@app.command()
def demo(
    device: DeviceOpt = "auto",
    jobs: JobsOpt = None,
    out_path: Annotated[Path | None, typer.Option("--out", help="Write results as JSONL.")] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Keep the results already in --out and evaluate only the solutions it has none for (an "
            "infrastructure error is tried again), as eval's batch mode. Without it an existing --out is overwritten.",
        ),
    ] = False,
    small: SmallOpt = None,
) -> None:
    """Evaluate the bundled reference solutions on the bundled problems and print a table."""
    _check_output(out_path)
    if resume and out_path is None:
        raise _fail_usage("--resume needs --out, the results file of the run to continue")
    try:
        config = EvalConfig(device=device)
        resolved, small_default = _announce_device(config)
        small = small_default if small is None else small
        problems = load_problems("bundled")
    except TritonGymError as exc:
        raise _fail_usage(str(exc)) from None
    tasks = [Task(p.small() if small else p, p.solution, f"bundled/solutions/{p.name}.py") for p in problems]
    _announce_sizes([t.problem for t in tasks])
    raise typer.Exit(_run_batch(tasks, config, jobs, out_path, f"bundled solutions on {resolved}", resume=resume))


app.command("report")(report_command)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _bind(host: str, port: int) -> socket.socket:
    """The service's listening socket, bound before anything starts (a taken port fails at once)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        raise _fail_usage(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port or --host") from None


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; beyond loopback a token is required.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    db: Annotated[Path, typer.Option(help="SQLite file holding tasks and results (created if missing).")] = Path(
        "tritongym.db"
    ),
    devices: Annotated[str, typer.Option(help="'auto', 'cpu', 'cuda' (every GPU) or 'cuda:0,2'.")] = "auto",
    jobs: JobsOpt = None,
    max_body_mb: Annotated[int, typer.Option(min=1, help="Largest request body accepted, in MiB.")] = 16,
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
    if backend not in ("local", "ray"):
        raise _fail_usage(f"--backend must be 'local' or 'ray', not {backend!r}")
    _check_output(db, "--db")
    listener = _bind(host, port)
    try:
        if backend == "local":
            env = LocalEnv(PoolConfig(devices=devices, sandboxes_per_device=jobs))
        else:
            from tritongym.env.ray_backend import RayEnv

            env = RayEnv(address=ray_address, devices=devices, num_workers=jobs)
    except ImportError:
        listener.close()
        raise _fail_usage("the Ray backend needs its extra: pip install 'tritongym[ray]'") from None
    except TritonGymError as exc:
        listener.close()
        raise _fail_usage(str(exc)) from None
    store = TaskStore(db)
    try:
        service = create_app(env, store, ServiceConfig(token=token, max_body_bytes=max_body_mb << 20))
        err.print(
            escape(f"serving {env.slots} sandbox(es) ({backend}, {env.device}) at http://{host}:{port}; tasks in {db}")
        )
        uvicorn.Server(uvicorn.Config(service, log_level="warning")).run(sockets=[listener])
    finally:
        listener.close()
        env.close()
        store.close()


register_training(app)


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())
