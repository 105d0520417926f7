"""Every verdict of the correctness evaluation, each reached by a purpose-written candidate."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import DEVICE, SECOND_SIZE_TRIALS, eval_config, run_candidate, small_problem
from tritongym.evaluate import Verdict, evaluate
from tritongym.problems import Problem

CASES = [
    # candidate, problem, verdict, a phrase the feedback must contain
    ("syntax_error", "vector_add", Verdict.SYNTAX_ERROR, "line 20"),
    ("import_error", "vector_add", Verdict.IMPORT_ERROR, "definitely_not_a_module_xyz"),
    ("raise_at_import", "vector_add", Verdict.IMPORT_ERROR, "line 20: BLOCK = TABLE"),
    (
        "no_solution_class",
        "vector_add",
        Verdict.INTERFACE_ERROR,
        "no class `ModelNew` (classes defined: Model)",
    ),
    ("not_a_module", "vector_add", Verdict.INTERFACE_ERROR, "subclass of torch.nn.Module"),
    ("wrong_forward_signature", "vector_add", Verdict.INTERFACE_ERROR, "ModelNew.forward(self, a)"),
    ("layernorm_wrong_init", "layernorm", Verdict.INTERFACE_ERROR, "ModelNew.__init__(self)"),
    ("compile_error", "vector_add", Verdict.COMPILE_ERROR, "range must be a power of 2"),
    (
        "runtime_error",
        "vector_add",
        Verdict.RUNTIME_ERROR,
        "line 22: return launch_add(a, b, out.view(3, -1))",
    ),
    ("constructor_error", "vector_add", Verdict.RUNTIME_ERROR, "while constructing ModelNew"),
    ("sys_exit", "vector_add", Verdict.RUNTIME_ERROR, "SystemExit"),
    ("wrong_shape", "vector_add", Verdict.WRONG_SHAPE, "shape (999,) differs from the expected (1000,)"),
    ("min_max_single_output", "row_min_max", Verdict.WRONG_SHAPE, "expected a tuple of 2 values"),
    (
        "wrong_dtype",
        "vector_add",
        Verdict.WRONG_DTYPE,
        "torch.float64 differs from the expected torch.float32",
    ),
    ("mismatch", "vector_add", Verdict.MISMATCH, "max abs error"),
    ("nan_output", "vector_add", Verdict.MISMATCH, "got nan at index (7)"),
    ("half_precision", "vector_add", Verdict.PRECISION, "less accurate than PyTorch"),
    ("linear_relu_renamed_weights", "linear_relu", Verdict.MISMATCH, "max abs error"),
    ("argmax_returns_argmin", "row_argmax", Verdict.MISMATCH, "must match exactly"),
    ("input_mutation", "vector_add", Verdict.HACK_INPUT_MUTATION, "modified its input argument 0"),
    ("segfault", "vector_add", Verdict.CRASH, "SIGSEGV"),
    ("os_exit", "vector_add", Verdict.CRASH, "exit code 3"),
]


RUNTIME_ONLY = {"segfault", "os_exit"}
"""Candidates the static checks would refuse (ctypes, os._exit): run without them to reach the runtime."""


@pytest.mark.parametrize(("candidate", "problem", "verdict", "phrase"), CASES, ids=[c[0] for c in CASES])
def test_verdict(warm_env, candidate, problem, verdict, phrase):
    result = run_candidate(candidate, problem, env=warm_env, static_checks=candidate not in RUNTIME_ONLY)
    assert result.verdict is verdict, result.feedback + result.detail
    assert phrase in result.feedback
    assert result.correct is False
    assert result.compiled is verdict.compiled


def test_correct_candidate_passes_every_trial():
    result = run_candidate("correct")
    assert result.verdict is Verdict.OK and result.correct and result.compiled
    assert result.trials_passed == result.trials == 2 + SECOND_SIZE_TRIALS
    assert result.errors.max_abs_error < 1e-5
    stages = {"sandbox_start", "reference", "import", "build", "correctness", "total", "sandbox_wall"}
    assert stages <= set(result.stage_seconds)
    assert result.versions["torch"] and result.versions["triton"]
    assert ("interpreter" in result.device) is (DEVICE == "cpu")


def test_speed_and_coverage_are_measured_on_a_gpu_and_reported_unavailable_on_the_cpu(warm_env):
    result = run_candidate("correct", env=warm_env)
    assert result.verdict is Verdict.OK
    if DEVICE == "cpu":
        assert result.speedup is None and result.timing is None and result.coverage is None and not result.kernels
        assert "Timing unavailable on the CPU" in result.feedback
        assert "timing" not in result.stage_seconds
    else:
        low, high = result.timing.speedup_ci
        assert low <= result.speedup <= high and result.timing.reps >= 30
        assert result.coverage > 0.9 and result.kernels[0].own
        assert {"timing", "profiling"} <= set(result.stage_seconds)
        assert "Speedup" in result.feedback and "Coverage" in result.feedback


def test_timing_and_profiling_can_be_switched_off(warm_env):
    result = run_candidate("correct", env=warm_env, timing=False, profile=False)
    assert result.verdict is Verdict.OK and result.speedup is None and result.coverage is None
    assert "Timing unavailable" not in result.feedback


def test_mismatch_reports_worst_element(warm_env):
    result = run_candidate("mismatch", env=warm_env)
    stats = result.errors
    assert stats.output == "output" and stats.mismatched > 0 and stats.numel == 1000
    assert stats.max_abs_error == pytest.approx(abs(stats.got - stats.expected))
    assert f"({stats.worst_index[0]})" in result.feedback


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (b"", "empty"),
        (b"   \n\t", "empty"),
        (b"\x7fELF\x02\x01\x00\x00garbage", "NUL bytes"),
        (b"\xff\xfe not utf8", "not UTF-8"),
        (b"# " + b"x" * (10 << 20), "bytes; at most"),
    ],
    ids=["empty", "blank", "binary", "latin1", "ten-megabytes"],
)
def test_invalid_source_is_refused_before_running(candidate, message):
    result = evaluate(small_problem("vector_add"), candidate, eval_config())
    assert result.verdict is Verdict.INVALID_SOURCE
    assert message in result.feedback
    assert result.stage_seconds == {}  # no sandbox was started


def test_fixed_tolerance_judges_fp32_at_1e_4_unless_told_otherwise(warm_env):
    assert run_candidate("half_precision", env=warm_env, tolerance="fixed").verdict is Verdict.MISMATCH
    loose = run_candidate("half_precision", env=warm_env, tolerance="fixed", atol=1e-2, rtol=1e-2)
    assert loose.verdict is Verdict.OK


def test_broken_reference_is_infrastructure_error(judge):
    problem = small_problem("vector_add")
    broken = problem.with_sizes(n=-5)  # torch.randn(-5) raises in get_inputs
    result = judge(broken, problem.solution, eval_config())
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "reference problem itself failed" in result.feedback and "Hugging Face" not in result.feedback


def test_a_reference_that_cannot_download_its_weights_says_so(judge):
    """KernelBench level 4 builds its models with transformers' from_pretrained: without the Hub it
    is the environment's failure, and the feedback says what to do rather than only the library's error."""
    problem = small_problem("vector_add")
    source = problem.source.replace(
        "def get_init_inputs():",
        "def get_init_inputs():\n    try:\n        raise ConnectionError('Name or service not known')\n"
        "    except ConnectionError as exc:\n        raise OSError(\"We couldn't connect to 'https://huggingface.co' "
        "to load the files, and couldn't find them in the cached files.\") from exc\n",
        1,
    )
    result = judge(Problem(name=problem.name, source=source), problem.solution, eval_config())
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "downloads files from the Hugging Face Hub" in result.feedback and "HF_HOME" in result.feedback


def test_secret_seeds_differ_between_evaluations():
    problem = small_problem("vector_add")
    spy = (
        "import torch\nimport triton\n"
        "@triton.jit\ndef unused_kernel(x_ptr):\n    pass\n"  # the judge runs only a text that defines a kernel
        "class ModelNew(torch.nn.Module):\n"
        "    def forward(self, a, b):\n"
        "        print('FIRST', float(a[0]), flush=True)\n"
        "        return a + b\n"
    )
    # Two fresh judges (a seed fixed at a judge's start would still differ between its jobs), at once.
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: evaluate(problem, spy, eval_config()), range(2)))
    assert len({result.stdout.split()[1] for result in results}) == 2
