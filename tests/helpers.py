"""Shared helpers: small bundled problems and purpose-written candidates.

They run on the CPU (Triton's interpreter) unless TRITONGYM_TEST_DEVICE names another device,
as in the GPU run: ``TRITONGYM_TEST_DEVICE=cuda pytest tests/test_verdicts.py ...``.
"""

from __future__ import annotations

import ast
import ctypes
import os
from pathlib import Path

from tritongym.env import Env
from tritongym.evaluate import EvalConfig, EvalResult, Verdict, evaluate
from tritongym.evaluate.judge import seccomp
from tritongym.problems import Problem, find_problem

CANDIDATES = Path(__file__).parent / "candidates"
DEVICE = os.environ.get("TRITONGYM_TEST_DEVICE", "cpu")
SECOND_SIZE_TRIALS = int(DEVICE == "cpu")
"""The trial a CPU judge adds at a shrunk problem's second size (judge/second_size.py): a problem at
its small sizes has that many trials more than asked for on the CPU, none more on a GPU."""
PROCESSES_REFUSED = seccomp.supported()
"""Whether the tests' runners may not create processes (the runner's seccomp filter, on x86-64, on
every device: a GPU runner's compiler helper runs ptxas; red team 4 #7): a candidate's fork fails
there with EPERM in forward (``runtime_error``) instead of leaving a child for the judge to find
(``hack_threads``) and kill."""


def assert_fork_refused(result: EvalResult) -> None:
    """The candidate's forward tried to fork in a runner that may not: the fork failed with EPERM."""
    assert result.verdict is Verdict.RUNTIME_ERROR, result.feedback
    assert "PermissionError: [Errno 1] Operation not permitted" in result.feedback, result.feedback


def small_problem(name: str) -> Problem:
    return find_problem(name).small()


def run_candidate(
    candidate: str, problem: str = "vector_add", directory: Path = CANDIDATES, env: Env | None = None, **config
) -> EvalResult:
    """Evaluate ``<directory>/<candidate>.py`` (default: tests/candidates) on a bundled problem at its
    small sizes, with the test settings of ``eval_config`` and ``config`` on top: in a sandbox of its
    own, or through ``env`` (a warm pool, as RL uses)."""
    source = (directory / f"{candidate}.py").read_text()
    if env is not None:
        return env.submit(small_problem(problem), source, eval_config(**config)).result()
    return evaluate(small_problem(problem), source, eval_config(**config))


def eval_config(**overrides) -> EvalConfig:
    return EvalConfig(device=DEVICE, trials=2, **({"timing_budget_s": 2.0} | overrides))


def confined(probe, processes: bool = True) -> dict:
    """Run ``probe()`` in a forked child that leads its own session and installed the runner's seccomp
    filter (no_new_privs first, as a runner does; ``processes``: a compiler helper's filter, off: a
    runner's); return what it reports (a literal)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
            seccomp.confine(os.getpid(), processes)
            os.write(write, repr(probe()).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(child, 0)
    return ast.literal_eval(b"".join(chunks).decode())
