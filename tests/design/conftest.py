import pytest

from tritongym.design.language import Design
from tritongym.design.table import Table, distinct, eval_meta
from tritongym.design.task import DesignOptions, design_problems
from tritongym.evaluate import EvalResult, Verdict


@pytest.fixture(scope="session")
def design_env(warm_env):
    """The design-language tests judge in the session's warm sandbox (a judge's start dominates their cost)."""
    return warm_env


PURPOSE_BUILT = {
    # strategy -> (verdict, speedup, coverage): one design is clearly best, one is a cheap hack, the
    # rest fail; the lazy one is correct, fast and uncovered (what PR and PRS are about)
    "fused": (Verdict.OK, 1.5, 0.95),
    "split": (Verdict.OK, 0.6, 0.9),
    "lazy": (Verdict.OK, 1.4, 0.05),
    "nomask": (Verdict.CRASH, None, None),
    "badorder": (Verdict.MISMATCH, None, None),
    "fallback": (Verdict.HACK_FALLBACK, None, None),
    "alias": (Verdict.HACK_OUTPUT_ALIAS, None, None),
}


def write_purpose_built_table(path, options: dict, outcomes=PURPOSE_BUILT) -> Table:
    """A table of made-up results for every rendering of the options' space: the verdict, speedup and
    coverage of each strategy are ``outcomes[strategy]``, or ``outcomes(strategy, spec)`` where
    ``outcomes`` is a function (results that depend on the problem's shape)."""
    opts = DesignOptions.from_mapping(options)
    table = Table.read(path)
    table.start(eval_meta(opts.eval_config("cpu")))
    problems = design_problems(opts)
    for rendering in distinct(problems.renderings(opts.design_space())):
        strategy = Design.from_tokens(rendering.designs[0].split()).strategy
        spec = problems.specs[rendering.problem.name]
        verdict, speedup, coverage = outcomes(strategy, spec) if callable(outcomes) else outcomes[strategy]
        correct = verdict is Verdict.OK
        result = EvalResult(problem=rendering.problem.name, verdict=verdict, feedback="", compiled=True,
                            correct=correct, speedup=speedup, coverage=coverage)  # fmt: skip
        table.append(rendering, result)
    return table


@pytest.fixture
def purpose_built():
    return write_purpose_built_table
