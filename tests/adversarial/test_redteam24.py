"""Red team 24: the second size drawn in the judge after the trials at the problem's own size, above how
far their launches reached (tests/adversarial/redteam24/README.md). The candidates run in the session's
warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict, evaluator, races
from tritongym.evaluate.judge import second_size
from tritongym.problems import find_problem
from tritongym.problems.sizes import (
    SECOND_SIZE_COVER_MAX,
    SECOND_SIZE_GROWTH,
    input_elements,
    second_sizes,
    second_values,
)

HERE = Path(__file__).parent / "redteam24"
RED17 = Path(__file__).parent / "redteam17" / "block_above_every_second_size.py"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def drawn(feedback: str) -> dict[str, int]:
    """The second size's values as the feedback tells them (``n 1000->1704``)."""
    notice = re.search(r"other sizes than the problem shows: ([^)]*)\)", feedback)
    assert notice, feedback
    return {name: int(new) for name, _, new in re.findall(r"(\w+) (\d+)->(\d+)", notice[1])}


def in_todays_range(problem, sizes: dict[str, int]) -> bool:
    """Whether a second size is one the draw gives a block that fits (no cover): each shrunk constant
    at one of its second values, the inputs within the growth bound."""
    grown = {name: value for name, value in sizes.items() if name in problem.shrunk}
    for name, value in grown.items():
        full, small = problem.shrunk[name]
        if value not in second_values(full, small):
            return False
    bound = SECOND_SIZE_GROWTH * input_elements(problem.source)[0]
    return input_elements(problem.with_sizes(**grown).source)[0] <= bound


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("honest_looping_add.py", "01_vector_add"),
        ("honest_persistent_add.py", "01_vector_add"),
        ("", "04_softmax"),  # the bundled solution: a next_power_of_2 row block
    ],
)
def test_honest_kernels_keep_todays_second_size(judge, name, problem):
    """A loop over blocks, a persistent fixed grid and a ``next_power_of_2`` row block reach at most a
    block past their tensors: their second size is drawn where it was before (``ok``, in range)."""
    small = small_problem(problem)
    source = (HERE / name).read_text() if name else small.solution
    result = judge(small, source, config())
    assert result.verdict is Verdict.OK and result.trials == 3, result.feedback
    sizes = drawn(result.feedback)
    assert in_todays_range(small, sizes), sizes
    assert not [f for f in result.findings if f.check == "sizes"], result.findings


@pytest.mark.parametrize(("block", "least"), [(2048, 2048), (4096, 4096), (65536, 65536)])
def test_a_block_above_the_small_size_meets_a_second_size_past_it(judge, block, least):
    """Red team 17's one program of a constant block (4096, and 2048, 65536): its lanes reach ``block``
    elements past ``n = 1000``; the second size is drawn past them, at most twice as far (``mismatch``,
    as at the full size on a GPU)."""
    source = RED17.read_text().replace("BLOCK=4096", f"BLOCK={block}")
    assert f"BLOCK={block}" in source
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
    n = drawn(result.feedback)["n"]
    assert least < n <= 2 * least + 64, n


def test_a_grid_fitted_to_the_small_size_is_caught(judge):
    """Four programs of 256 for ``n = 1000``: a reach of 1.02, today's second size (past 1024) suffices."""
    result = judge(small_problem("01_vector_add"), (HERE / "grid_fitted_to_the_small_size.py").read_text(), config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert drawn(result.feedback)["n"] > 1024


def test_the_draw_is_not_in_the_runner(judge):
    """Nothing of the job's sizes (what was shrunk, the drawn problem, its reference) is among the
    runner's objects before the second size's trial (a candidate that finds one raises); the job
    carries no drawn size, and the pool draws none (the draw is the judge's, from the operating
    system's randomness)."""
    source = (HERE / "looks_for_the_second_size.py").read_text()  # gc: past the static checks, to look
    result = judge(small_problem("01_vector_add"), source, config(static_checks=False))
    assert result.verdict is Verdict.OK and result.trials == 3, result.feedback
    job = evaluator.build_job(small_problem("01_vector_add"), "", config())
    assert job["shrunk"] == {"n": [16777216, 1000]} and not {k for k in job if "resized" in k}
    assert not hasattr(evaluator, "SECOND_SIZE_DRAW")
    assert type(second_size.SECOND_SIZE_DRAW).__name__ == "SystemRandom"


def test_the_reach_of_a_launch():
    """``races.reach``: an access counts for the tensor holding its lowest kept address, with its highest
    lane's; per tensor handed, the least past of views holding one access."""
    grid = races.GridAccesses("k")
    base, other = 1 << 20, 1 << 24
    lanes = base + 4 * np.arange(4096, dtype=np.uint64)
    grid.record(races.LOAD, (0, 0, 0), (1, 1, 1), lanes, lanes < base + 4000)  # 1000 floats kept of 4096
    assert grid.spans == {base: base + 4 * 4095}
    assert races.reach([grid], [(base, base + 4000, 4)]) == [pytest.approx(4.096)]
    assert races.reach([grid], [(other, other + 4000, 4), (base, base + 4000, 4)]) == [0.0, pytest.approx(4.096)]
    assert races.reach([grid], []) == []
    whole = (base, base + 40000, 4)  # a view holding the same access: the least past counts, for it alone
    assert races.reach([grid], [(base, base + 4000, 4), whole]) == [0.0, pytest.approx(16384 / 40000)]
    masked = races.GridAccesses("k")  # every lane masked: nothing to put under a tensor
    masked.record(races.STORE, (0, 0, 0), (1, 1, 1), lanes, np.zeros(4096, dtype=bool), np.zeros(4096))
    assert masked.spans == {} and races.reach([masked], [(base, base + 4000, 4)]) == [0.0]
    fitted = races.GridAccesses("k")  # cdiv(1000, 256) programs of 256: the last reaches 1024
    for pid in range(4):
        block = base + 4 * (256 * pid + np.arange(256, dtype=np.uint64))
        fitted.record(races.LOAD, (pid, 0, 0), (4, 1, 1), block, block < base + 4000)
    assert races.reach([fitted], [(base, base + 4000, 4)]) == [pytest.approx(1.024)]


def test_a_cover_grows_the_inputs_past_it_within_the_bounds():
    """``second_sizes``' ``cover``: at most ``SECOND_SIZE_COVER_FREE`` the draw is today's; above it the
    inputs hold more than ``cover`` times their small elements, at most twice that, the batch left at
    its small value where the other constants reach it; never above the full size, nor past
    ``SECOND_SIZE_COVER_MAX`` times the small inputs."""
    import random

    add = small_problem("01_vector_add")
    for cover in (0.0, 1.5, 2.0):
        assert second_sizes(add.source, add.shrunk, cover=cover) == second_sizes(add.source, add.shrunk)
    draw = random.Random(24)
    for cover in (2.048, 4.096, 65.536):
        values = {second_sizes(add.source, add.shrunk, draw=draw, cover=cover)["n"] for _ in range(20)}
        assert all(cover * 1000 < n <= 2 * cover * 1000 for n in values), (cover, values)
        assert len(values) > 5 and all(n in second_values(16777216, 1000, 1000) for n in values)
    for cover in (SECOND_SIZE_COVER_MAX / 2, 1e9):  # past half the bound, at the bound
        n = second_sizes(add.source, add.shrunk, draw=draw, cover=cover)["n"]
        assert SECOND_SIZE_COVER_MAX / 2 * 1000 < n <= SECOND_SIZE_COVER_MAX * 1000, n
    softmax = small_problem("04_softmax")  # batch 8, dim 100: the dim grows alone
    for _ in range(10):
        sizes = second_sizes(softmax.source, softmax.shrunk, draw=draw, cover=4.5)
        assert "batch_size" not in sizes and 450 < sizes["dim"] <= 900, sizes
    small = find_problem("04_softmax").small(budget=64)  # a full size the cover passes: at most the full size
    sizes = second_sizes(small.source, small.shrunk, draw=draw, cover=1e6)
    assert all(sizes[name] <= full for name, (full, _) in small.shrunk.items() if name in sizes), sizes


def test_what_the_runner_tells_of_its_reach_and_what_the_judge_draws_from_it():
    """``second_size.reaches``: the runner's word taken where well formed (a role, an index, a finite float
    reach) and above ``SECOND_SIZE_COVER_FREE``; ``merged`` keeps each tensor's largest; ``sized_by`` finds
    the constants that size a tensor; ``uncovered`` tells how far a drawn size falls short of a reach."""
    told = [["output", 0, 4.5], ["input", 1, 1.5], ["input", 0, float("nan")], ["gpu", 0, 9.0], ["output", "0", 9.0],
            ["other", -1, 300.0], ["input", 0, 9], "x", ["input", 0]]  # fmt: skip
    assert second_size.reaches(told) == [("output", 0, 4.5), ("other", -1, 300.0)]
    assert second_size.reaches({"output": 4.5}) == [] and second_size.reaches(None) == []
    both = second_size.merged([("output", 0, 6.0), ("input", 0, 3.0)], told)
    assert sorted(both) == [("input", 0, 3.0), ("other", -1, 300.0), ("output", 0, 6.0)]
    row_sum = small_problem("03_row_sum")
    shrunk = {name: list(pair) for name, pair in row_sum.shrunk.items()}
    assert second_size.sized_by([8], shrunk) == {"batch_size"} and second_size.sized_by([8, 300], shrunk) == {
        "batch_size",
        "dim",
    }
    from tritongym.evaluate.judge.reference import Trial

    trial = Trial([torch.zeros(2048, 300)], torch.zeros(2048), None, [torch.zeros(2048, 300)], None, "")
    shapes = {"input": [[8, 300]], "output": [[8]]}
    assert second_size.uncovered([("output", 0, 128.0)], shapes, trial) == 0.5  # 1024 of 2048 reached
    assert second_size.uncovered([("output", 0, 256.0)], shapes, trial) == 1.0  # every row: not covered
    assert second_size.uncovered([("other", -1, 900.0)], shapes, trial) == 0.0  # not one of forward's
    assert second_size.has_second_size(row_sum.source, shrunk) and not second_size.has_second_size(row_sum.source, {})
    assert second_size.drawn_problem(find_problem("03_row_sum").source, "Model", {}, 4.0) is None
    for _ in range(5):  # the output's rows grow (the batch), past 128 times its 8 rows
        problem = second_size.drawn_problem(row_sum.source, "Model", shrunk, 128.0, {"batch_size"})
        assert problem.sizes["batch_size"] > 1024 and problem.sizes["dim"] == 300, problem.size_notice


def test_a_cover_grows_what_sizes_every_tensor_reached_past():
    """``second_size.growing``: the constants common to the input and output tensors reached past (the
    batch, for an output of its rows and an input of its rows by ``dim``), else the most reached one's;
    none for an intermediate alone."""
    shrunk = {name: list(pair) for name, pair in small_problem("03_row_sum").shrunk.items()}
    shapes = {"input": [[8, 300]], "output": [[8]]}
    assert second_size.growing([("input", 0, 128.0), ("output", 0, 128.0)], shapes, shrunk) == {"batch_size"}
    assert second_size.growing([("input", 0, 3.0)], shapes, shrunk) == {"batch_size", "dim"}
    assert second_size.growing([("other", -1, 256.0)], shapes, shrunk) == set()
    assert second_size.growing([("output", 5, 9.0)], shapes, shrunk) == set()  # no such tensor


def test_rows_in_one_block_meet_a_batch_past_them(judge):
    """One program of 1024 rows over 03_row_sum (8 rows at the small size; 16 at today's second size):
    its lanes reach 128 times the output and the input; the batch alone grows, past 1024 (``mismatch``,
    as at the full 4096 rows on a GPU)."""
    result = judge(small_problem("03_row_sum"), (HERE / "rows_in_one_block.py").read_text(), config())
    assert result.verdict is Verdict.MISMATCH, result.feedback
    sizes = drawn(result.feedback)
    assert sizes["batch_size"] > 1024 and "dim" not in sizes, sizes


def test_the_runners_memory_limit_follows_the_size_drawn(judge):
    """The second size is drawn once the runner runs: the judge raises its runner's limit for it (its
    watch, and the address-space limit through ``Build.memory_limit_bytes``); a candidate that reads
    the limit at each call sees it grown at the second size (it raises otherwise)."""
    source = (HERE / "reads_its_memory_limit.py").read_text()  # resource: past the static checks, to read
    result = judge(small_problem("01_vector_add"), source, config(static_checks=False))
    assert result.verdict is Verdict.OK and result.trials == 3, result.feedback
