"""The eighteenth red team's breaks (tests/adversarial/redteam18/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import torch

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict

HERE = Path(__file__).parent / "redteam18"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def test_glue_answer_spanned_by_a_strided_move_is_seen(judge):
    """#1: glue's answer made the kernels' work by copying a kernel's two elements into its first and
    last elements through a strided view (``ok`` under ``forbid``: ``moved`` recorded the view's whole
    extent). A record is made of the view's dense runs (``handed.runs``)."""
    result = judge(small_problem("11_roll"), (HERE / "strided_view_spans_glue.py").read_text(), config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_glue_answer_spanned_by_a_strided_view_handed_to_a_launch_is_seen(judge):
    """#1b: glue's answer inside a padded buffer made the kernels' work by handing a do-nothing kernel a
    two-element view of the padding (its extent spans the answer, and no output-sized region at its
    ends is the answer's; ``ok`` under ``forbid``: the launch's record spanned the view's extent). A
    record is made of the view's dense runs (``handed.runs``)."""
    source = (HERE / "strided_view_handed_to_a_launch.py").read_text()
    result = judge(small_problem("11_roll"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "already held the correct output" in result.feedback


def test_a_record_is_made_of_the_dense_runs_a_view_addresses():
    """#1's rule (``handed.runs``): one run where a tensor is dense in any order, a run per row of a column
    slice, the two elements of a strided two-element view (not the bytes between), none past ``RUNS``
    (recorded nowhere: looked at when handed)."""
    from tritongym.evaluate.judge.handed import RUNS, runs

    b = torch.zeros(6, 10)
    assert runs(b) == runs(b.t()) == [(0, 240)]
    assert runs(b[1:3]) == [(40, 120)]
    assert runs(b[:, 2:5]) == [(8 + 40 * row, 20 + 40 * row) for row in range(6)]
    assert runs(b.view(-1)[::59]) == [(0, 4), (236, 240)]
    assert runs(torch.zeros(3).expand(4, 3)) == [(0, 12)]
    assert runs(torch.zeros(RUNS + 1, 2)[:, 0]) == []


def _launch(handed, *tensors, write=None):
    after = handed.see(tensors, {})
    if write is not None:
        write()
    after()


def test_a_view_of_more_runs_is_recorded_where_the_kernels_work_covers_it():
    """#1's rule past ``RUNS`` (``FirstHanded._spans``): a kernel working in place on a column slice of
    more rows than ``RUNS`` of what a kernel left keeps it the kernels' work (the bytes between its runs
    were); the same slice of glue's answer, handed to a kernel that does nothing, leaves it glue's."""
    from tritongym.evaluate.guards import OpRecorder
    from tritongym.evaluate.judge.handed import RUNS, FirstHanded, stepped_sample

    x = torch.randn(RUNS + 1, 80)
    answer = torch.cat((x[:, 75:], x[:, :75]), dim=1)
    flat = answer.reshape(-1)
    step = stepped_sample(flat.numel())

    def looked(route):
        handed = FirstHanded([[x.numel(), "torch.float32"]], [x])
        with OpRecorder(poison_empty=True, moved=handed.moved):
            out = torch.empty_like(x)
            if route == "kernels":
                buf = torch.empty_like(x)

                def first(buf=buf):
                    buf.copy_(answer)
                    buf[:, :40] = 0

                _launch(handed, x, buf, write=first)
                _launch(handed, x, buf[:, :40], write=lambda buf=buf: buf[:, :40].copy_(answer[:, :40]))
            else:
                buf = answer.clone()
                _launch(handed, buf[:, :40])
            _launch(handed, buf, out, write=lambda buf=buf, out=out: out.copy_(buf))
        copies = [pair for _, pair, _ in handed.copies()]
        return sum(s.dtype == flat.dtype and torch.equal(s, flat[start::step]) for start, s in copies)

    assert looked("kernels") == 0
    assert looked("glue") >= 1
