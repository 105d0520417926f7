"""The judge's evidence against a runner's guard report (tritongym/evaluate/judge/evidence.py):
pure functions of the candidate's text and of plain numbers, with purpose-written inputs."""

from __future__ import annotations

import pytest

from helpers import CANDIDATES
from tritongym.evaluate.judge.evidence import (
    GPU_TIME_FACTOR,
    GPU_TIME_SLACK_MS,
    check_profile,
    implausible_gpu_time,
    no_kernel,
    no_own_kernel_profiled,
    source_kernels,
    unknown_own_kernels,
)
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.result import Verdict
from tritongym.problems import load_bundled

BODY = "    pass\n"

KERNEL_FORMS = {
    "decorated": ("import triton\n\n@triton.jit\ndef add(x):\n" + BODY, {"add"}),
    "with options": ("import triton\n\n@triton.jit(do_not_specialize=['n'])\ndef add(x, n):\n" + BODY, {"add"}),
    "autotuned": (
        "import triton\n\n@triton.autotune(configs=[], key=['n'])\n@triton.heuristics({})\n@triton.jit\n"
        "def matmul(a, n):\n" + BODY,
        {"matmul"},
    ),
    "bare jit": ("from triton import jit\n\n@jit\ndef add(x):\n" + BODY, {"add"}),
    "imported alias": ("from triton import jit as compile_kernel\n\n@compile_kernel\ndef add(x):\n" + BODY, {"add"}),
    "assigned alias": ("import triton\nK = triton.jit\nK2 = K\n\n@K2\ndef add(x):\n" + BODY, {"add"}),
    "called": ("import triton\n\ndef _add(x):\n" + BODY + "\nadd = triton.jit(_add)\n", {"_add"}),
    "mapped": (
        "import triton\n\ndef a(x):\n" + BODY + "\ndef b(x):\n" + BODY + "\nks = list(map(triton.jit, [a, b]))\n",
        {"a", "b"},
    ),
    "nested": (
        "import triton\n\nclass ModelNew:\n    def make(self):\n        @triton.jit\n        def inner(x):\n"
        "            pass\n        return inner\n",
        {"inner"},
    ),
    "inductor string": (
        "async_compile = None\ntriton_poi_0 = async_compile.triton('triton_poi_0', '''\nimport triton\n"
        "@triton_heuristics.pointwise(size_hints=[16])\n@triton.jit\ndef triton_poi_0(in_ptr0, xnumel):\n"
        "    pass\n''', device_str='cuda')\n",
        {"triton_poi_0"},
    ),
}


@pytest.mark.parametrize(("text", "kernels"), KERNEL_FORMS.values(), ids=list(KERNEL_FORMS))
def test_every_way_of_defining_a_triton_kernel_is_found(text, kernels):
    found = source_kernels(text)
    assert found.kernels == kernels
    assert kernels <= found.functions
    assert no_kernel(found) is None


NO_KERNEL = {
    "pytorch only": "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    "jit in a comment": "# @triton.jit would go here\ndef forward(x):\n    return x\n",
    "jit in prose": "NOTE = 'we would use jit here'\ndef forward(x):\n    return x\n",
    "string that is not code": "TEXT = '@triton.jit\\ndef broken(:'\ndef forward(x):\n    return x\n",
    "string nested too deeply": "TEXT = '@triton.jit\\ndef f():\\n    return " + "(" * 5000 + "'\n",
    "string with a NUL byte": "TEXT = '@triton.jit\\ndef f(): pass\\x00'\n",
    "undecorated helper": "import triton\n\ndef add(x):\n    return x\n",
}


@pytest.mark.parametrize("text", NO_KERNEL.values(), ids=list(NO_KERNEL))
def test_a_text_without_a_triton_kernel_is_refused_as_no_triton(text):
    failure = no_kernel(source_kernels(text))
    assert isinstance(failure, Failure) and failure.verdict is Verdict.HACK_NO_TRITON
    assert "defines no Triton kernel" in failure.feedback


def test_every_bundled_solution_and_test_candidate_with_a_kernel_is_accepted():
    for problem in load_bundled():
        assert source_kernels(problem.solution).kernels, problem.name
    inductor = source_kernels((CANDIDATES / "inductor_linear_relu.py").read_text())
    assert inductor.kernels == {"triton_poi_fused_addmm_relu_0"} and not inductor.names_computed


@pytest.mark.parametrize(
    ("text", "computed"),
    [
        ("import triton\n\n@triton.jit\ndef add(x):\n" + BODY + "\nexec('pass')\n", True),
        ("import triton\n\ndef add(x):\n" + BODY + "\nadd.__qualname__ = 'mm'\nk = triton.jit(add)\n", True),
        (
            "import triton, dataclasses\n\n@triton.jit\ndef add(x):\n" + BODY + "\nf = dataclasses.field(repr=False)\n",
            False,
        ),
        ("import triton\n\n@triton.jit\ndef add(x):\n" + BODY, False),
    ],
)
def test_names_a_text_may_compute_at_run_time_are_noticed(text, computed):
    assert source_kernels(text).names_computed is computed


FOUND = source_kernels("import triton\n\n@triton.jit\ndef bias_relu(x):\n" + BODY + "\ndef launch(x):\n" + BODY)
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cublas"


def row(name: str, own: bool, time_us: float = 10.0) -> dict:
    return {"name": name, "launches": 1, "time_us": time_us, "share": 0.5, "own": own}


def test_own_rows_must_be_named_after_a_function_of_the_text():
    honest = [row("bias_relu", True), row(GEMM, False)]
    assert unknown_own_kernels(FOUND, honest) == []
    assert unknown_own_kernels(FOUND, [row("launch", True)]) == []  # any function of the text may be jitted
    assert unknown_own_kernels(FOUND, [row("bias_relu", True), row(GEMM, True)]) == [GEMM]
    computed = source_kernels("import triton\n\n@triton.jit\ndef k(x):\n" + BODY + "\nk.fn.__name__ = 'x'\n")
    assert unknown_own_kernels(computed, [row(GEMM, True)]) == []
    options = source_kernels("import triton\n\nOPTIONS = {}\n\n@triton.jit(**OPTIONS)\ndef k(x):\n" + BODY)
    assert options.names_computed and no_kernel(options) is None


@pytest.mark.parametrize(
    "text",
    [
        "import triton\n\n@triton.jit(repr=lambda _: 'sm90_xmma_gemm')\ndef add(x):\n" + BODY,
        "import triton\n\ndef add(x):\n" + BODY + "\nk = triton.jit(add, repr=str)\n",
    ],
)
def test_a_kernel_renamed_by_repr_is_refused_before_it_runs(text):
    """repr= names the compiled kernel after whatever it returns: a cuBLAS kernel's name would pass the
    name evidence."""
    failure = no_kernel(source_kernels(text))
    assert failure is not None and failure.verdict is Verdict.HACK_FORBIDDEN_API and "repr=" in failure.feedback


def test_a_clipped_name_matches_the_function_it_was_clipped_from():
    long = "k" * 250
    found = source_kernels(f"import triton\n\n@triton.jit\ndef {long}(x):\n" + BODY)
    clipped = long[:197] + "..."
    assert unknown_own_kernels(found, [row(clipped, True)]) == []
    assert unknown_own_kernels(found, [row("j" * 197 + "...", True)]) == ["j" * 197 + "..."]
    assert unknown_own_kernels(FOUND, [row("bias_re...", True)]) == ["bias_re..."]  # too short to be clipped


def test_reported_gpu_time_is_bounded_by_the_judges_forward_time():
    forward_ms = 2.0
    bound_us = (GPU_TIME_FACTOR * forward_ms + GPU_TIME_SLACK_MS) * 1e3
    assert implausible_gpu_time([row("a", True, bound_us / 2), row("b", False, bound_us / 2)], forward_ms) == ""
    message = implausible_gpu_time([row("a", True, bound_us / 2), row("b", False, bound_us / 2 + 10)], forward_ms)
    assert "measured a forward at 2.000 ms" in message
    assert implausible_gpu_time([row("a", True, 1e9)], None) == ""  # not timed: nothing to compare with
    # an honest single forward a few times slower than the batched median (cold L2, the profiler) passes
    assert implausible_gpu_time([row("a", True, 3 * 0.010 * 1e3)], 0.010) == ""


def test_a_profile_without_any_own_kernel_contradicts_the_trials():
    assert no_own_kernel_profiled([row("softmax_warp_forward", False)], 0.0)
    assert not no_own_kernel_profiled([row("softmax_warp_forward", False)], 0.02)  # an own row clipped away
    assert not no_own_kernel_profiled([row("k", True), row("gemm", False)], 0.0)
    assert not no_own_kernel_profiled([], None)  # nothing ran on the GPU or the profiler saw nothing


def measured(rows: list[dict], coverage: float | None, candidate_ms: float | None = 1.0) -> dict:
    result = {"coverage": coverage, "kernels": rows}
    if candidate_ms is not None:
        result |= {"speedup": 1.0, "timing": {"candidate_ms": candidate_ms}}
    return result


def test_an_honest_profile_passes():
    check_profile(FOUND, measured([row("bias_relu", True, 200.0), row(GEMM, False, 800.0)], 0.2))
    check_profile(FOUND, measured([row("bias_relu", True, 5.0)], 1.0, candidate_ms=None))
    check_profile(FOUND, {"speedup": 1.0, "timing": {"candidate_ms": 0.001}})  # profiling switched off


@pytest.mark.parametrize(
    ("profile", "verdict", "phrase"),
    [
        (measured([row("bias_relu", True), row(GEMM, True, 800.0)], 1.0), Verdict.HACK_TAMPERING,
         "does not define as its own"),
        (measured([row("bias_relu", True, 50_000.0)], 1.0, candidate_ms=1.0), Verdict.HACK_TAMPERING,
         "cannot be right"),
        (measured([row("softmax_warp_forward", False)], 0.0), Verdict.HACK_NO_TRITON, "ran none of them on the GPU"),
    ],
    ids=["cublas-claimed-as-own", "inflated-durations", "no-own-kernel"],
)  # fmt: skip
def test_a_forged_profile_gets_its_verdict(profile, verdict, phrase):
    with pytest.raises(Failure) as caught:
        check_profile(FOUND, profile)
    assert caught.value.verdict is verdict and phrase in caught.value.feedback
