"""The learning experiment in three steps (docs/learning.md): ``python -m tritongym.design STEP --help``.

1. ``tabulate`` (GPU): every rendering of the design space on every problem, judged once by the real
   environment, appended to a JSONL table (resumable: run it again until it exits 0).
2. ``train`` (CPU): every experiment's arms x seeds on the trainer, against the table.
3. ``final`` (GPU): a fresh evaluation of the trained policies' greedy designs on the held-out
   problems; then ``report`` (CPU) writes the summaries with confidence intervals and the figures.

Needs torch, triton, numpy, rich and (steps 2 and 3's report) transformers and matplotlib.
Exit status: 0 done, 2 bad usage or config, 3 incomplete (the time budget ran out: run it again).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import tomllib
from pathlib import Path

from tritongym.errors import TritonGymError

USAGE, INCOMPLETE = 2, 3
log = logging.getLogger("tritongym.design")


def _task_options(config_path: Path) -> dict:
    try:
        data = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TritonGymError(f"cannot read {config_path}: {exc}") from exc
    return data.get("task", {}).get("options", {})


def _evaluate(args, renderings, table_path: Path, config, meta: dict) -> int:
    """Judge ``renderings`` into the table at ``table_path`` on a local pool; the exit status."""
    from tritongym.design.table import Table, tabulate
    from tritongym.env.local import LocalEnv, PoolConfig

    deadline = time.monotonic() + args.time_budget_s
    table = Table.read(table_path)
    table.start(meta)
    todo = sum(r.key not in table.rows or (args.retry_infrastructure_errors and table.unjudged(r.key))
               for r in renderings)  # fmt: skip
    log.info("%d distinct renderings, %d already in %s", len(renderings), len(renderings) - todo, table_path)
    if todo == 0:
        return 0
    env = LocalEnv(PoolConfig(devices=args.device, sandboxes_per_device=args.sandboxes))
    try:
        missing = tabulate(env, renderings, table, config, in_flight=2 * env.slots, deadline=deadline,
                           retry_infrastructure=args.retry_infrastructure_errors)  # fmt: skip
    finally:
        env.close()
    unjudged = sum(table.unjudged(r.key) for r in renderings if r.key in table.rows)
    log.info("%d renderings still missing from %s; %d infrastructure errors in it", missing, table_path, unjudged)
    return 0 if missing == 0 else INCOMPLETE


def tabulate_command(args) -> int:
    from tritongym.design.table import distinct, eval_meta
    from tritongym.design.task import DesignOptions, design_problems

    options = DesignOptions.from_mapping(_task_options(args.config))
    problems = design_problems(options)
    renderings = distinct(problems.renderings(options.design_space()))
    config = options.eval_config("cpu" if args.device == "cpu" else "auto")
    return _evaluate(args, renderings, args.out, config, eval_meta(config, machine=_machine()))


def final_command(args) -> int:
    from tritongym.design.experiment import fresh_renderings
    from tritongym.design.table import Table, eval_meta

    config = Table.read(args.table).eval_config()  # the fresh evaluation is made as the table was
    renderings = fresh_renderings(args.designs)
    return _evaluate(args, renderings, args.out, config, eval_meta(config, machine=_machine(), fresh=True))


def train_command(args) -> int:
    from transformers.utils import logging as hf_logging

    from tritongym.design.experiment import load_experiments, run_experiments

    hf_logging.disable_progress_bar()  # one bar per checkpoint otherwise

    experiments = load_experiments(args.experiments)
    if args.only:
        unknown = sorted(set(args.only) - {e.name for e in experiments})
        if unknown:
            raise TritonGymError(f"no experiments {unknown} in {args.experiments}")
        experiments = [e for e in experiments if e.name in args.only]
    overrides: dict = {}
    if args.table:
        overrides["task"] = {"options": {"table": str(args.table)}}
    if args.steps:
        overrides["run"] = {"steps": args.steps}
    if args.seeds:
        experiments = [type(e)(**{**e.__dict__, "seeds": tuple(args.seeds)}) for e in experiments]
    run_experiments(args.config, experiments, args.out, overrides, progress=args.progress)
    log.info("runs in %s; next: the fresh evaluation of %s (final), then report", args.out,
             args.out / "fresh_designs.json")  # fmt: skip
    return 0


def report_command(args) -> int:
    from tritongym.design.experiment import markdown, plot, summarize
    from tritongym.design.table import Table

    fresh = Table.read(args.fresh) if args.fresh else None
    names = sorted(p.parent.name for p in args.out.glob("*/experiment.json"))
    if not names:
        raise TritonGymError(f"{args.out} holds no finished experiment")
    for name in names:
        summary = summarize(args.out, name, fresh)
        (args.out / name / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
        plot(args.out, name)
        print(markdown(summary))
    return 0


def _machine() -> dict:
    import platform

    import torch
    import triton

    info = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m tritongym.design", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    steps = top.add_subparsers(dest="step", required=True)

    def pool(p: argparse.ArgumentParser, budget: float) -> None:
        p.add_argument("--device", default="auto", help="cpu, cuda or auto (the pool's devices; default auto)")
        p.add_argument("--sandboxes", type=int, default=None, help="sandboxes per GPU (CPU: in all)")
        helptext = f"stop submitting after this many seconds, finish what runs (default {budget:g})"
        p.add_argument("--time-budget-s", type=float, default=budget, help=helptext)
        p.add_argument("--retry-infrastructure-errors", action="store_true",
                       help="judge again the renderings the table holds as infrastructure errors")  # fmt: skip

    t = steps.add_parser("tabulate", help="judge every rendering of the space on every problem (GPU)")
    t.add_argument("--config", type=Path, required=True, help="train config whose [task.options] name the problems")
    t.add_argument("--out", type=Path, required=True, help="the table (JSONL; resumed if it exists)")
    pool(t, 330.0)
    t.set_defaults(run=tabulate_command)

    r = steps.add_parser("train", help="every experiment's arms x seeds on the trainer, against the table (CPU)")
    r.add_argument("--config", type=Path, required=True, help="the base train config (TOML)")
    r.add_argument("--experiments", type=Path, required=True, help="the experiments file (TOML)")
    r.add_argument("--out", type=Path, required=True, help="results directory (finished runs are skipped)")
    r.add_argument("--table", type=Path, default=None, help="the table (overrides task.options.table)")
    r.add_argument("--only", nargs="*", default=None, help="run only these experiments")
    r.add_argument("--steps", type=int, default=None, help="training steps (overrides run.steps)")
    r.add_argument("--seeds", type=int, nargs="*", default=None, help="seeds (overrides each experiment's)")
    r.add_argument("--progress", action="store_true", help="show the trainer's progress bar")
    r.set_defaults(run=train_command)

    f = steps.add_parser("final", help="fresh evaluation of the greedy and best fixed designs (GPU)")
    f.add_argument("--designs", type=Path, required=True, help="fresh_designs.json written by train")
    f.add_argument("--table", type=Path, required=True, help="the training table (its evaluation config is used)")
    f.add_argument("--out", type=Path, required=True, help="the fresh results (JSONL; resumed if it exists)")
    pool(f, 240.0)
    f.set_defaults(run=final_command)

    p = steps.add_parser("report", help="summaries with 95%% CIs, figures and Markdown tables (CPU)")
    p.add_argument("out", type=Path, help="the results directory of train")
    p.add_argument("--fresh", type=Path, default=None, help="the fresh results of final")
    p.set_defaults(run=report_command)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    try:
        return args.run(args)
    except TritonGymError as exc:
        log.error("%s", exc)
        return USAGE


if __name__ == "__main__":
    sys.exit(main())
