"""The fifteenth red team's breaks (tests/adversarial/redteam15/README.md). Each test asserts the right
verdict; the candidates run in the session's warm CPU sandbox (Triton's interpreter)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import triton
import triton.language as tl

from helpers import small_problem
from tritongym.evaluate import EvalConfig, Verdict, frontend
from tritongym.evaluate.placement import OwnCode

HERE = Path(__file__).parent / "redteam15"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


@pytest.mark.parametrize("route", ["global", "constexpr"])
def test_a_function_forged_as_tritons_that_a_kernel_calls_is_host_code(judge, route):
    """#3: a plain function a kernel calls (through a global, or handed as a ``tl.constexpr``) must be a
    library's, told by its code's file name and its globals: a code object renamed after Triton's file
    in a function built over a Triton module's namespace passed, and under the interpreter computed the
    softmax with NumPy (``ok`` under ``forbid``). It is told now by its code object's identity."""
    source = (HERE / "forged_library_function.py").read_text().replace('ROUTE = "global"', f'ROUTE = "{route}"')
    result = judge(small_problem("04_softmax"), source, config())
    assert result.verdict is Verdict.HACK_NO_TRITON, result.feedback
    assert "host_softmax (a function that is not device code)" in result.feedback


def _candidate_function(x):
    return x


def test_a_library_function_is_one_its_modules_hold_not_one_named_after_them():
    """#3's rule (``frontend.library_function``): Triton's own function is a library's; the same code
    renamed or rebuilt over Triton's globals is not, nor is Triton's own code object rebuilt around a
    closure cell or a default of the candidate's."""
    wrapper = tl.program_id  # a builtin: a wrapper holding the function it wraps in its closure
    assert isinstance(wrapper, types.FunctionType) and wrapper.__closure__
    assert frontend.library_function(wrapper)
    renamed = _candidate_function.__code__.replace(co_filename=triton.jit.__code__.co_filename)
    assert not frontend.library_function(type(wrapper)(renamed, triton.jit.__globals__, "forged"))
    cells = tuple(types.CellType(_candidate_function) for _ in wrapper.__closure__)
    around = type(wrapper)(wrapper.__code__, wrapper.__globals__, "around", wrapper.__defaults__, cells)
    assert not frontend.library_function(around)
    jit = triton.runtime.jit.jit  # a function of Triton's with a default
    assert frontend.library_function(jit) and jit.__defaults__
    defaulted = type(jit)(jit.__code__, jit.__globals__, "jit", (_candidate_function,))
    defaulted.__kwdefaults__ = jit.__kwdefaults__
    assert not frontend.library_function(defaulted)
    assert not frontend.library_function(_candidate_function)


def test_a_library_module_imported_later_is_known_by_what_its_file_compiles_to(tmp_path, monkeypatch):
    """#3: a library module first imported after the runner's last look (Inductor's runtime helpers,
    imported by the candidate) holds library functions: its code is checked against its file, so a
    renamed code object of the candidate's is not among them."""
    (tmp_path / "late_library.py").write_text("def helper(x, scale=2):\n    return x * scale\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = OwnCode((str(tmp_path) + "/",))
    import late_library

    try:
        assert code.function(late_library.helper)
        forged = _candidate_function.__code__.replace(co_filename=late_library.__file__)
        assert not code.function(types.FunctionType(forged, vars(late_library), "forged"))
        assert not code.function(types.FunctionType(late_library.helper.__code__, {"__name__": "late_library"}))
    finally:
        sys.modules.pop("late_library", None)
