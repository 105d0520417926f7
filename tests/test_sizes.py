import pytest

from tritongym.errors import ProblemError
from tritongym.problems.sizes import int_constants, override_int_constants

SOURCE = """import torch
batch_size = 4096  # rows
dim: int = 8192
scale = 0.5
flag = True
name = "x"
nested = (1, 2)

def get_inputs():
    local = 3
    return [torch.randn(batch_size, dim)]
"""


def test_int_constants_lists_only_module_level_integer_literals():
    assert int_constants(SOURCE) == {"batch_size": 4096, "dim": 8192}


def test_override_rewrites_only_the_named_literals_and_keeps_the_rest():
    shrunk = override_int_constants(SOURCE, {"batch_size": 4, "dim": 16})
    assert "batch_size = 4  # rows" in shrunk
    assert "dim: int = 16" in shrunk
    assert int_constants(shrunk) == {"batch_size": 4, "dim": 16}
    assert shrunk.replace("= 4  #", "= 4096  #").replace("int = 16", "int = 8192") == SOURCE


def test_override_of_unknown_or_non_integer_name_is_an_error():
    with pytest.raises(ProblemError, match=r"batchsize.*its constants: batch_size, dim"):
        override_int_constants(SOURCE, {"batchsize": 2})
    with pytest.raises(ProblemError, match="scale"):
        override_int_constants(SOURCE, {"scale": 2})
    with pytest.raises(ProblemError, match="not an integer"):
        override_int_constants(SOURCE, {"dim": 2.5})


def test_unparseable_source_is_a_problem_error():
    with pytest.raises(ProblemError, match="does not parse"):
        int_constants("def broken(:\n")
