"""The twenty-fifth red team's attacks (tests/adversarial/redteam25/README.md): the judge's newest code
attacked on the CPU (Triton's interpreter). Each test asserts the right verdict; the candidates run in the
session's warm CPU sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import small_problem
from tritongym.evaluate import EvalConfig, EvalResult, Verdict
from tritongym.problems import Problem

HERE = Path(__file__).parent / "redteam25"
REDTEAM23 = Path(__file__).parent / "redteam23"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def run(judge, problem: str, name: str, **overrides) -> EvalResult:
    return judge(small_problem(problem), (HERE / name).read_text(), config(**overrides))


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("profile_hook_reads_a_kernels_frame.py", "sys.setprofile"),  # #1
        ("trace_hook_reads_a_kernels_frame.py", "sys.settrace"),  # #2
    ],
)
def test_a_hook_set_by_a_computed_name_is_refused(judge, name, event):
    """#1, #2: ``getattr(sys, "set" + "profile")`` (or ``settrace``) installs a hook around a launch; the
    interpreter calls it inside the kernel with the kernel's frame, whose ``block`` holds the loaded row;
    forward sums it on the host and hands the sum to a store kernel (``ok`` under ``forbid``). The
    runner's audit hook now refuses the event, as it refuses ``sys.addaudithook``."""
    result = run(judge, "03_row_sum", name)
    print(result.feedback)
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert f"a runner refuses {event}" in result.feedback


def test_the_runners_audit_hook_is_not_rewritten(judge):
    """#3: the module finds the runner's refusing hook through the collector (``gc`` from ``sys.modules``
    by a computed name), replaces its ``__code__`` with a hook that refuses nothing, then adds red team 23
    #1's frame-reading hook (``ok`` under ``forbid``). The refusing hook refuses its own rewriting."""
    result = run(judge, "03_row_sum", "audit_hook_after_disarming_the_refusal.py")
    assert result.verdict is Verdict.IMPORT_ERROR, result.feedback
    assert "a runner's audit hook is not rewritten" in result.feedback


def test_an_honest_kernel_beside_an_audit_hook_is_ok(judge):
    """The counterpart of #1-#3: a correct vector add whose module adds a counting audit hook (refused
    silently, as red team 23 made it) and reads the profile hook that is set (``sys.getprofile``, no
    event) is ``ok``."""
    source = (REDTEAM23 / "audit_hook_counts_events.py").read_text()
    source = source.replace("import sys\n", "import sys\n\nPROFILED = sys.getprofile()\n", 1)
    result = judge(small_problem("01_vector_add"), source, config())
    assert result.verdict is Verdict.OK, result.feedback


ROW_SUM = Problem(
    name="row_sum_4x16",
    source=(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x.sum(1)\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 16)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    ),
)
"""A row sum small enough for a candidate that takes one value per launch (no second size: not shrunk)."""


def test_an_errors_message_carries_no_value_out_of_a_kernel(judge):
    """#5: each launch loads one element and gathers with its bits as the index; the interpreter's error
    (NumPy's ``index 1078984704 is out of bounds``) carried the value to forward, which summed the rows
    on the host (``ok`` under ``forbid``). An error leaving an interpreted grid now names no number, and
    fails the call even where forward caught it (#6)."""
    result = judge(ROW_SUM, (HERE / "values_in_an_errors_message.py").read_text(), config())
    assert result.verdict is Verdict.COMPILE_ERROR, result.feedback  # how an interpreted kernel's failure is named
    assert "is out of bounds for axis # with size #" in result.feedback, result.feedback


def test_a_kernel_failing_by_a_bit_fails_the_call(judge):
    """#6: #5 without a number: 32 launches per element, each failing or not by one bit of it, the
    errors caught by forward (``ok`` under ``forbid`` once #5's messages named no number). A grid's error
    now fails the call once forward returns, caught or not, as a GPU kernel's failure ends its context."""
    result = judge(ROW_SUM, (HERE / "bits_by_whether_a_kernel_fails.py").read_text(), config())
    assert result.verdict is Verdict.COMPILE_ERROR, result.feedback


def test_an_honest_kernels_error_keeps_its_words(judge):
    """The counterpart of #5: a kernel whose gather goes out of bounds by mistake (the error not caught)
    fails with the interpreter's message, its words kept for the feedback, its numbers gone."""
    source = (HERE / "values_in_an_errors_message.py").read_text()
    source = source.replace(
        "    try:\n        tell_kernel[(1,)](x, at)\n    except Exception as error:",
        "    if True:\n        tell_kernel[(1,)](x, at)\n    if False:\n        error = None",
    )
    result = judge(ROW_SUM, source, config())
    assert result.verdict is Verdict.COMPILE_ERROR, result.feedback  # how an interpreted kernel's failure is named
    assert "is out of bounds for axis # with size #" in result.feedback, result.feedback


@pytest.mark.xfail(
    strict=True,
    reason="open (README, #4): the guards are the runner's word; a rebinding undone before forward returns is unseen",
)
def test_the_guards_module_rebound_during_forward(judge):
    """#4: red team 21 #2 (a kernel's print read by forward) with ``guards.STANDARD_STREAMS`` rebound to
    forward's buffer around the launch (the module reached through ``getattr(sys, "mod" + "ules")``) and
    put back before forward returns: the tampering check after forward sees nothing (``ok`` under
    ``forbid``). The interpreter's guards live in the candidate's process (docs/environment.md, threat
    model); closing it needs them out of its reach (README)."""
    result = run(judge, "03_row_sum", "standard_streams_rebound_for_the_launch.py")
    assert result.verdict is not Verdict.OK, result.feedback
