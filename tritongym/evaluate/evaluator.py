"""Evaluate one candidate on one problem: check the text, hand it to a judge in a sandbox, and turn
whatever happened into an EvalResult. Candidate code never runs in this process, nor in the judge's."""

from __future__ import annotations

import functools
import os
import signal
import time

from tritongym.errors import ConfigError, SandboxError
from tritongym.evaluate.config import EvalConfig
from tritongym.evaluate.judge.work_queues import LAUNCH_QUEUE_SCALE, LAUNCH_QUEUE_SCALE_ENV
from tritongym.evaluate.result import EvalResult, Verdict
from tritongym.evaluate.sandbox import BEFORE_CANDIDATE, Sandbox, SandboxOutcome
from tritongym.problems import Problem

MAX_ATTEMPTS = 3
"""Tries of a job lost through no fault of the candidate before it is an infrastructure error."""


@functools.cache
def cuda_device_count() -> int:
    import torch  # only to ask; the candidate's process has its own CUDA context

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(device: str) -> tuple[str, dict[str, str]]:
    """('cpu' | 'cuda', extra environment) for a device setting; 'auto' prefers a GPU. A GPU's judge gets
    the pool's default launch queue scale (work_queues.LAUNCH_QUEUE_SCALE), so that one evaluation times a
    forward of many launches as a pool's judge does."""
    if device == "auto":
        device = "cuda" if cuda_device_count() else "cpu"
    if device == "cpu":
        return "cpu", {}
    count = cuda_device_count()
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    if index >= count:
        raise ConfigError(f"device {device!r} requested but {count} CUDA device(s) are visible")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    physical = visible.split(",")[index] if visible else str(index)
    return "cuda", {"CUDA_VISIBLE_DEVICES": physical, LAUNCH_QUEUE_SCALE_ENV: LAUNCH_QUEUE_SCALE}


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


def outcome_result(problem: Problem, outcome: SandboxOutcome, config: EvalConfig) -> EvalResult:
    """Map a sandbox outcome to a result, trusting nothing the sandbox said without checking it."""
    before_candidate = outcome.stage in BEFORE_CANDIDATE
    where = f"during {outcome.stage}"
    if outcome.result is not None and not outcome.protocol_error:
        try:
            result = EvalResult.from_dict({"problem": problem.name, **outcome.result})
            past_import = any(s not in (*BEFORE_CANDIDATE, "import") for s in outcome.stages_seen)
            result.compiled = result.verdict.compiled and past_import
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
    elif outcome.out_of_memory:  # the judge's processes (runners are the judge's to watch): not the candidate's
        verdict = Verdict.INFRASTRUCTURE_ERROR
        feedback = (
            f"The judge used more than {outcome.host_limit >> 20} MiB of host memory {where}: the problem does not "
            "fit in the host memory the sandbox allows (raise memory_limit_mb); not the solution's fault."
        )
    elif outcome.protocol_error:
        verdict, feedback = Verdict.CRASH, f"The process broke the sandbox protocol {where}: {outcome.protocol_error}."
    else:
        code = outcome.returncode
        how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
        verdict, feedback = Verdict.CRASH, f"The process died {where} ({how})."
        if code is not None and code < 0 and -code == signal.SIGXFSZ:
            feedback += " It wrote a file larger than the sandbox allows."
    reached = [s for s in outcome.stages_seen if s not in BEFORE_CANDIDATE]
    return EvalResult(
        problem=problem.name,
        verdict=verdict,
        feedback=feedback,
        compiled=verdict.compiled and any(s.startswith("trial") for s in reached),
    )


def build_job(problem: Problem, source: str, config: EvalConfig) -> dict:
    """The judge's job for one evaluation (the judge draws the secret seeds itself). A shrunk problem
    comes with what was shrunk (``Problem.shrunk``), from which a judge without a GPU draws a second size
    of its own, in secret, after the trials at the problem's own size (judge/second_size.py)."""
    return {
        "problem_source": problem.source,
        "shrunk": {name: list(pair) for name, pair in problem.shrunk.items()},
        "entry_point": problem.entry_point,
        "solution_class": problem.solution_class,
        "candidate_source": source,
        "trials": config.trials,
        "tolerance": config.tolerance,
        "error_factor": config.error_factor,
        "scale_floor": config.scale_floor,
        "atol": config.atol,
        "rtol": config.rtol,
        "memory_limit_mb": config.memory_limit_mb,
        "torch_compute": config.torch_compute,
        "static_checks": config.static_checks,
        "timing": config.timing,
        "baseline": config.baseline,
        "timing_target": config.timing_target,
        "timing_budget_s": config.timing_budget_s,
        "profile": config.profile,
    }


def evaluate_in(
    sandbox: Sandbox, problem: Problem, candidate: str | bytes, config: EvalConfig, attempts: int = MAX_ATTEMPTS
) -> EvalResult:
    """Evaluate in a given (warm) sandbox. A job lost through no fault of the candidate (the process
    killed from outside, or a sandbox that cannot start) is retried in a fresh process, at most
    ``attempts`` times in all, then reported as ``infrastructure_error``."""
    checked = check_source(candidate, config.max_source_bytes)
    if isinstance(checked, EvalResult):
        checked.problem = problem.name
        return checked
    why = ""
    for _ in range(attempts):
        start_s = 0.0
        try:
            if not sandbox.alive:
                started = time.monotonic()
                sandbox.start()
                start_s = time.monotonic() - started
            if sandbox.info.get("unusable"):
                return EvalResult(
                    problem=problem.name,
                    verdict=Verdict.INFRASTRUCTURE_ERROR,
                    feedback=f"This machine cannot evaluate on {sandbox.device}: {sandbox.info['unusable']}.",
                )
            outcome = sandbox.run(
                build_job(problem, checked, config),
                config.timeout_s,
                config.memory_limit_mb << 20,
                config.output_limit_bytes,
            )
        except SandboxError as exc:
            why = str(exc)
            continue
        if outcome.lost:
            why = f"the sandbox process was killed from outside during {outcome.stage}"
            continue
        result = outcome_result(problem, outcome, config)
        if outcome.result is None:
            result.stderr = outcome.stderr
        result.stage_seconds["sandbox_wall"] = round(outcome.wall_s, 4)
        if start_s:
            result.stage_seconds["sandbox_start"] = round(start_s, 4)
        return result
    return EvalResult(
        problem=problem.name,
        verdict=Verdict.INFRASTRUCTURE_ERROR,
        feedback=f"The evaluation was lost {attempts} times ({why}); not the solution's fault.",
    )


def evaluate(problem: Problem, candidate: str | bytes, config: EvalConfig | None = None) -> EvalResult:
    """Evaluate ``candidate`` (Python source defining the solution class) on ``problem`` in a
    sandbox of its own. For many candidates, an Env (tritongym.env) reuses warm sandboxes."""
    config = config or EvalConfig()
    device, device_env = resolve_device(config.device)
    with Sandbox(device, device_env) as sandbox:  # no process until evaluate_in needs one
        return evaluate_in(sandbox, problem, candidate, config)
