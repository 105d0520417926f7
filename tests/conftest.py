import pytest
import torch

from helpers import DEVICE
from tritongym.env import LocalEnv, PoolConfig
from tritongym.evaluate import EvalConfig, EvalResult
from tritongym.problems import Problem


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` (deselected by default) cannot run without CUDA: say so instead of failing."""
    if torch.cuda.is_available():
        return
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (run through the device tool)"))


@pytest.fixture(scope="session")
def warm_env():
    """One warm sandbox for the session (per xdist worker), as RL uses the pool: a judge's start (importing
    torch and Triton, its zygote and a spare runner) costs seconds, a job a tenth of one. Tests of a
    verdict run here; tests of the sandbox's own start, environment or lifetime start one of their own."""
    with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
        env.fingerprint()  # waits until the sandbox is warm, so its start counts as the fixture's setup
        yield env


@pytest.fixture
def judge(warm_env):
    """``evaluate(problem, candidate, config)`` through the session's warm sandbox."""

    def evaluate(problem: Problem, candidate: str | bytes, config: EvalConfig) -> EvalResult:
        return warm_env.submit(problem, candidate, config).result()

    return evaluate
