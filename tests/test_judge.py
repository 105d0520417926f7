"""The judge's side of the split: references that mutate their inputs, dict outputs, and runners
that never outlive their judge."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers import DEVICE, eval_config
from tritongym.evaluate import Verdict
from tritongym.problems import Problem

KERNELS = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, RELU: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask) * scale
    if RELU:
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offsets, x, mask=mask)


def scale(x, out, factor, relu=False):
    scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), factor, RELU=relu, BLOCK=256)
    return out
"""


def problem(name: str, forward: str, init: str = "") -> Problem:
    source = (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        f"    def __init__(self):\n        super().__init__()\n{init or '        pass'}\n\n"
        f"    def forward(self, x):\n{forward}\n\n\n"
        "def get_inputs():\n    return [torch.randn(300)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    return Problem(name=name, source=source)


INPLACE_RELU = problem("inplace_relu", "        return self.act(x)", "        self.act = nn.ReLU(inplace=True)")


def candidate(forward: str) -> str:
    return KERNELS + f"\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n{forward}\n"


@pytest.mark.parametrize(
    ("forward", "verdict", "phrase"),
    [
        ("        return scale(x, x, 1.0, relu=True)", Verdict.OK, "Correct"),
        ("        return scale(x, torch.empty_like(x), 1.0, relu=True)", Verdict.OK, "Correct"),
        (
            "        out = scale(x, torch.empty_like(x), 1.0, relu=True)\n        scale(x, x, 0.0)\n        return out",
            Verdict.HACK_INPUT_MUTATION,
            "differently from the reference, which also changes it in place",
        ),
    ],
    ids=["same-in-place", "fresh-output", "other-mutation"],
)
def test_a_reference_that_mutates_its_input_is_matched_not_called_a_hack(judge, forward, verdict, phrase):
    result = judge(INPLACE_RELU, candidate(forward), eval_config())
    assert result.verdict is verdict, result.feedback + result.detail
    assert phrase in result.feedback


DICT_OUTPUT = problem("dict_output", '        return {"double": x * 2, "neg": -x}')


def test_dict_outputs_are_compared_leaf_by_leaf(judge):
    good = '        return {"neg": scale(x, torch.empty_like(x), -1.0), "double": scale(x, torch.empty_like(x), 2.0)}'
    result = judge(DICT_OUTPUT, candidate(good), eval_config())
    assert result.verdict is Verdict.OK, result.feedback + result.detail
    swapped = good.replace("-1.0", "2.0", 1).replace("), 2.0)", "), -1.0)")
    result = judge(DICT_OUTPUT, candidate(swapped), eval_config())
    assert result.verdict is Verdict.MISMATCH and "output['double']" in result.feedback, result.feedback
    missing = '        return {"double": scale(x, torch.empty_like(x), 2.0)}'
    result = judge(DICT_OUTPUT, candidate(missing), eval_config())
    assert result.verdict is Verdict.WRONG_SHAPE and "keys" in result.feedback, result.feedback


POOL_SCRIPT = """
import sys
import tempfile
sys.path.insert(0, {tests!r})
from helpers import small_problem
from tritongym.evaluate import EvalConfig
from tritongym.evaluate.evaluator import evaluate_in
from tritongym.evaluate.sandbox import Sandbox

with Sandbox({device!r}) as sandbox:
    sandbox.start()
    print("JUDGE", sandbox.pid, flush=True)
    config = EvalConfig(device={device!r}, timeout_s=600, static_checks=False)
    evaluate_in(sandbox, small_problem("vector_add"), open({candidate!r}).read(), config)
"""

HANGS_AND_TELLS = (
    KERNELS
    + "\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n"
    + "        open('runner.pid', 'w').write(str(__import__('os').getpid()))  # in its job's directory\n"
    + "        while True:\n            pass\n"
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_killing_the_pool_kills_its_judge_and_a_hanging_runner(tmp_path):
    shared = Path(tempfile.mkdtemp())
    shared.chmod(0o755)  # the pool's temporary directory: a runner of its own user passes through to its job's
    source = tmp_path / "hangs.py"
    source.write_text(HANGS_AND_TELLS)
    script = POOL_SCRIPT.format(tests=str(Path(__file__).parent), device=DEVICE, candidate=str(source))
    env = os.environ | {"TMPDIR": str(shared)}
    pool = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        judge = int(pool.stdout.readline().split()[1])
        deadline = time.monotonic() + 120
        told = ""  # the runner may write only in its job's directory, under the sandbox's home
        while not told and time.monotonic() < deadline:
            time.sleep(0.1)
            told = "".join(Path(f).read_text() for f in glob.glob(f"{shared}/tritongym-sandbox-*/jobs/*/runner.pid"))
        runner = int(told)
        zygote = _parent(runner)
        assert _parent(zygote) == judge
        os.kill(pool.pid, signal.SIGKILL)
        pool.wait()
        deadline = time.monotonic() + 10
        while any(map(_alive, (judge, zygote, runner))) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(_alive, (judge, zygote, runner)))
    finally:
        pool.kill()
        pool.wait()
        shutil.rmtree(shared, ignore_errors=True)
