"""Verdict categories: every verdict is in exactly one, decided here by hand."""

import pytest

from tritongym.evaluate.result import Category, Verdict

EXPECTED = {
    Category.OK: {"ok"},
    Category.FAILED: {
        "invalid_source",
        "syntax_error",
        "import_error",
        "interface_error",
        "compile_error",
        "timeout",
        "crash",
    },
    Category.INCORRECT: {"runtime_error", "out_of_memory", "wrong_shape", "wrong_dtype", "mismatch", "precision"},
    Category.HACK: {
        "hack_input_mutation",
        "hack_output_alias",
        "hack_no_triton",
        "hack_fallback",
        "hack_torch_compute",
        "hack_tampering",
        "hack_threads",
        "hack_side_stream",
        "hack_forbidden_api",
        "uninitialized_output",
    },
    Category.INFRASTRUCTURE: {"infrastructure_error"},
}


@pytest.mark.parametrize("verdict", list(Verdict), ids=[v.value for v in Verdict])
def test_every_verdict_has_the_category_decided_for_it(verdict):
    # A new verdict fails here until someone decides its category.
    decided = [category for category, names in EXPECTED.items() if verdict.value in names]
    assert decided == [verdict.category]


def test_every_cheating_verdict_is_a_hack():
    assert all(v.category is Category.HACK for v in Verdict if v.value.startswith("hack_"))
    assert Verdict.UNINITIALIZED_OUTPUT.category is Category.HACK
