"""Shrinking any problem to a budget, the notice of what changed, and problems that cannot be prepared."""

import json
import logging
import math

import pytest
import torch
from typer.testing import CliRunner

from helpers import CANDIDATES
from tritongym import cli
from tritongym.cli import EXIT_USAGE, app
from tritongym.errors import ProblemError
from tritongym.evaluate import EvalConfig
from tritongym.evaluate.evaluator import build_job
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.problems import Problem, find_problem, load_directory, load_file
from tritongym.problems.sizes import (
    input_elements,
    int_constants,
    override_int_constants,
    second_sizes,
    second_value,
    shrink_sizes,
)

CONV = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
in_channels = 3
out_channels = 64
kernel_size = 3
height = width = 256


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
"""

MATMUL = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


M = 1024 * 4
K = 8192
N = 1000
dim = M // 2


def get_inputs():
    rows = M
    a = torch.rand((rows, K))
    b = torch.randn(size=(K, N))
    return [a, b, torch.randint(0, 10, (dim,))]


def get_init_inputs():
    return []
"""

HINGE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 32768
input_shape = (32768,)


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
"""

SMALL = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


n = 64


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""


def write(directory, name, source):
    path = directory / f"{name}.py"
    path.write_text(source)
    return path


def test_input_elements_reads_shapes_statically():
    assert input_elements(CONV) == (16 * 3 * 256 * 256, {"batch_size", "in_channels", "height", "width"})
    total, used = input_elements(MATMUL)
    assert total == 4096 * 8192 + 8192 * 1000 + 2048
    assert used == {"M", "K", "N", "dim"}
    assert input_elements(MATMUL, {"M": 8})[0] == 8 * 8192 + 8192 * 1000 + 4


def test_shrink_keeps_small_constants_and_ratios():
    overrides = shrink_sizes(CONV, budget=1 << 14)
    # one factor (1/8) for all; in_channels (3) and kernel_size (3) are under the floor: untouched;
    # out_channels reaches the model through get_init_inputs and stops at the floor (16); the
    # leading (batch) dimension may go down to 2
    assert overrides == {"batch_size": 2, "height": 32, "width": 32, "out_channels": 16}
    assert input_elements(CONV, overrides)[0] == 2 * 3 * 32 * 32 <= 1 << 14
    assert shrink_sizes(CONV, budget=1 << 20) == {"batch_size": 8, "height": 128, "width": 128, "out_channels": 32}
    overrides = shrink_sizes(MATMUL, budget=1 << 14)
    assert set(overrides) == {"M", "K", "N"}  # dim = M // 2 follows M
    assert overrides["K"] == 2 * overrides["M"]  # the 1:2 ratio holds
    assert overrides["N"] % 8 == 0  # 1000 = 8 * 125 keeps its factor 8
    assert input_elements(MATMUL, overrides)[0] <= 1 << 14
    assert shrink_sizes(SMALL) == {}


def test_problem_small_works_on_any_problem_and_says_what_changed(tmp_path):
    level = tmp_path / "level1"
    level.mkdir()
    write(level, "1_conv", CONV)
    write(level, "2_matmul", MATMUL)
    write(level, "3_small", SMALL)
    conv, matmul, small = load_directory(level)
    shrunk = conv.small()
    assert shrunk.shrunk == {
        "batch_size": (16, 2),
        "out_channels": (64, 16),
        "height": (256, 32),
        "width": (256, 32),
    }
    assert shrunk.size_notice == "batch_size 16->2, out_channels 64->16, height 256->32, width 256->32"
    assert "height = 32; width = 32" in shrunk.source
    assert conv.shrunk == {} and conv.size_notice == ""
    m = matmul.small()
    assert m.sizes["dim"] == m.sizes["M"] // 2 and m.shrunk["dim"] == (2048, m.sizes["dim"])
    assert small.small() == small and small.small().shrunk == {}  # already fits: nothing shrunk, no notice


def test_bundled_problems_keep_their_declared_small_sizes():
    from tritongym.problems import find_problem

    softmax = find_problem("softmax").small()
    assert softmax.sizes == {"batch_size": 8, "dim": 100}
    assert softmax.shrunk == {"batch_size": (4096, 8), "dim": (4096, 100)}


def test_prepare_applies_small_then_explicit_sizes(tmp_path):
    conv = load_file(write(tmp_path, "conv", CONV))
    prepared = conv.prepare(small=True, sizes={"height": 64})
    assert (prepared.sizes["height"], prepared.sizes["width"]) == (64, 32)
    assert set(prepared.shrunk) == {"batch_size", "out_channels", "width"}  # height was set, not shrunk
    assert conv.prepare(small=False, sizes={"height": 32}).shrunk == {}
    assert conv.prepare() is conv


DERIVED = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch = rows = 2048
dim = batch * 2
other = 512


def get_inputs():
    return [torch.randn(batch, rows, dim, other)]


def get_init_inputs():
    return []
"""


def test_prepare_does_not_report_what_an_explicit_size_changed_as_shrunk(tmp_path):
    problem = load_file(write(tmp_path, "derived", DERIVED))
    prepared = problem.prepare(small=True, sizes={"batch": 4, "rows": 3})
    assert prepared.sizes["dim"] == 8  # follows batch, as it would at full size
    assert set(prepared.shrunk) == {"other"}  # only what --small changed
    assert prepared.shrunk["other"][0] == 512
    fits = problem.prepare(small=True, sizes={"batch": 2, "rows": 2, "other": 2})
    assert fits.shrunk == {} and fits.size_notice == ""


def test_a_failure_outside_the_candidate_at_shrunk_sizes_says_what_to_try(tmp_path, monkeypatch):
    conv = load_file(write(tmp_path, "conv", CONV))
    broken = EvalResult("conv", Verdict.INFRASTRUCTURE_ERROR, "The reference problem itself failed: ...")
    hint = cli._size_hint(conv.small(), broken)
    assert "at small sizes: batch_size 16->" in hint and "--full or --size NAME=VALUE" in hint
    assert cli._size_hint(conv, broken) == ""  # full sizes: nothing to try
    assert cli._size_hint(conv.small(), EvalResult("conv", Verdict.MISMATCH, "")) == ""  # the candidate's fault
    monkeypatch.setattr(cli, "evaluate", lambda problem, candidate, config: broken)
    args = ["eval", "--problem", str(tmp_path / "conv.py"), "--candidate", str(CANDIDATES / "syntax_error.py")]
    shown = CliRunner().invoke(app, [*args, "--small"])
    assert shown.exit_code == 3 and "--full or --size NAME=VALUE may run it" in shown.stdout
    assert "may run it" not in CliRunner().invoke(app, [*args, "--full"]).stdout


def test_a_problem_missing_its_class_or_input_functions_is_refused_by_name(tmp_path):
    no_inputs = load_file(write(tmp_path, "3_no_inputs", CONV.split("def get_inputs")[0]))
    with pytest.raises(ProblemError, match=r"problem 3_no_inputs defines no get_inputs, get_init_inputs; a problem"):
        no_inputs.prepare()
    renamed = load_file(write(tmp_path, "4_renamed", CONV.replace("class Model(", "class Net(")))
    with pytest.raises(ProblemError, match=r"problem 4_renamed defines no Model; a problem defines class Model"):
        renamed.prepare(small=True)
    guarded = (
        "try:\n    from helpers_xyz import get_inputs\nexcept ImportError:\n    def get_inputs():\n        return []\n"
    )
    conditional = CONV.split("def get_inputs")[0] + guarded + "get_init_inputs = lambda: []\n"
    load_file(write(tmp_path, "5_conditional", conditional)).require_definitions()  # bound under try, by assignment
    star = load_file(write(tmp_path, "6_star", "from torch.nn import *\n"))
    star.require_definitions()  # cannot be told statically: left to the judge


def test_errors_while_preparing_name_the_problem(tmp_path):
    conv = load_file(write(tmp_path, "7_conv", CONV))
    with pytest.raises(ProblemError, match=r"problem 7_conv: cannot override heigth"):
        conv.prepare(sizes={"heigth": 3})
    broken = load_file(write(tmp_path, "8_broken", "def get_inputs(:\n"))
    with pytest.raises(ProblemError, match=r"problem 8_broken: reference source does not parse"):
        broken.small()


HF_MODEL = """import torch
from transformers import AutoModelForCausalLM
import tritongym_missing_pkg.layers as layers
try:
    import another_missing_optional
except ImportError:
    another_missing_optional = None


class Model(torch.nn.Module):
    def forward(self, x):
        import math
        return x


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
"""


def test_problems_needing_missing_packages_say_which(tmp_path):
    problem = load_file(write(tmp_path, "gpt2", HF_MODEL.replace("transformers", "tritongym_missing_hf")))
    with pytest.raises(ProblemError, match=r"problem gpt2 needs tritongym_missing_hf, tritongym_missing_pkg, not"):
        problem.prepare()
    ok = load_file(write(tmp_path, "fine", SMALL))
    ok.require_packages()  # torch only: nothing raised


def test_shrinking_that_cannot_reach_the_budget_warns(tmp_path, caplog):
    conv = load_file(write(tmp_path, "conv", CONV))
    with caplog.at_level(logging.WARNING):
        shrunk = conv.small(budget=100)
    assert "problem conv: inputs of 1536 elements at its smallest sizes, over the budget of 100" in caplog.text
    assert shrunk.sizes["height"] == 16


def test_cli_notice_appears_only_when_sizes_were_shrunk(tmp_path, monkeypatch):
    evaluated = []

    def fake_evaluate(problem, candidate, config):  # the notice is the subject here, not the sandbox
        evaluated.append(problem)
        return EvalResult(problem=problem.name, verdict=Verdict.SYNTAX_ERROR, feedback="syntax_error")

    monkeypatch.setattr(cli, "evaluate", fake_evaluate)
    big = write(tmp_path, "big", SMALL.replace("n = 64", "n = 1 << 20"))
    small = write(tmp_path, "small", SMALL)
    candidate = str(CANDIDATES / "syntax_error.py")
    runner = CliRunner()
    shrunk = runner.invoke(app, ["eval", "--problem", str(big), "--candidate", candidate, "--small", "--trials", "1"])
    assert "small sizes (--full to keep them): big: n 1048576->16384" in shrunk.stderr
    kept = runner.invoke(app, ["eval", "--problem", str(small), "--candidate", candidate, "--small", "--trials", "1"])
    assert "small sizes" not in kept.stderr and "syntax_error" in kept.stdout
    assert [p.sizes["n"] for p in evaluated] == [16384, 64]
    hinge = str(write(tmp_path, "hinge", HINGE))
    args = ["eval", "--problem", hinge, "--candidate", candidate, "--full", "--size", "input_shape[0]=8"]
    assert runner.invoke(app, args).exit_code == 1
    assert evaluated[-1].sizes == {"batch_size": 32768, "input_shape[0]": 8}
    bad = runner.invoke(app, [*args[:-1], "input_shape[x]=8"])
    assert bad.exit_code == EXIT_USAGE and "NAME[INDEX]=INTEGER" in bad.stderr
    missing = write(tmp_path, "needs_pkg", HF_MODEL.replace("transformers", "tritongym_missing_hf"))
    result = runner.invoke(app, ["eval", "--problem", str(missing), "--candidate", candidate])
    assert result.exit_code == EXIT_USAGE
    assert "needs tritongym_missing_hf" in result.stderr


def test_an_error_in_a_batch_names_its_problem(tmp_path):
    problems, candidates = tmp_path / "problems", tmp_path / "candidates"
    problems.mkdir()
    candidates.mkdir()
    write(problems, "1_small", SMALL)
    write(problems, "2_conv", CONV)
    for name in ("1_small", "2_conv"):
        write(candidates, name, "class ModelNew: ...\n")
    runner = CliRunner()
    result = runner.invoke(
        app, ["eval", "--candidate", str(candidates), "--problems", str(problems), "--size", "height=8"]
    )
    assert result.exit_code == EXIT_USAGE
    assert "problem 1_small: cannot override height" in result.stderr
    write(problems, "3_needs_pkg", HF_MODEL.replace("transformers", "tritongym_missing_hf"))
    write(candidates, "3_needs_pkg", "class ModelNew: ...\n")
    result = runner.invoke(app, ["eval", "--candidate", str(candidates), "--problems", str(problems)])
    assert result.exit_code == EXIT_USAGE
    assert "problem 3_needs_pkg needs tritongym_missing_hf" in result.stderr


def test_shape_tuples_count_and_shrink_with_the_rest():
    # the model only broadcasts because both sizes are equal: one factor keeps them equal
    assert input_elements(HINGE) == (32768 * 32768 + 32768, {"batch_size", "input_shape[0]"})
    assert shrink_sizes(HINGE) == {"batch_size": 64, "input_shape[0]": 64}
    flat = HINGE.replace("torch.rand(batch_size, *input_shape)", "torch.rand(input_shape)")
    assert input_elements(flat)[0] == 32768 + 32768


def test_shrinking_keeps_a_factor_of_three():
    grouped = CONV.replace("in_channels = 3", "in_channels = 240")
    overrides = shrink_sizes(grouped)
    assert overrides["in_channels"] % 3 == 0 and overrides["in_channels"] < 240


@pytest.mark.parametrize(
    ("full", "small", "second"),
    [
        (4096, 100, 132),  # above 128 (a block covering 100), a multiple of gcd 4 by an odd factor prime to 25
        (8192, 300, 524),  # above 512; 4 * 131 (129 = 3 * 43 shares 3 with 75)
        (16777216, 1000, 1032),
        (1000, 7, 9),  # a Python number among the inputs (a shift) too
        (4096, 8, 16),  # both powers of two: it is one, twice the small
        (4096, 64, 128),
        (1000, 16, 24),  # 16 of 1000 shares 8 only: 24, no power of two
        (48, 16, 48),  # never above the full size
        (4096, 4096, 4096),  # not shrunk
    ],
)
def test_a_second_value_is_above_the_small_ones_blocks_and_shares_what_both_share(full, small, second):
    assert second_value(full, small) == second
    if second != small:
        assert second > triton_next_power_of_2(small) or second == full
        assert second % math.gcd(full, small) == 0


def triton_next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def test_second_sizes_grow_the_shrunk_roots_within_the_budget():
    small = shrink_sizes(CONV, budget=1 << 14)
    source = override_int_constants(CONV, small)
    shrunk = {name: (int_constants(CONV)[name], value) for name, value in small.items()}
    second = second_sizes(source, shrunk, growth=8)
    assert second == {"batch_size": 4, "height": 64, "width": 64, "out_channels": 32}
    assert input_elements(source, second)[0] == 8 * input_elements(source)[0]
    # four times at most (the default): the batch goes back to its small size first
    assert second_sizes(source, shrunk) == {"height": 64, "width": 64, "out_channels": 32}
    # one constant is kept whatever the budget (with those equal to it at both sizes: a square input's sides)
    assert second_sizes(source, shrunk, growth=1) == {"height": 64, "width": 64}
    small = shrink_sizes(MATMUL, budget=1 << 14)
    source = override_int_constants(MATMUL, small)
    shrunk = {name: (int_constants(MATMUL)[name], value) for name, value in small.items()}
    shrunk["dim"] = (int_constants(MATMUL)["dim"], int_constants(source)["dim"])
    second = second_sizes(source, shrunk)
    assert set(second) == {"M", "K", "N"}  # dim = M // 2 follows M
    assert int_constants(source, second)["dim"] == second["M"] // 2
    assert second_sizes(source, {}) == {}


def test_a_shrunk_problem_travels_with_what_was_shrunk():
    """The judge's second size is made where the job is (``build_job``): a problem sent to a service or
    stored with a task keeps ``shrunk``, and with it its second size."""
    problem = find_problem("04_softmax").small()
    data = problem.to_dict()
    assert data["shrunk"] == {"batch_size": [4096, 8], "dim": [4096, 100]}
    again = Problem(**json.loads(json.dumps(data)))
    assert again.resized().source == problem.resized().source
    assert again.resized().sizes == {"batch_size": 16, "dim": 132}
    assert problem.small().shrunk == problem.shrunk  # shrinking a shrunk problem again keeps what it came from
    assert "shrunk" not in find_problem("04_softmax").to_dict()
    assert find_problem("04_softmax").resized() is None
    job = build_job(problem, "", EvalConfig())  # the judge draws the second size from it (red team 24)
    assert job["shrunk"] == {"batch_size": [4096, 8], "dim": [4096, 100]}
    assert not {key for key in job if "resized" in key}
    assert build_job(find_problem("04_softmax"), "", EvalConfig())["shrunk"] == {}


DEPTHWISE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, groups=in_channels)

    def forward(self, x):
        return self.conv(x)


batch_size = 64
in_channels = 128
out_channels = 128
kernel_size = 3
width_in = 512
height_in = 256


def get_inputs():
    return [torch.rand(batch_size, in_channels, height_in, width_in)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
"""


def test_constants_equal_at_both_sizes_stay_equal_at_the_second():
    """A depthwise convolution's channels in and out (equal at the full and the small size: the problem
    states one filter per channel) go back to their small value together where the inputs outgrow the
    budget: one of them alone grown made a convolution of two filters per channel, which an honest
    kernel of the problem as stated computes wrong (honest4's kb_depthwise_conv.py)."""
    small = shrink_sizes(DEPTHWISE)
    source = override_int_constants(DEPTHWISE, small)
    full = int_constants(DEPTHWISE)
    shrunk = {name: (full[name], value) for name, value in small.items()}
    assert shrunk["in_channels"] == shrunk["out_channels"]
    for growth in (1, 2, 4, 8, 16, 64):
        second = int_constants(source, second_sizes(source, shrunk, growth=growth))
        assert second["in_channels"] == second["out_channels"], growth
    assert second_sizes(source, shrunk, growth=64)["in_channels"] > small["in_channels"]


def test_the_second_sizes_trial_is_allowed_its_own_time():
    """The job's timeout is the problem's, at the size it shows: the trial more at the second size
    moves the deadline by a trial at the problem's own size per time its tensors hold as many bytes
    (twice, for a contraction's work), at most the timeout once more. A slow honest matmul of KernelBench's
    tall-skinny problem (a 2048 x 2048 output at the small size, four times the elements at the second)
    timed out at the second size only (honest4)."""
    from tritongym.evaluate.judge.reference import Trial
    from tritongym.evaluate.judge.second_size import SECOND_TRIAL_TIME, SecondSize

    def trial(n: int) -> Trial:
        inputs = [torch.zeros(n, 2), torch.zeros(2, n)]
        return Trial(inputs, torch.zeros(n, n), None, inputs, None, "")

    second = SecondSize(reference=None, trial=trial(64), sizes="M 32->64")
    first = trial(32)
    ratio = (4 * 64 * 4 + 64 * 64 * 4) / (4 * 32 * 4 + 32 * 32 * 4)
    assert second.allowance(1.5, first, 180.0) == pytest.approx(SECOND_TRIAL_TIME * ratio * 1.5)
    assert second.allowance(100.0, first, 180.0) == 180.0  # never past twice the timeout
    # the judge's own work for it (the draw, the reference), in the job since it comes after the first trials
    assert second.allowance(1.5, first, 180.0, 2.0) == pytest.approx(SECOND_TRIAL_TIME * ratio * 1.5 + 2.0)
    assert second.allowance(1.5, first, 180.0, 500.0) == 180.0
    assert SecondSize(reference=None, trial=trial(16), sizes="").allowance(1.0, first, 180.0) == SECOND_TRIAL_TIME


def test_shrunk_notice_is_a_line_per_problem_and_empty_when_none_was_shrunk():
    from tritongym.problems import load_bundled
    from tritongym.problems.problem import shrunk_notice

    full = load_bundled()[:3]
    small = [p.small() for p in full]
    lines = shrunk_notice(small).splitlines()
    assert lines[0] == "3 problems at small sizes (--full to keep them):"
    assert lines[1:] == [f"  {p.name}: {p.size_notice}" for p in small] and all("->" in line for line in lines[1:])
    assert shrunk_notice(small[:1]) == f"small sizes (--full to keep them): {small[0].name}: {small[0].size_notice}"
    assert shrunk_notice(full) == ""
