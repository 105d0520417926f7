import json

import pytest

from tritongym.errors import ProblemError
from tritongym.problems import (
    TableColumns,
    find_problem,
    load_bundled,
    load_directory,
    load_file,
    load_problems,
    load_table,
    match_problem,
)
from tritongym.problems.problem import Problem

MINIMAL = "import torch\nclass Model(torch.nn.Module):\n    pass\n"


def test_directory_is_naturally_sorted_and_keeps_level(tmp_path):
    level = tmp_path / "level2"
    level.mkdir()
    for name in ("10_Conv.py", "2_Relu.py", "1_Matmul.py", "__init__.py", "notes.txt"):
        (level / name).write_text(MINIMAL)
    problems = load_directory(level)
    assert [p.name for p in problems] == ["1_Matmul", "2_Relu", "10_Conv"]
    assert {p.level for p in problems} == {2}
    assert problems[0].origin.endswith("1_Matmul.py")


def test_empty_or_missing_directory_is_an_error(tmp_path):
    with pytest.raises(ProblemError, match=r"no .py problem files"):
        load_directory(tmp_path)
    with pytest.raises(ProblemError, match="not a directory"):
        load_directory(tmp_path / "nope")


def test_file_errors_are_clear(tmp_path):
    with pytest.raises(ProblemError, match="no such file"):
        load_file(tmp_path / "missing.py")
    binary = tmp_path / "bin.py"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ProblemError, match="not UTF-8"):
        load_file(binary)


def _rows():
    return [
        {"uuid": "a1", "python_code": MINIMAL, "entry_point": "MyNet", "triton_code": "# solution"},
        {"uuid": "b2", "python_code": MINIMAL, "entry_point": None},
    ]


def test_jsonl_rows_become_problems_with_entry_points(tmp_path):
    path = tmp_path / "kb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _rows()) + "\n\n")
    first, second = load_table(path)
    assert (first.name, first.entry_point, first.solution_class, first.solution) == (
        "a1",
        "MyNet",
        "MyNetNew",
        "# solution",
    )
    assert (second.entry_point, second.solution_class, second.origin) == ("Model", "ModelNew", f"{path}:1")


def test_parquet_with_custom_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")  # the optional 'parquet' extra
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "kb.parquet"
    pq.write_table(pa.Table.from_pylist([{"ref": MINIMAL, "cls": "Net"}]), path)
    (problem,) = load_table(path, TableColumns(source="ref", entry_point="cls", name=None, solution=None))
    assert (problem.name, problem.entry_point) == ("row0", "Net")


def test_table_errors_name_the_row_and_the_fix(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"code": MINIMAL}) + "\n")
    with pytest.raises(
        ProblemError, match=r"row 0: no reference source in column 'python_code' \(columns present: code\)"
    ):
        load_table(path)
    path.write_text("{not json\n")
    with pytest.raises(ProblemError, match=r"bad.jsonl:1: not valid JSON"):
        load_table(path)
    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n")
    with pytest.raises(ProblemError, match=r"must be .jsonl or .parquet"):
        load_table(csv)


def test_bundled_set_covers_the_required_kinds():
    problems = load_bundled()
    assert len(problems) >= 12
    assert len({p.name for p in problems}) == len(problems)
    tags = {t for p in problems for t in p.tags}
    required = {
        "elementwise", "activation", "reduction", "softmax", "normalization", "matmul", "epilogue",
        "fused-chain", "parameters", "tuple-output", "fp16", "non-contiguous", "broadcast", "integer-argument",
    }  # fmt: skip
    assert required <= tags
    for p in problems:
        assert p.solution and "ModelNew" in p.solution and "@triton.jit" in p.solution
        assert p.small_sizes and set(p.small_sizes) <= set(p.sizes)


def test_find_problem_by_name_number_or_path(tmp_path):
    assert find_problem("softmax").name == "04_softmax"
    assert find_problem("04").name == "04_softmax"
    assert find_problem("04_softmax").name == "04_softmax"
    path = tmp_path / "mine.py"
    path.write_text(MINIMAL)
    assert find_problem(str(path)).name == "mine"
    with pytest.raises(ProblemError, match="no problem 'nonsense'"):
        find_problem("nonsense")


def test_match_problem_prefers_the_exact_name_then_short_forms():
    def named(*names):
        return [Problem(name=n, source=MINIMAL) for n in names]

    problems = named("19_ReLU", "ReLU_2", "uuid-without-number", "2_Conv")
    assert match_problem(problems, "ReLU").name == "19_ReLU"
    assert match_problem(problems, "19").name == "19_ReLU"
    assert match_problem(problems, "ReLU_2").name == "ReLU_2"  # not read as number 'ReLU'
    assert match_problem(problems, "uuid-without-number").name == "uuid-without-number"
    assert match_problem(problems, "2").name == "2_Conv"
    assert match_problem(problems, "Conv2") is None
    assert match_problem(named("ReLU", "19_ReLU"), "ReLU").name == "ReLU"  # the exact name wins


def test_load_problems_dispatches_on_source(tmp_path):
    assert len(load_problems()) == len(load_problems("bundled")) >= 12
    with pytest.raises(ProblemError, match="no such file or directory"):
        load_problems(tmp_path / "missing")
    other = tmp_path / "x.txt"
    other.write_text("")
    with pytest.raises(ProblemError, match="unsupported problem source"):
        load_problems(other)


def test_small_and_with_sizes_shrink_the_source():
    problem = find_problem("softmax")
    small = problem.small()
    assert small.sizes == {"batch_size": 8, "dim": 100}
    assert small.with_sizes(dim=7).sizes == {"batch_size": 8, "dim": 7}
    assert problem.sizes == {"batch_size": 4096, "dim": 4096}
