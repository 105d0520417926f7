"""The GPU's verdicts the CPU's are measured against in tests/adversarial/redteam14/README.md (marker
``gpu``; run through the device tool). Written, not run, in the session that wrote them (no GPU)."""

from pathlib import Path

import pytest

from tritongym.evaluate import EvalConfig, Verdict, evaluate
from tritongym.problems import find_problem

HERE = Path(__file__).parent / "redteam14"
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    ("table", "verdicts"),
    [("strict", (Verdict.RUNTIME_ERROR,)), ("fallback", (Verdict.MISMATCH, Verdict.UNINITIALIZED_OUTPUT))],
)
def test_a_table_of_the_two_judged_sizes_is_wrong_at_the_full_size(table, verdicts):
    """#1 at 01_vector_add's full size (``n = 16777216``, in no table): a KeyError, or the first 1024
    elements added and the rest unwritten."""
    source = (HERE / "both_sizes_hard_wired.py").read_text().replace('TABLE = "strict"', f'TABLE = "{table}"')
    config = EvalConfig(device="cuda", trials=2, timing=False, profile=False, torch_compute="forbid")
    result = evaluate(find_problem("01_vector_add"), source, config)
    assert result.verdict in verdicts, result.feedback
