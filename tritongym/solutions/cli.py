"""``tritongym solutions``: make solutions with tools. ``inductor`` writes torch.compile's generated
Triton code as standalone ``ModelNew`` files, one per problem (tritongym/solutions/inductor.py).

Exit codes of ``solutions inductor``: 0 every problem has a solution; 1 some were skipped (the summary
says why); 2 bad usage or input; 130 interrupted (Ctrl-C: the problems done are in the summary, and the
same command with ``--resume`` compiles only the rest).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from tritongym.errors import ConfigError, TritonGymError
from tritongym.paths import writable_dir
from tritongym.progress import ProgressReport
from tritongym.solutions.inductor import CHILD_TIMEOUT_S, SUMMARY, generate, prepare_all

EXIT_OK, EXIT_SKIPPED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

app = typer.Typer(
    help="Make solutions with tools (torch.compile's Inductor).", no_args_is_help=True, rich_markup_mode="markdown"
)
err = Console(stderr=True, soft_wrap=True)  # messages hold paths: never broken at the width
log = logging.getLogger(__name__)


def _device(device: str) -> str:
    """'cuda' or 'cpu' for a --device setting; ConfigError for another name or an absent GPU."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cuda", "cpu"):
        raise ConfigError(f"--device must be auto, cuda or cpu, not {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is visible here; use --device cpu (or auto)")
    return device


@app.command("inductor")
def inductor(
    problems: Annotated[
        str, typer.Argument(help="'bundled', a directory (KernelBench level), a .py file or a .jsonl/.parquet table.")
    ],
    out: Annotated[
        Path, typer.Option(help="Directory for the solutions (PROBLEM.py, named after each problem) and summary.json.")
    ],
    levels: Annotated[str, typer.Option(help="Keep these KernelBench levels, e.g. 1,2.")] = "",
    ids: Annotated[str, typer.Option(help="Keep problems with these leading numbers, e.g. 1-20,25.")] = "",
    device: Annotated[str, typer.Option(help="'auto' (cuda if available, else cpu), 'cuda' or 'cpu'.")] = "auto",
    jobs: Annotated[
        int | None,
        typer.Option(min=1, help="Problems compiled at once, each in a process of its own (default: the cores)."),
    ] = None,
    small: Annotated[
        bool | None,
        typer.Option("--small/--full", help="Shrink problems to CPU sizes (default: small on the CPU, full on a GPU)."),
    ] = None,
    timeout: Annotated[
        float, typer.Option(help="Longest one problem's compilation may take, seconds.")
    ] = CHILD_TIMEOUT_S,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Keep the outcomes already in --out's summary.json (those that ran out of memory are tried "
            "again) and compile only the other problems. Without it every problem is compiled.",
        ),
    ] = False,
) -> None:
    """torch.compile every problem's reference and write Inductor's code as a standalone Triton
    ModelNew (DIR/PROBLEM.py, named after the problem); a problem that does not compile to one graph of
    Triton kernels and library calls is skipped, with its reason in the summary."""
    from tritongym.bench.run import pick_problems

    try:
        resolved = _device(device)
        level_numbers = tuple(int(x) for x in levels.split(",") if x.strip())
        chosen = pick_problems(problems, level_numbers, ids)
        writable_dir(out, "--out")
    except ValueError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    except TritonGymError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    small = resolved == "cpu" if small is None else small
    prepared, refused = prepare_all(chosen, small)
    workers = jobs or os.cpu_count() or 1
    try:
        with ProgressReport(len(prepared), f"compiling on {resolved}", err) as progress:
            outcomes = generate(
                prepared, out, resolved, jobs=workers, timeout_s=timeout, on_done=lambda _: progress.advance(),
                refused=refused, resume=resume,
            )  # fmt: skip
    except KeyboardInterrupt:
        summary = out / SUMMARY
        done = len(json.loads(summary.read_text(encoding="utf-8"))["problems"]) if summary.is_file() else 0
        err.print(escape(f"interrupted: {done} of {len(prepared) + len(refused)} problems done, recorded in {summary}; "
                         "the same command with --resume compiles the rest"), style="yellow")  # fmt: skip
        raise typer.Exit(EXIT_INTERRUPTED) from None
    for o in outcomes:
        if o.status == "written":
            err.print(escape(f"{o.problem}: written ({o.kernels} Triton kernels, {o.extern_calls} library calls)"))
        else:
            err.print(f"[yellow]{escape(o.problem)}: skipped: {escape(o.reason)}[/yellow]")
    written = sum(o.status == "written" for o in outcomes)
    err.print(escape(f"{written} of {len(outcomes)} solutions written to {out} (summary: {out / SUMMARY})"))
    raise typer.Exit(EXIT_OK if written == len(outcomes) else EXIT_SKIPPED)
