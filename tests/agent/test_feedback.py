"""Feedback rendering: what the model reads is concise, bounded and scrubbed of secrets and paths."""

import json

import pytest

from tritongym.agent.feedback import FeedbackConfig, candidate_traceback, render_feedback, scrub
from tritongym.errors import ConfigError
from tritongym.evaluate.result import ErrorStats, EvalResult, Finding, KernelShare, TimingStats, Verdict

SANDBOX = "/tmp/tritongym-sandbox-k2j3/job-a81f/solution.py"
DETAIL = f"""Traceback (most recent call last):
  File "/home/alice/tritongym/tritongym/evaluate/harness.py", line 210, in run_trial
    out = model(*inputs)
  File "{SANDBOX}", line 21, in forward
    silu_kernel[grid](x, out, n, BLOCK=1024)
  File "/work/venv/lib/python3.12/site-packages/triton/runtime/interpreter.py", line 1200, in __call__
    return self.fn(*args)
  File "{SANDBOX}", line 11, in silu_kernel
    x = tl.lod(x_ptr + offsets, mask=mask)
AttributeError: module 'triton.language' has no attribute 'lod'
"""


def failed() -> EvalResult:
    return EvalResult(
        problem="02_silu",
        verdict=Verdict.RUNTIME_ERROR,
        feedback=f"AttributeError: module 'triton.language' has no attribute 'lod' in forward "
        f"(line 11: x = tl.lod(x_ptr + offsets, mask=mask)) [{SANDBOX}]",
        compiled=True,
        detail=DETAIL,
        stderr="nonce 0123456789abcdef0123456789abcdef; key sk-abcdefghijklmnopqrstuvwx",
        device="NVIDIA H200",
        versions={"torch": "2.13"},
        stage_seconds={"total": 1.0},
    )


def mismatch() -> EvalResult:
    return EvalResult(
        problem="04_softmax",
        verdict=Verdict.MISMATCH,
        feedback="Trial 1 of 5: values differ.",
        compiled=True,
        trials=5,
        trials_passed=0,
        errors=ErrorStats("output", 0.25, 0.5, 1e-5, [3, 7], 0.5, 0.25, 40, 800, 2e-7),
    )


def fast() -> EvalResult:
    timing = TimingStats("eager", 2.0, [1.9, 2.1], 1.0, [0.98, 1.02], [1.9, 2.1], 0.01, 100, "target", 5, 1 << 20)
    kernels = [KernelShare("silu_kernel", 1, 10.0, 0.9, True), KernelShare("aten::copy_", 1, 1.1, 0.1, False)]
    return EvalResult(
        problem="02_silu",
        verdict=Verdict.OK,
        feedback="Correct on all 5 trials.",
        compiled=True,
        correct=True,
        trials=5,
        trials_passed=5,
        speedup=2.0,
        timing=timing,
        coverage=0.9,
        kernels=kernels,
        findings=[Finding("torch_compute", "1 PyTorch compute op in forward: aten::add")],
    )


def test_scrub_paths_tokens_and_keys():
    text = scrub(f'File "{SANDBOX}" /home/bob/x.py ~/.cache/a /work/venv/lib/python3.12/site-packages/triton/a.py '
                 "Bearer abc.def sk-abcdefghijklmnopqrstuvwx deadbeefdeadbeefdeadbeef a/b x // 2")  # fmt: skip
    assert 'File "solution.py"' in text
    assert "/home" not in text and "~/" not in text and "bob" not in text
    assert "<lib>/triton/a.py" in text
    assert "deadbeef" not in text and "sk-" not in text and "abc.def" not in text
    assert "a/b x // 2" in text


def test_text_failure_shows_the_candidate_lines_only():
    text = render_feedback(failed())
    assert text.startswith("Verdict: runtime_error (compiled, not correct).")
    assert "solution.py line 21 in forward: silu_kernel[grid](x, out, n, BLOCK=1024)" in text
    assert "solution.py line 11 in silu_kernel: x = tl.lod(x_ptr + offsets, mask=mask)" in text
    assert "harness.py" not in text and "/tmp" not in text and "/home" not in text and "interpreter.py" not in text


def test_text_mismatch_has_the_numbers():
    text = render_feedback(mismatch())
    assert "0/5 trials passed" in text
    assert "max abs 0.25 (allowed 1e-05)" in text and "at [3,7] got 0.5, expected 0.25" in text
    assert "40 of 800 elements" in text and "PyTorch's own error at this dtype: 2e-07" in text


def test_text_correct_has_speedup_ci_coverage_and_findings():
    text = render_feedback(fast())
    assert "Speedup: 2x over eager (95% CI 1.9-2.1; 1000.0 us vs 2000.0 us)." in text
    assert "Coverage: 0.90 of GPU time in your Triton kernels (silu_kernel 90%, aten::copy_ 10% (not yours))." in text
    assert "Finding [torch_compute]: 1 PyTorch compute op" in text


def test_untimed_correct_says_so():
    result = EvalResult("01_vector_add", Verdict.OK, "Correct.", compiled=True, correct=True, trials=2, trials_passed=2)
    assert "Speedup: not measured" in render_feedback(result)


def test_an_untrusted_timing_says_why_there_is_no_speedup():
    result = EvalResult("p", Verdict.OK, "Correct.", compiled=True, correct=True)
    result.findings.append(Finding("timing_untrusted", "no speedup: the GPU had other work on it"))
    text = render_feedback(result)
    assert "Speedup: not measured; timing gave no speedup: the GPU had other work on it." in text
    assert "no GPU timing in this evaluation" not in text


def test_json_is_the_public_result():
    data = json.loads(render_feedback(failed(), FeedbackConfig(style="json", max_chars=100_000)))
    assert data["verdict"] == "runtime_error"
    assert "versions" not in data and "device" not in data and "stage_seconds" not in data
    dumped = json.dumps(data)
    assert "/tmp" not in dumped and "/home" not in dumped and "0123456789abcdef" not in dumped and "sk-" not in dumped
    assert "solution.py" in data["detail"]


@pytest.mark.parametrize("style", ["text", "json"])
def test_bounded_length(style):
    result = failed()
    result.detail = DETAIL + "x" * 20_000
    result.feedback = "y" * 5000
    rendered = render_feedback(result, FeedbackConfig(style=style, max_chars=600))
    assert len(rendered) <= 600
    if style == "json":
        assert json.loads(rendered)["verdict"] == "runtime_error"


def test_infrastructure_errors_are_not_blamed_on_the_code():
    result = EvalResult("x", Verdict.INFRASTRUCTURE_ERROR, "sandbox at /tmp/abc could not start")
    assert "no fault of your code" in render_feedback(result) and "/tmp" not in render_feedback(result)


def test_traceback_limit():
    lines = candidate_traceback(scrub(DETAIL), 2)
    assert lines == [
        "solution.py line 11 in silu_kernel: x = tl.lod(x_ptr + offsets, mask=mask)",
        "AttributeError: module 'triton.language' has no attribute 'lod'",
    ]


def test_bad_config():
    with pytest.raises(ConfigError, match="feedback style"):
        FeedbackConfig(style="xml")
    with pytest.raises(ConfigError, match="max_chars"):
        FeedbackConfig(max_chars=10)
