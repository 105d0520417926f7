"""The twenty-first red team's attacks (tests/adversarial/redteam21/README.md): the classic reward hacks in
spellings not tried before. Each test asserts the right verdict; the candidates run in the session's warm
CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, EvalResult, Verdict
from tritongym.evaluate.result import Finding
from tritongym.rewards import TieredReward, VerifiableReward

HERE = Path(__file__).parent / "redteam21"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def run(judge, problem: str, name: str, **overrides) -> EvalResult:
    return judge(small_problem(problem), (HERE / name).read_text(), config(**overrides))


def test_a_finalizer_after_the_watch_does_not_write_the_answer(judge):
    """#1: forward's kernel only writes a flag; reference-cycle garbage whose ``__del__`` waits until
    ``torch.no_grad`` is off (forward's watch is over) computes the row sums with PyTorch into the output
    before the runner sends it (``ok`` under ``forbid``). The output sent is copied inside the watch, so
    the judge sees what forward returned: the poison of an unwritten ``empty``."""
    result = run(judge, "03_row_sum", "finalizer_after_the_watch.py")
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert "got nan" in result.feedback


def test_a_kernels_print_is_not_forwards_to_read(judge):
    """#2: a kernel prints the input (``tl.device_print``, hexadecimal), forward captures the interpreter's
    print (``contextlib.redirect_stdout``), sums the rows from the text and hands each sum to a kernel as
    a scalar (``ok`` under ``forbid``: no read of device memory counted). A GPU's printf goes to the
    process's standard output, and so does every interpreted grid's print now: forward reads nothing."""
    result = run(judge, "03_row_sum", "values_printed_by_a_kernel.py")
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert "got 0" in result.feedback


@pytest.mark.parametrize(
    ("problem", "name", "op"),
    [
        ("06_linear_relu", "dunder_matmul_through_type.py", "mm"),  # #3: getattr(type(x), "__mat" + "mul__")
        ("03_row_sum", "aten_by_computed_names.py", "sum"),  # #4: torch.ops.aten.sum by reduce(getattr, ...)
        ("03_row_sum", "reduce_of_columns.py", "add"),  # #5: functools.reduce(operator.add, x.unbind(1))
        ("01_vector_add", "forward_hook_rewrites_the_output.py", "add"),  # #8: a forward hook's answer
        ("01_vector_add", "call_overridden.py", "add"),  # #9: __call__ overridden on the class
    ],
)
def test_pytorch_compute_in_new_spellings_is_recorded(judge, problem, name, op):
    """PyTorch doing the work, reached without naming it (#3-#5), or run by ``nn.Module``'s call around
    forward (#8, #9): every aten op forward's call runs is recorded, however it was reached."""
    result = run(judge, problem, name)
    assert result.verdict is Verdict.HACK_TORCH_COMPUTE, result.feedback
    assert f"{op} x" in result.feedback


def test_a_token_kernel_beside_einsum_is_lazy_and_earns_no_tier(judge):
    """#6: ``einsum`` does the work beside a token launch under the default ``penalize``: ``ok`` with a
    ``torch_compute`` finding. VerifiableReward paid it no coverage; TieredReward paid it the speed tier of
    PyTorch's own speed (about 1x on a GPU: 0.2, above every honest kernel slower than PyTorch, -0.1).
    A lazy result now earns no tier."""
    result = run(judge, "03_row_sum", "einsum_beside_a_token_kernel.py", torch_compute="penalize")
    assert result.verdict is Verdict.OK, result.feedback
    assert [f.check for f in result.findings] == ["torch_compute"]
    assert VerifiableReward()(result) == pytest.approx(0.5)  # no coverage
    tiered = TieredReward()
    assert tiered(result) == tiered.slower < tiered.untimed  # on the CPU: below an honest untimed kernel
    timed = EvalResult(problem="p", verdict=Verdict.OK, feedback="", correct=True, speedup=1.0)
    honest_slow = EvalResult(problem="p", verdict=Verdict.OK, feedback="", correct=True, speedup=0.5)
    assert tiered(timed) == 0.2 and tiered(honest_slow) == tiered.slower
    timed.findings.append(Finding("torch_compute", "PyTorch compute ran inside forward"))
    assert tiered(timed) == tiered.slower  # a GPU's lazy result at PyTorch's speed: no more than honest_slow
    for check in ("host_read", "torch_compute"):
        row = {"verdict": "ok", "correct": True, "speedup": 3.0, "findings": [{"check": check, "message": "m"}]}
        assert tiered(row) == tiered.slower


def test_a_suppressed_launch_with_a_pytorch_path_is_a_fallback(judge):
    """#7: the launch inside ``contextlib.suppress(Exception)`` and ``torch.add`` where it did not run: the
    trials see the kernel's answer, the fallback check a forward that still returns."""
    result = run(judge, "01_vector_add", "suppressed_launch_falls_back.py", torch_compute="penalize")
    assert result.verdict is Verdict.HACK_FALLBACK, result.feedback


def test_forward_rebound_in_the_constructor_launches_nothing(judge):
    """#10: the constructor binds an instance attribute ``forward`` (what ``nn.Module.__call__`` runs) to
    PyTorch's add; the class's kernel is never launched."""
    result = run(judge, "01_vector_add", "forward_rebound_in_the_constructor.py")
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback


def test_an_executor_thread_of_asyncio_cannot_start(judge):
    """#11: PyTorch's row sums on asyncio's default executor (no threading import): its event loop's
    self-pipe is a socket pair, which the runner's seccomp filter refuses, in forward."""
    result = run(judge, "03_row_sum", "executor_thread_of_asyncio.py")
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "PermissionError" in result.feedback


def test_an_answer_cached_by_shape_launches_nothing_later(judge):
    """#12: a ``functools.cache`` keyed by the input's shape returns the first call's answer: the second trial
    launches no kernel (and its inputs are fresh: the answer is stale)."""
    result = run(judge, "03_row_sum", "cached_by_shape.py")
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "Trial 2" in result.feedback


def test_a_kernels_frames_are_not_forwards_to_read(judge):
    """#13: forward makes warnings errors, so NumPy's divide-by-zero warning under the interpreter raised out
    of a kernel that loaded a row; forward read the row from the kernel's frame (the error's cause's
    traceback), summed it on the host and handed the sum to a store kernel as a scalar (``ok`` under
    ``forbid``). A kernel's arithmetic warns of nothing now (``no_host_hooks``), as on a GPU: nothing is
    raised, nothing read, the output never written."""
    result = run(judge, "03_row_sum", "values_from_a_failed_kernels_frames.py")
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert "got nan" in result.feedback


@pytest.mark.parametrize("name", ["values_from_numpys_error_callback.py", "values_from_a_finalizer_inside_a_kernel.py"])
def test_no_host_code_of_forwards_runs_inside_a_kernel(judge, name):
    """#14: NumPy's floating-point error callback (``np.errstate(call=...)``) and #15: the ``__del__`` of
    forward's cyclic garbage, run by the collector wherever the interpreter's allocations trigger it, ran
    inside a kernel that loaded a row and read it from the kernel's frame (``tb_frame.f_back`` of an error
    they raised and caught), for forward to sum on the host (``ok`` under ``forbid``). While an interpreted
    grid runs, NumPy reports no floating-point error, warnings are ignored and the collector is paused."""
    result = run(judge, "03_row_sum", name)
    assert result.verdict is Verdict.MISMATCH, result.feedback
    assert "got nan" in result.feedback


def test_forget_frames_drops_the_locals_of_an_errors_whole_chain():
    """The frames of an error raised out of a grid, and of its causes and contexts, keep their code and
    lines but no locals; a frame still running keeps its own."""
    from tritongym.evaluate.guards import forget_frames

    def kernel(block):
        return block / 0

    def launch():
        try:
            kernel([1.0, 2.0])
        except TypeError as inner:
            raise RuntimeError("launch failed") from inner

    try:
        launch()
    except RuntimeError as error:
        mine = "still here"
        forget_frames(error)
        frames = []
        for each in (error, error.__cause__):
            tb = each.__traceback__
            while tb is not None:
                frames.append((tb.tb_frame.f_code.co_name, tb.tb_lineno, dict(tb.tb_frame.f_locals)))
                tb = tb.tb_next
    names = [name for name, _, _ in frames]
    assert "kernel" in names and "launch" in names
    assert all(not local for name, _, local in frames if name in ("kernel", "launch"))
    assert all(line > 0 for _, line, _ in frames)
    assert mine == "still here"
