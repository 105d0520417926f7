"""The twenty-second red team's closings (tests/adversarial/redteam22/README.md): red team 19's open
items at their root. The candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "redteam22"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def test_glue_answer_through_a_pointer_table_of_more_than_64_is_seen(judge):
    """Red team 19 #14 past ``TABLES``' 64 elements: the answer's address the 65th of a table. The CPU looks
    at what the grid read outside what it was handed (``FirstHanded._reached``)."""
    result = judge(small_problem("11_roll"), (HERE / "answer_through_a_long_pointer_table.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


class Grid:
    """A grid's record as ``races.GridAccesses.read`` gives it."""

    def __init__(self, *tensors: torch.Tensor) -> None:
        self.addresses = np.unique(
            np.concatenate([t.data_ptr() + np.arange(t.numel(), dtype=np.uint64) * t.element_size() for t in tensors])
        )

    def read(self) -> np.ndarray:
        return self.addresses


def test_memory_a_launch_read_but_was_not_handed_is_looked_at():
    """``FirstHanded._reached``: bytes a grid read outside every extent it was handed are sampled as a handed
    tensor's, from the first read on (the answer in a workspace at an offset too); reads inside what it
    was handed (a slice's storage around it is not: ``unhanded``) add nothing; a launch whose reads were
    the kernels' work is not looked at."""
    from tritongym.evaluate.judge.handed import FirstHanded, stepped_sample, unhanded

    answer, x = torch.randn(6, 40), torch.randn(6, 40)
    flat, step = answer.reshape(-1), stepped_sample(answer.numel())

    def looked(grid_of) -> int:
        handed = FirstHanded([[answer.numel(), "torch.float32"]], [x])
        workspace = torch.cat((torch.randn(100), answer.reshape(-1), torch.randn(50)))  # glue, at an offset
        out = torch.zeros_like(answer)  # not ``empty``: a freed output's memory holds the answer
        after = handed.see((x, out), {})
        out.copy_(answer)
        after([grid_of(workspace, out)])
        return sum(torch.equal(s, flat[start::step]) for _, (start, s), _ in handed.copies())

    assert looked(lambda workspace, out: Grid(x, workspace[100:340])) == 1
    assert looked(lambda workspace, out: Grid(x)) == 0
    assert looked(lambda workspace, out: Grid(x, out)) == 0
    spans = [(100, 200), (150, 300), (400, 500)]
    read = np.array([99, 100, 299, 300, 399, 400, 499, 500], dtype=np.uint64)
    assert unhanded(read, spans).tolist() == [99, 300, 399, 500]
    assert unhanded(read, []).tolist() == read.tolist()
