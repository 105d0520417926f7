"""The twentieth red team's breaks (tests/adversarial/redteam20/README.md). Each test asserts the right
verdict. The timed check runs only on a GPU: its rules are asserted here on the CPU, through
``speed.check_batch`` on outputs as a timed batch holds them, with the bounds the trials left."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tritongym.evaluate import timing
from tritongym.evaluate.compare import Tolerance, compare_outputs
from tritongym.evaluate.judge import speed
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.result import Verdict

INF, NAN = float("inf"), float("nan")


def _verdict(expected: list[list], got: list, bounds: list | None):
    try:
        speed.check_batch(expected, got, 1, bounds)
    except Failure as failure:
        return failure.verdict
    return Verdict.OK


@pytest.mark.parametrize("bound", [INF, 1e-3], ids=["unbounded", "bounded"])
@pytest.mark.parametrize("wrong", [-INF, NAN], ids=["other-infinity", "nan"])
def test_a_timed_output_off_where_the_reference_is_infinite_is_a_mismatch(bound, wrong):
    """#1: where the reference's timed output is an infinity, the other infinity passed the loose bound
    (``inf <= inf``; NaN, the control, did not): ``ok`` under a trial's infinite bound (an output whose float64 result
    was all zeros or non-finite), ``precision`` ("computed at a lower precision") under a finite one.
    The trials call it a mismatch (compare._nonfinite)."""
    expected = [[torch.tensor([INF, 1.0, -2.0])], [torch.tensor([3.0, -INF, 0.5])]]
    got = [torch.stack([c[0] for c in expected]).clone()]
    assert _verdict(expected, got, [bound]) is Verdict.OK
    got[0][0, 0] = wrong
    assert _verdict(expected, got, [bound]) is Verdict.MISMATCH


def test_a_finite_answer_where_pytorch_overflowed_passes_the_timed_check_as_the_trials():
    """#1's honest side: fp16 sums of squares past 65504 scaled down are finite in float64 (128) and inf
    in PyTorch; a kernel accumulating in fp32 gives 128, which the trials accept (judged against float64),
    and the timed check (PyTorch's inf alone) called ``precision``."""
    x = torch.cat([torch.full((2, 512), 0.5), torch.full((2, 512), 16.0)]).half()
    expected = (x * x).sum(dim=1) / 1024
    expected64 = (x.double() ** 2).sum(dim=1) / 1024
    honest = ((x.float() ** 2).sum(dim=1) / 1024).half()
    assert torch.isinf(expected[2:]).all() and torch.isfinite(honest).all()
    trial = compare_outputs(honest, expected, expected64, Tolerance())
    assert trial.ok, trial.message
    assert _verdict([[expected]], [honest[None]], trial.bounds) is Verdict.OK
    off = honest.clone()
    off[0] = 0.5  # a finite element the reference has finite is still judged
    assert _verdict([[expected]], [off[None]], trial.bounds) is Verdict.MISMATCH


class MutatingBench:
    """A timed repetition's steps, for a reference that doubles its input in place (``Bench.mutates``):
    ``candidate`` is what the candidate's batch leaves in the input slot (per call); its outputs are right."""

    def __init__(self, candidate: torch.Tensor):
        self.sets = [[torch.tensor([1.0, 2.0])], [torch.tensor([3.0, -4.0])]]
        self.candidate, self.mutates, self.check_s, self.inputs_after = candidate, True, 0.0, None
        self.state = SimpleNamespace(timed_bounds=[None])
        self.shared_in: list = []
        self.bracket = speed.Bracket(1e-3, 80e-6, 20e-6)

    def fresh_inputs(self):
        return self.sets

    def reference_batch(self, model, sets):
        given = [[t.clone() for t in args] for args in sets]
        outputs = [[args[0].mul_(2).sum(0, keepdim=True)] for args in given]
        self.inputs_after = given
        return self.bracket, outputs

    def candidate_batch(self, sets):
        self.shared_in = [self.candidate.clone()]
        return self.bracket, [torch.stack([(2 * args[0]).sum(0, keepdim=True) for args in sets])]

    def company_check(self):
        return 300e-6

    def empty_batch(self):
        return self.bracket

    def remote_empty_batch(self, sets):
        self.shared_in = [torch.stack([args[0] for args in sets])]  # the sets copied in again
        return self.bracket, 300e-6, True

    def runner_hand_off(self, sets):
        return 310e-6


def test_a_timed_batch_that_leaves_an_input_change_undone_is_a_mismatch():
    """#3: where the reference changes an input in place, the trials compare the inputs after forward; a
    timed batch compared the outputs alone, so a solution that told timed calls apart could skip the
    change there (right outputs, inputs as given: ``ok``). The input slots after the candidate's batch
    are checked against the reference's inputs after its forwards (``speed.check_inputs_after``)."""
    honest = MutatingBench(torch.tensor([[2.0, 4.0], [6.0, -8.0]]))
    assert speed.repetition(honest, None, 1, True, timing.Clean()) is not None
    assert speed.repetition(honest, None, 1, False, timing.Clean()) is not None
    skipped = MutatingBench(torch.tensor([[1.0, 2.0], [3.0, -4.0]]))
    with pytest.raises(Failure, match="elements of input 0 after forward") as raised:
        speed.repetition(skipped, None, 2, True, timing.Clean())
    assert raised.value.verdict is Verdict.MISMATCH


def test_a_complex_timed_output_follows_the_same_rule_for_non_finite_elements():
    """#1 for a complex output: an element with an infinite part in the reference passes only with the
    same value or a finite one."""
    expected = [[torch.tensor([complex(INF, 0.0), complex(1.0, 2.0)])]]
    got = [torch.stack([c[0] for c in expected]).clone()]
    assert _verdict(expected, got, [INF]) is Verdict.OK
    got[0][0, 0] = complex(3.0, 0.0)  # finite where the reference overflowed
    assert _verdict(expected, got, [INF]) is Verdict.OK
    got[0][0, 0] = complex(-INF, 0.0)
    assert _verdict(expected, got, [INF]) is Verdict.MISMATCH
    got[0][0, 0] = complex(INF, 0.0)
    got[0][0, 1] = complex(1.0, 3.0)  # a finite element off
    assert _verdict(expected, got, [INF]) is Verdict.MISMATCH


def test_a_complex_timed_output_with_its_imaginary_part_wrong_is_a_mismatch():
    """#4: the timed check upcast a complex output with ``double()``, which keeps the real part alone: a
    solution whose timed calls left the imaginary part undone (zeros) was ``ok`` (the trials compare
    both parts: ``view_as_real``). Upcast to ``complex128``."""
    gen = torch.Generator().manual_seed(4)
    expected = [[torch.complex(torch.randn(64, generator=gen), torch.randn(64, generator=gen))] for _ in range(3)]
    got = [torch.stack([c[0] for c in expected]).clone()]
    assert _verdict(expected, got, [1e-6]) is Verdict.OK
    got[0].imag.zero_()
    assert _verdict(expected, got, [None]) is Verdict.MISMATCH
    assert _verdict(expected, got, [1e-6]) is Verdict.MISMATCH
