"""Evaluate one candidate on one problem: check the text, run the harness in a sandbox, and turn
whatever happened into an EvalResult. Candidate code never runs in this process."""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import signal
import tempfile
from pathlib import Path

from tritongym.errors import ConfigError, SandboxError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.evaluate.sandbox import SandboxOutcome, run_harness, sandbox_env
from tritongym.problems import Problem

FILE_SIZE_LIMIT = 256 << 20
"""Largest file the sandbox may write (RLIMIT_FSIZE)."""
_BEFORE_CANDIDATE = ("start", "setup", "reference")
"""Stages that run no candidate code: a failure there is the infrastructure's, not the candidate's."""


@functools.cache
def _cuda_device_count() -> int:
    import torch  # only to ask; the candidate's process has its own CUDA context

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(device: str) -> tuple[str, dict[str, str]]:
    """('cpu' | 'cuda', extra environment) for a device setting; 'auto' prefers a GPU."""
    if device == "auto":
        device = "cuda" if _cuda_device_count() else "cpu"
    if device == "cpu":
        return "cpu", {}
    count = _cuda_device_count()
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    if index >= count:
        raise ConfigError(f"device {device!r} requested but {count} CUDA device(s) are visible")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    physical = visible.split(",")[index] if visible else str(index)
    return "cuda", {"CUDA_VISIBLE_DEVICES": physical}


def check_source(candidate: str | bytes, max_bytes: int) -> str | EvalResult:
    """The candidate's text, or an ``invalid_source`` result explaining why it cannot be run."""

    def invalid(message: str) -> EvalResult:
        return EvalResult(problem="", verdict=Verdict.INVALID_SOURCE, feedback=message)

    raw = candidate.encode("utf-8", errors="surrogatepass") if isinstance(candidate, str) else candidate
    if len(raw) > max_bytes:
        return invalid(f"The solution is {len(raw)} bytes; at most {max_bytes} are accepted.")
    if b"\0" in raw:
        return invalid("The solution contains NUL bytes: it is binary data, not Python source.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return invalid(f"The solution is not UTF-8 text (invalid byte at offset {exc.start}).")
    if not text.strip():
        return invalid("The solution is empty.")
    return text


def _outcome_result(problem: Problem, outcome: SandboxOutcome, config: EvalConfig) -> EvalResult:
    """Map a sandbox outcome to a result, trusting nothing the sandbox said without checking it."""
    before_candidate = outcome.stage in _BEFORE_CANDIDATE
    where = f"during {outcome.stage}"
    if outcome.result is not None and not outcome.protocol_error:
        try:
            result = EvalResult.from_dict({"problem": problem.name, **outcome.result})
            result.compiled = result.verdict.compiled
            result.correct = result.verdict is Verdict.OK
            return result
        except (TypeError, ValueError, KeyError) as exc:
            outcome.protocol_error = f"the sandbox sent a malformed result ({exc})"
    if before_candidate and not outcome.protocol_error:
        verdict = Verdict.INFRASTRUCTURE_ERROR
        feedback = f"The evaluation failed before the solution was loaded ({where}); not the solution's fault."
        if outcome.timed_out:
            feedback += f" The reference did not finish within {config.timeout_s:g} s."
    elif outcome.timed_out:
        verdict, feedback = Verdict.TIMEOUT, f"Timed out after {config.timeout_s:g} s {where}."
    elif outcome.out_of_memory:
        verdict = Verdict.OUT_OF_MEMORY
        feedback = f"Used more than {config.memory_limit_mb} MiB of host memory {where}."
    elif outcome.protocol_error:
        verdict, feedback = (
            Verdict.CRASH,
            f"The process broke the sandbox protocol {where}: {outcome.protocol_error}.",
        )
    else:
        code = outcome.returncode
        how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
        verdict, feedback = Verdict.CRASH, f"The process died {where} ({how})."
        if code is not None and code < 0 and -code == signal.SIGXFSZ:
            feedback += " It wrote a file larger than the sandbox allows."
    reached = [s for s in outcome.stages_seen if s not in _BEFORE_CANDIDATE]
    return EvalResult(
        problem=problem.name,
        verdict=verdict,
        feedback=feedback,
        compiled=verdict.compiled and any(s.startswith("trial") for s in reached),
    )


def evaluate(problem: Problem, candidate: str | bytes, config: EvalConfig | None = None) -> EvalResult:
    """Evaluate ``candidate`` (Python source defining the solution class) on ``problem``."""
    config = config or EvalConfig()
    checked = check_source(candidate, config.max_source_bytes)
    if isinstance(checked, EvalResult):
        checked.problem = problem.name
        return checked
    device, device_env = resolve_device(config.device)
    workdir = Path(tempfile.mkdtemp(prefix="tritongym-"))
    try:
        candidate_path = workdir / "solution.py"
        candidate_path.write_text(checked, encoding="utf-8")
        job = {
            "problem_source": problem.source,
            "entry_point": problem.entry_point,
            "solution_class": problem.solution_class,
            "candidate_path": str(candidate_path),
            "workdir": str(workdir),
            "device": device,
            "trials": config.trials,
            "seeds": [secrets.randbits(63) for _ in range(config.trials + 1)],
            "tolerance": config.tolerance,
            "error_factor": config.error_factor,
            "abs_floor": config.abs_floor,
            "atol": config.atol,
            "rtol": config.rtol,
            "memory_limit_mb": config.memory_limit_mb,
            "file_size_limit": FILE_SIZE_LIMIT,
        }
        env = sandbox_env(workdir, interpret=device == "cpu", extra=device_env)
        try:
            outcome = run_harness(
                job, workdir, env, config.timeout_s, config.memory_limit_mb << 20, config.output_limit_bytes
            )
        except SandboxError as exc:
            return EvalResult(problem=problem.name, verdict=Verdict.INFRASTRUCTURE_ERROR, feedback=str(exc))
        result = _outcome_result(problem, outcome, config)
        result.stdout, result.stderr = outcome.stdout, outcome.stderr
        result.stage_seconds.setdefault("sandbox_wall", round(outcome.wall_s, 4))
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
