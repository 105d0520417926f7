"""The twenty-third red team's attacks (tests/adversarial/redteam23/README.md): what turns a reply into a
reward, past the judge's verdict: the reply parser, the prompt, the feedback, the rewards, the trainer's
use of them and the multi-turn paths, and a candidate's audit hook. Candidates run in the session's warm
CPU sandbox (Triton's interpreter); the reward paths are pure functions, fed purpose-written replies and
results."""

from __future__ import annotations

from pathlib import Path

from helpers import small_problem
from tritongym.evaluate import EvalConfig, EvalResult, Verdict

HERE = Path(__file__).parent / "redteam23"


def config(**overrides) -> EvalConfig:
    return EvalConfig(**{"device": "cpu", "trials": 2, "torch_compute": "forbid", **overrides})


def run(judge, problem: str, name: str, **overrides) -> EvalResult:
    return judge(small_problem(problem), (HERE / name).read_text(), config(**overrides))


def test_an_audit_hook_does_not_run_inside_a_kernel(judge):
    """#1: the candidate's module adds an audit hook (``sys.addaudithook``); Python raises audited events
    inside an interpreted kernel (``sys._getframe``, ``builtins.id``), so the hook walks up to the
    kernel's frame and keeps the row it loaded, which forward sums on the host and hands to a store
    kernel as a scalar (``ok`` under ``forbid``). A GPU kernel raises no event. The runner refuses every
    audit hook added after its own: the hook never runs, the row sums are never written."""
    result = run(judge, "03_row_sum", "audit_hook_reads_a_kernels_frame.py")
    assert result.verdict is Verdict.MISMATCH, result.feedback


def test_an_honest_kernel_beside_a_refused_audit_hook_is_correct(judge):
    """#1's honest counterpart: a correct kernel whose module adds a hook that only counts events. The hook
    is refused (it sees nothing), the kernel is judged as any other."""
    result = run(judge, "01_vector_add", "audit_hook_counts_events.py")
    assert result.verdict is Verdict.OK, result.feedback
    assert "audit events seen: 0" in result.stdout
