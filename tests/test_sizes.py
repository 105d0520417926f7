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


def test_int_constants_lists_only_module_level_integers_and_tuple_elements():
    assert int_constants(SOURCE) == {"batch_size": 4096, "dim": 8192, "nested[0]": 1, "nested[1]": 2}


def test_override_rewrites_only_the_named_literals_and_keeps_the_rest():
    shrunk = override_int_constants(SOURCE, {"batch_size": 4, "dim": 16})
    assert "batch_size = 4  # rows" in shrunk
    assert "dim: int = 16" in shrunk
    assert int_constants(shrunk) == {"batch_size": 4, "dim": 16, "nested[0]": 1, "nested[1]": 2}
    assert shrunk.replace("= 4  #", "= 4096  #").replace("int = 16", "int = 8192") == SOURCE


def test_override_of_unknown_or_non_integer_name_is_an_error():
    with pytest.raises(ProblemError, match=r"batchsize.*its constants: batch_size, dim, nested\[0\]"):
        override_int_constants(SOURCE, {"batchsize": 2})
    with pytest.raises(ProblemError, match="scale"):
        override_int_constants(SOURCE, {"scale": 2})
    with pytest.raises(ProblemError, match="not an integer"):
        override_int_constants(SOURCE, {"dim": 2.5})


def test_unparseable_source_is_a_problem_error():
    with pytest.raises(ProblemError, match="does not parse"):
        int_constants("def broken(:\n")


EXPRESSIONS = """import torch
N = 2048 * 2
batch = 64
dim = batch * 4
height = width = 128  # square
depth: int = 1 << 5
total = (
    N
    * 2
)
offset = -3
ratio = N / 2
reused = 10
reused = "ten"
grown = 8
grown *= 2
"""


def test_int_constants_evaluate_expressions_and_chained_assignments():
    assert int_constants(EXPRESSIONS) == {
        "N": 4096,
        "batch": 64,
        "dim": 256,
        "height": 128,
        "width": 128,
        "depth": 32,
        "total": 8192,
        "offset": -3,
    }  # a float (ratio), a name rebound to a string, or changed in place (grown) is no size constant


def test_override_expressions_and_derived_constants_follow():
    shrunk = override_int_constants(EXPRESSIONS, {"N": 64, "batch": 2})
    assert "N = 64\n" in shrunk and "batch = 2\n" in shrunk
    assert "dim = batch * 4" in shrunk  # derived: untouched text, new value
    assert int_constants(shrunk)["dim"] == 8
    assert int_constants(shrunk)["total"] == 128
    assert int_constants(override_int_constants(EXPRESSIONS, {"dim": 5}))["dim"] == 5


def test_override_chained_assignments_one_or_all_names():
    one = override_int_constants(EXPRESSIONS, {"height": 16})
    assert "height = 16; width = (128)  # square" in one
    assert (int_constants(one)["height"], int_constants(one)["width"]) == (16, 128)
    both = override_int_constants(EXPRESSIONS, {"height": 16, "width": 8})
    assert "height = 16; width = 8  # square" in both
    assert three_way("a = b = c = 7\n", {"b": 1}) == "a = (7); b = 1; c = a\n"


def three_way(source, overrides):
    result = override_int_constants(source, overrides)
    assert int_constants(result) == {**int_constants(source), **overrides}
    return result


def test_override_keeps_line_numbers_of_multi_line_values():
    shrunk = override_int_constants(EXPRESSIONS, {"total": 12, "depth": 4})
    assert shrunk.count("\n") == EXPRESSIONS.count("\n")
    assert "depth: int = 4\n" in shrunk
    assert int_constants(shrunk)["total"] == 12
    chained = "x = y = (\n    4 *\n    8)\nz = 1\n"
    for overrides in ({"x": 2}, {"x": 2, "y": 3}):
        result = three_way(chained, overrides)
        assert result.count("\n") == chained.count("\n") and result.endswith("z = 1\n")


def test_override_of_rebound_or_float_names_is_an_error():
    for name in ("ratio", "reused", "grown"):
        with pytest.raises(ProblemError, match=f"cannot override {name}"):
            override_int_constants(EXPRESSIONS, {name: 2})


def test_shape_tuple_elements_are_size_constants():
    source = "n = 8\ninput_shape = (n * 4, 3, 'x', 4096)  # shape\n"
    assert int_constants(source) == {"n": 8, "input_shape[0]": 32, "input_shape[1]": 3, "input_shape[3]": 4096}
    shrunk = override_int_constants(source, {"input_shape[3]": 16, "n": 2})
    assert shrunk == "n = 2\ninput_shape = (n * 4, 3, 'x', 16)  # shape\n"
    assert int_constants(shrunk)["input_shape[0]"] == 8
    assert "input_shape[2]" not in int_constants(source)
    assert int_constants("t = (1, 2)\nt = None\n") == {}


def test_unpacked_names_are_size_constants():
    source = "batch = 4\nD, H, W = 32, batch * 8, 16  # volume\nx, y = compute()\n"
    assert int_constants(source) == {"batch": 4, "D": 32, "H": 32, "W": 16}
    shrunk = override_int_constants(source, {"D": 8, "W": 2, "batch": 1})
    assert shrunk == "batch = 1\nD, H, W = 8, batch * 8, 2  # volume\nx, y = compute()\n"
    assert int_constants(shrunk)["H"] == 8
