"""The design-language task of the trainer (``task.name = "tritongym.design.task:build"``).

It gives the trainer the generated fusion-chain problems (training and held-out), the design model
(a random :class:`~tritongym.design.policy.DesignLM` over the design vocabulary), a rollout engine
around :class:`~tritongym.design.policy.DesignPolicy`, the design chat (problem name, JSON feedback)
and an environment answering from the evaluation table (:class:`~tritongym.design.table.TableEnv`).
Everything else (rewards, advantages, filters, loss, metrics, checkpoints) is the trainer's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from tritongym.agent.episodes import EpisodeConfig
from tritongym.agent.feedback import FeedbackConfig
from tritongym.agent.prompts import Prompts
from tritongym.design.language import DesignSpace
from tritongym.design.problems import (
    KINDS,
    FusionSpec,
    bundled_specs,
    generate_specs,
    spec_problem,
    split_specs,
    stratified_specs,
)
from tritongym.design.render import render
from tritongym.errors import ConfigError
from tritongym.evaluate.config import EvalConfig
from tritongym.problems import Problem
from tritongym.train.task import TaskParts


@dataclass(frozen=True)
class DesignOptions:
    """``task.options`` of the design task."""

    table: str = ""
    """The evaluation table (JSONL) the environment answers from: ``python -m tritongym.design tabulate``."""
    generated: int = 9
    """Generated fusion-chain problems."""
    problem_seed: int = 0
    """Seed of the problem generator and of the held-out split."""
    kinds: list[str] = field(default_factory=lambda: list(KINDS))
    """Problem kinds to generate (eltwise, reduce, matmul), round-robin."""
    held_out: int = 3
    """Generated problems set aside for evaluation, never trained on."""
    stratified: int = 0
    """Extra training problems, one per (kind, shape) cell of ``problems.STRATIFIED_SHAPES`` in turn,
    with ops drawn from ``problem_seed`` and no op chain of a generated problem: more shapes per kind,
    so training covers the held-out problems' shape buckets without seeing them. The generated
    problems and their held-out split are the same with or without them."""
    validation: int = 0
    """Stratified problems set aside as a validation split (the last of each kind in turn): never
    trained on, the trainer's ``eval/*`` problems, and what an experiment's ``select_every`` picks
    the trained policy by. The held-out problems are then seen only before and after training."""
    describe_ops: bool = True
    """Whether the policy's problem tokens name the elementwise ops (``op:silu``). They decide no
    design but ``badorder`` on an elementwise chain (correct where its ops commute), and with few
    training problems they identify each one: false leaves kind, reduction and shape buckets."""
    bundled: bool = False
    """Also train on the bundled problems the language expresses (02_silu, 03_row_sum, 04_softmax, 06_linear_relu)."""
    small: bool = False
    """Problems at their small (CPU interpreter) sizes."""
    space: dict[str, list[Any]] = field(default_factory=dict)
    """Design values per slot the policy may choose (missing slots: every value of the language)."""
    model: dict[str, int] = field(default_factory=dict)
    """The policy transformer's size (ModelShape: hidden, layers, heads)."""
    eval: dict[str, Any] = field(default_factory=dict)
    """EvalConfig fields the table is evaluated with (checked against the table's header)."""
    weaken: list[str] = field(default_factory=list)
    """Guards switched off in the environment: ``coverage`` (results lose coverage and kernels, as
    with ``profile = false``)."""

    @classmethod
    def from_mapping(cls, options: dict[str, Any]) -> DesignOptions:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(f"unknown design task option(s) {unknown}; known: {', '.join(sorted(known))}")
        return cls(**options)

    def design_space(self) -> DesignSpace:
        return DesignSpace.from_mapping(self.space)

    def eval_config(self, device: str = "auto") -> EvalConfig:
        return EvalConfig(**{"device": device, **self.eval})


@dataclass(frozen=True)
class DesignProblems:
    """Training, validation and held-out specs and their Problems at the task's sizes."""

    train: list[FusionSpec]
    held_out: list[FusionSpec]
    problems: dict[str, Problem]
    small: bool
    validation: list[FusionSpec] = field(default_factory=list)

    @property
    def every(self) -> list[FusionSpec]:
        return self.train + self.validation + self.held_out

    @property
    def specs(self) -> dict[str, FusionSpec]:
        return {s.name: s for s in self.every}

    def renderings(self, space: DesignSpace) -> list[tuple[Problem, str, str]]:
        """(problem, design, source) of every design of ``space`` on every problem."""
        return [(self.problems[s.name], str(d), render(d, s)) for s in self.every for d in space]


def validation_split(specs: list[FusionSpec], count: int) -> tuple[list[FusionSpec], list[FusionSpec]]:
    """(rest, validation): ``count`` of ``specs`` set aside, the last of each kind in turn (so a
    validation split of three holds one problem of each kind while the rest keeps the earlier cells)."""
    if not 0 <= count < len(specs):
        raise ConfigError(f"validation takes {count} of the {len(specs)} stratified problems: at least one must train")
    by_kind = {kind: [s for s in specs if s.kind == kind] for kind in KINDS}
    chosen: list[FusionSpec] = []
    while len(chosen) < count:
        for kind in KINDS:
            if by_kind[kind] and len(chosen) < count:
                chosen.append(by_kind[kind].pop())
    return [s for s in specs if s not in chosen], [s for s in specs if s in chosen]


def design_problems(options: DesignOptions) -> DesignProblems:
    specs = generate_specs(options.generated, options.problem_seed, tuple(options.kinds))
    train, held_out = split_specs(specs, options.held_out, options.problem_seed)
    extra = stratified_specs(options.stratified, options.problem_seed, tuple(options.kinds), tuple(specs))
    extra, validation = validation_split(extra, options.validation) if options.validation else (extra, [])
    train = train + extra + (bundled_specs() if options.bundled else [])
    problems = {}
    for spec in train + validation + held_out:
        problem = spec_problem(spec)
        problems[spec.name] = problem.small() if options.small else problem
    return DesignProblems(train, held_out, problems, options.small, validation)


def open_table(options: DesignOptions, problems: DesignProblems):
    """The table of ``options``, checked: made with the options' evaluation settings, and holding every
    rendering of the space on every problem."""
    from tritongym.design.table import Table, distinct

    if not options.table:
        raise ConfigError("task.options.table is not set: tabulate the design space first (docs/learning.md)")
    if not Path(options.table).is_file():
        raise ConfigError(f"no evaluation table {options.table}: run `python -m tritongym.design tabulate` first")
    table = Table.read(options.table)
    made_with = table.meta.get("eval", {})
    differ = {k: (v, made_with.get(k)) for k, v in options.eval.items() if made_with.get(k) != v}
    if differ:
        raise ConfigError(f"{options.table} was evaluated with other settings (wanted, found): {differ}")
    missing = [r for r in distinct(problems.renderings(options.design_space())) if r.key not in table.rows]
    if missing:
        names = sorted({r.problem.name for r in missing})
        raise ConfigError(f"{options.table} lacks {len(missing)} renderings (of {', '.join(names)}): tabulate them")
    return table


def design_episode(turns: int) -> EpisodeConfig:
    """The design chat: the problem's name, then the evaluation as JSON (all history)."""
    template = str(Path(__file__).with_name("design_prompt.txt"))
    return EpisodeConfig(
        turns=turns,
        history="all",
        extraction="last",
        prompts=Prompts(template, template),
        feedback=FeedbackConfig(style="json", max_chars=100_000),
    )


def build(config: Any, **options: Any) -> TaskParts:
    """The trainer's parts for the design task (see the module docstring)."""
    from tritongym.design.policy import DesignPolicy, ModelShape, build_model, build_tokenizer
    from tritongym.design.table import TableEnv
    from tritongym.train.model import resolve_model_device
    from tritongym.train.rollout import HFRollout

    opts = DesignOptions.from_mapping(options)
    problems = design_problems(opts)
    table = open_table(opts, problems)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, ModelShape(**opts.model), opts.design_space(), config.run.seed)
    model = model.to(resolve_model_device(config.model.device)).train()
    policy = DesignPolicy(model, tokenizer, problems.specs, problems.small, ops=opts.describe_ops)
    return TaskParts(
        problems=[problems.problems[s.name] for s in problems.train],
        eval_problems=[problems.problems[s.name] for s in problems.validation or problems.held_out],
        model=model,
        tokenizer=tokenizer,
        engine=HFRollout(policy),
        env=TableEnv(table, opts.weaken),
        episode=design_episode(config.rollout.turns),
    )
