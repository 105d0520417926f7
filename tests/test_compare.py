"""The comparison policies on hand-built outputs."""

import pytest
import torch

from tritongym.evaluate.compare import Tolerance, compare_outputs
from tritongym.evaluate.result import Verdict

F64 = Tolerance()
FIXED = Tolerance(policy="fixed")


def _reference(fn, *inputs):
    return fn(*inputs), fn(*(x.double() for x in inputs))


def test_float32_kernel_with_other_rounding_passes():
    x = torch.randn(64, 512)
    expected, expected64 = _reference(lambda t: t.sum(dim=1), x)
    got = torch.zeros(64)
    for chunk in x.split(7, dim=1):  # another summation order
        got += chunk.sum(dim=1)
    assert compare_outputs(got, expected, expected64, F64).ok


def test_bf16_arithmetic_on_a_float32_problem_is_precision():
    x = torch.randn(64, 512)
    expected, expected64 = _reference(lambda t: t.sum(dim=1) / 512, x)
    got = (x.bfloat16().sum(dim=1) / 512).float()
    result = compare_outputs(got, expected, expected64, F64)
    assert result.verdict is Verdict.PRECISION
    assert "input_precision='ieee'" in result.message
    assert result.stats.reference_error < result.stats.max_abs_error


def test_a_reduction_adding_its_partials_one_at_a_time_is_precision_and_told_how_to_reduce():
    """An fp32 sum of 4096 equal partials added one after another (an atomic_add per element, in launch
    order) has its rounding errors all of one sign: 3.9e-5 of the sum, 260x PyTorch's tree and over the
    bar (docs/environment.md, "Long reductions"); the message says to reduce within each program first."""
    x = torch.full((4096,), 0.1)
    expected, expected64 = _reference(lambda t: t.sum(), x)
    got = torch.zeros((), dtype=torch.float32)
    for value in x:
        got += value
    result = compare_outputs(got, expected, expected64, F64)
    assert result.verdict is Verdict.PRECISION, result.message
    assert "reduce within each program first" in result.message
    blocked = torch.zeros((), dtype=torch.float32)
    for block in x.split(256):  # each program's own sum first: 16 partials
        blocked += block.sum()
    assert compare_outputs(blocked, expected, expected64, F64).ok


def test_wrong_values_are_mismatch_with_the_worst_element():
    x = torch.randn(4, 5)
    expected, expected64 = _reference(torch.relu, x)
    got = expected.clone()
    got[2, 3] += 5.0
    result = compare_outputs(got, expected, expected64, F64)
    assert result.verdict is Verdict.MISMATCH
    assert result.stats.worst_index == [2, 3] and result.stats.mismatched == 1
    assert "at index (2, 3)" in result.message and "1 of 20 elements" in result.message


def test_half_precision_problem_tolerates_half_precision_error():
    x = torch.randn(32, 64, dtype=torch.float16)
    expected, expected64 = _reference(lambda t: torch.softmax(t, dim=1), x)
    got = torch.softmax(x.float(), dim=1).half()  # more accurate than torch's half result
    assert compare_outputs(got, expected, expected64, F64).ok


def test_nan_where_reference_is_finite_fails_and_matching_nan_passes():
    expected = torch.tensor([1.0, float("nan"), float("inf")])
    good = expected.clone()
    assert compare_outputs(good, expected, expected.double(), F64).ok
    bad = torch.tensor([float("nan"), float("nan"), float("inf")])
    result = compare_outputs(bad, expected, expected.double(), F64)
    assert result.verdict is Verdict.MISMATCH and "got nan at index (0)" in result.message
    wrong_inf = torch.tensor([1.0, float("nan"), -float("inf")])
    assert compare_outputs(wrong_inf, expected, expected.double(), F64).verdict is Verdict.MISMATCH


def _wide_softmax():
    x = torch.randn(4, 1 << 16, generator=torch.Generator().manual_seed(0)) / 2
    return x, *_reference(lambda t: torch.softmax(t, dim=1), x)


def test_fp32_softmax_over_wide_rows_rounded_to_bf16_is_precision():
    # Outputs of ~1e-5: bf16's ~0.4% error is below 1e-6, the absolute floor this replaced.
    _, expected, expected64 = _wide_softmax()
    got = expected.bfloat16().float()
    result = compare_outputs(got, expected, expected64, F64)
    assert result.verdict is Verdict.PRECISION, result.message
    assert result.stats.max_abs_error < 1e-6 and result.stats.max_rel_error > 1e-3
    assert result.stats.allowed_abs_error < result.stats.max_abs_error / 100


def test_fp32_softmax_over_wide_rows_computed_honestly_is_ok():
    x, expected, expected64 = _wide_softmax()
    e = torch.exp(x - x.max(dim=1, keepdim=True).values)
    total = torch.zeros(x.shape[0], 1)
    for block in e.split(1000, dim=1):  # blocked accumulation, as a Triton kernel would
        total += block.sum(dim=1, keepdim=True)
    got = e / total
    assert compare_outputs(got, expected, expected64, F64).ok


@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e9])
def test_verdicts_do_not_depend_on_the_outputs_scale(scale):
    x = torch.randn(64, 512, generator=torch.Generator().manual_seed(1))
    expected, expected64 = _reference(lambda t: t.sum(dim=1) * scale, x)
    other_order = torch.zeros(64)
    for chunk in x.split(7, dim=1):
        other_order += chunk.sum(dim=1)
    assert compare_outputs(other_order * scale, expected, expected64, F64).ok
    bf16 = x.bfloat16().sum(dim=1).float() * scale
    assert compare_outputs(bf16, expected, expected64, F64).verdict is Verdict.PRECISION
    assert compare_outputs(expected * 3, expected, expected64, F64).verdict is Verdict.MISMATCH


def test_tiny_outputs_three_times_too_large_are_a_mismatch():
    expected = torch.full((10,), 1e-9)
    result = compare_outputs(torch.full((10,), 3e-9), expected, expected.double(), F64)
    assert result.verdict is Verdict.MISMATCH


def test_all_zero_outputs_allow_flushed_denormals_and_nothing_more():
    expected = torch.zeros(4, 8)
    assert compare_outputs(torch.zeros(4, 8), expected, expected.double(), F64).ok
    denormal = torch.full((4, 8), torch.finfo(torch.float32).tiny / 4)
    assert compare_outputs(denormal, expected, expected.double(), F64).ok
    result = compare_outputs(torch.full((4, 8), 1e-12), expected, expected.double(), F64)
    assert result.verdict is Verdict.MISMATCH and result.stats.mismatched == 32


def test_zeros_in_an_output_of_ordinary_scale_use_the_floor():
    expected = torch.tensor([1.0, 0.0, -2.0, 0.0])
    got = torch.tensor([1.0, 1e-6, -2.0, -1e-6])
    assert compare_outputs(got, expected, expected.double(), F64).ok


@pytest.mark.parametrize(
    ("got", "verdict", "phrase"),
    [
        (torch.zeros(3, 4), Verdict.WRONG_SHAPE, "shape (3, 4) differs from the expected (4, 3)"),
        (torch.zeros(4, 3, dtype=torch.float64), Verdict.WRONG_DTYPE, "dtype torch.float64"),
        ((torch.zeros(4, 3),), Verdict.WRONG_SHAPE, "expected a torch.Tensor, got tuple of 1"),
        ([1.0], Verdict.WRONG_SHAPE, "expected a torch.Tensor, got list"),
    ],
)
def test_structure_errors(got, verdict, phrase):
    expected = torch.zeros(4, 3)
    result = compare_outputs(got, expected, expected.double(), F64)
    assert result.verdict is verdict and phrase in result.message


def test_tuple_outputs_are_compared_leaf_by_leaf():
    a, b = torch.randn(3), torch.randn(5)
    expected = (a, b)
    expected64 = (a.double(), b.double())
    assert compare_outputs((a.clone(), b.clone()), expected, expected64, F64).ok
    result = compare_outputs((a.clone(), b + 1), expected, expected64, F64)
    assert result.verdict is Verdict.MISMATCH and result.message.startswith("output[1]")
    result = compare_outputs((a.clone(),), expected, expected64, F64)
    assert result.verdict is Verdict.WRONG_SHAPE and "expected 2 values, got 1" in result.message


def test_integer_outputs_must_match_exactly():
    expected = torch.tensor([3, 1, 2])
    assert compare_outputs(expected.clone(), expected, expected, F64).ok
    result = compare_outputs(torch.tensor([3, 1, 0]), expected, expected, F64)
    assert result.verdict is Verdict.MISMATCH and "got 0 at index (2), expected 2" in result.message


def test_python_scalar_outputs():
    assert compare_outputs(2.0, 2.0, 2.0, F64).ok
    assert compare_outputs(2.5, 2.0, 2.0, F64).verdict is Verdict.MISMATCH
    assert compare_outputs(torch.tensor(2.0), 2.0, 2.0, F64).verdict is Verdict.WRONG_SHAPE


def test_fixed_policy_uses_kernelbench_tolerances_per_dtype():
    expected = torch.ones(100)
    assert compare_outputs(expected + 1e-5, expected, None, FIXED).ok
    assert compare_outputs(expected + 1e-3, expected, None, FIXED).verdict is Verdict.MISMATCH
    half = torch.ones(100, dtype=torch.float16)
    assert compare_outputs(half + 0.005, half, None, FIXED).ok
    assert compare_outputs(expected + 1e-3, expected, None, Tolerance("fixed", atol=1e-2, rtol=0)).ok


def test_subclass_outputs_are_refused():
    class Lazy(torch.Tensor):
        pass

    expected = torch.zeros(3)
    result = compare_outputs(expected.clone().as_subclass(Lazy), expected, expected.double(), F64)
    assert result.verdict is Verdict.WRONG_SHAPE and "expected a torch.Tensor, got tensor" in result.message


def _sums_of_squares(scale: float = 1.0):
    # Rows 0-1 are small; rows 2-3 sum to about 1.3e5 > 65504, fp16's largest value.
    x = torch.cat([torch.full((2, 512), 0.5), torch.full((2, 512), 16.0)]).half()
    return x, *_reference(lambda t: (t * t).sum(dim=1) * scale, x)


def test_where_pytorch_overflows_at_the_dtype_its_inf_is_accepted():
    x, expected, expected64 = _sums_of_squares()
    assert torch.isinf(expected[2:]).all() and torch.isfinite(expected64).all()
    got = (x.float() ** 2).sum(dim=1).half()  # fp32 accumulation still rounds 131072 to fp16's inf
    result = compare_outputs(got, expected, expected64, F64)
    assert result.ok and result.stats.overflowed == 2
    assert "2 elements overflowed in PyTorch at float16" in result.message


def test_where_pytorch_overflows_in_an_intermediate_the_float64_value_is_accepted():
    x, expected, expected64 = _sums_of_squares(scale=1 / 1024)  # 128: representable, PyTorch gives inf
    assert torch.isinf(expected[2:]).all()
    exact = ((x.float() ** 2).sum(dim=1) / 1024).half()
    assert compare_outputs(exact, expected, expected64, F64).ok
    assert compare_outputs(expected.clone(), expected, expected64, F64).ok  # PyTorch's own inf, too


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (float("nan"), "overflows to inf; either of those is accepted there"),
        (-float("inf"), "overflows to inf; either of those is accepted there"),
        (0.0, "2 elements overflowed in PyTorch at float16"),  # finite: judged against float64
        (100.0, "2 elements overflowed in PyTorch at float16"),
    ],
)
def test_where_pytorch_overflows_anything_else_is_a_mismatch(value, phrase):
    x, expected, expected64 = _sums_of_squares(scale=1 / 1024)
    got = ((x.float() ** 2).sum(dim=1) / 1024).half()
    got[2:] = value
    result = compare_outputs(got, expected, expected64, F64)
    assert result.verdict is Verdict.MISMATCH and phrase in result.message, result.message


def test_overflowed_elements_do_not_loosen_the_tolerance_of_the_others():
    x, expected, expected64 = _sums_of_squares(scale=1 / 1024)
    got = ((x.float() ** 2).sum(dim=1) / 1024).half()
    got[0] = 50.0  # not 0.125; PyTorch's inf there once made the allowed error infinite
    result = compare_outputs(got, expected, expected64, F64)
    assert result.verdict is Verdict.MISMATCH and result.stats.worst_index == [0]
    assert result.stats.reference_error == 0.0 and result.stats.allowed_abs_error < 5


def _chunked_cases():
    torch.manual_seed(0)
    x = torch.randn(6, 35)
    expected, expected64 = _reference(torch.tanh, x)
    wrong = expected.clone()
    wrong[4, 30] += 3.0
    wrong[1, 2] += 1.0
    nan = expected.clone()
    nan[5, 1] = nan[5, 20] = float("nan")
    h = torch.full((70,), 300.0, dtype=torch.float16)
    h_expected, h_expected64 = _reference(lambda t: t * t, h)  # overflows in fp16, finite in float64
    h_bad = h_expected.clone()
    h_bad[33] = float("-inf")
    ints = torch.arange(50)
    ints_bad = ints.clone()
    ints_bad[[17, 40]] = 0
    return {
        "ok": (expected + 1e-9, expected, expected64, F64),
        "precision": ((x.bfloat16().tanh()).float(), expected, expected64, F64),
        "mismatch": (wrong, expected, expected64, F64),
        "nan": (nan, expected, expected64, F64),
        "fixed-mismatch": (wrong, expected, expected64, FIXED),
        "fp16-overflow-ok": (h_expected.clone(), h_expected, h_expected64, F64),
        "fp16-overflow-wrong-inf": (h_bad, h_expected, h_expected64, F64),
        "integers": (ints_bad, ints, None, F64),
        "empty": (torch.empty(0, 3), torch.empty(0, 3), torch.empty(0, 3, dtype=torch.float64), F64),
    }


@pytest.mark.parametrize("case", list(_chunked_cases()))
def test_comparing_in_chunks_gives_the_whole_tensor_verdict_message_and_stats(case, monkeypatch):
    import tritongym.evaluate.compare as compare

    got, expected, expected64, tol = _chunked_cases()[case]
    whole = compare_outputs(got, expected, expected64, tol)
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 8)  # 210 elements: 27 chunks, the worst in a late one
    chunked = compare_outputs(got, expected, expected64, tol)
    assert (chunked.verdict, chunked.message) == (whole.verdict, whole.message)
    if whole.stats is not None:
        for name in ("max_abs_error", "max_rel_error", "allowed_abs_error", "got", "expected", "reference_error"):
            value = getattr(whole.stats, name)
            assert getattr(chunked.stats, name) == (value if value is None else pytest.approx(value, rel=1e-9)), name
        for name in ("worst_index", "mismatched", "numel", "overflowed"):
            assert getattr(chunked.stats, name) == getattr(whole.stats, name), name


def test_a_float64_reference_on_another_device_is_moved_a_chunk_at_a_time(monkeypatch):
    import tritongym.evaluate.compare as compare

    moved = []
    real_to = torch.Tensor.to

    def spy(self, *args, **kwargs):
        if self.dtype is torch.float64 and args and args[0] == torch.device("cpu"):
            moved.append(self.numel())
        return real_to(self, *args, **kwargs)

    x = torch.randn(100)
    expected, expected64 = _reference(torch.sin, x)
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 16)
    monkeypatch.setattr(torch.Tensor, "to", spy)
    assert compare_outputs(expected.clone(), expected, expected64, F64).ok
    assert moved and max(moved) <= 16  # never the whole float64 output at once
