"""``tritongym report``: re-render one run's report, or compare several runs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown

from tritongym.bench.report import COMPARE, REPORT, compare_runs, headline_table, render_run
from tritongym.errors import TritonGymError

EXIT_USAGE = 2


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
    console, err = Console(), Console(stderr=True)
    try:
        if len(runs) == 1:
            if out is not None:
                raise TritonGymError("--out is for comparisons; one run's report is written into its directory")
            summary = render_run(runs[0])
            console.print(Markdown(headline_table(summary)))
            console.print(f"report: {runs[0] / REPORT}")
            return
        destination = out or runs[0]
        console.print(Markdown(compare_runs(runs, destination)))
        console.print(f"comparison: {destination / COMPARE}")
    except TritonGymError as exc:
        err.print("[red]error:[/red] ", end="")
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from None
