"""Correctness trials, judge side: every trial's inputs are fresh, the runner gets copies, and its
output and inputs afterwards are compared here, in the judge's own memory, with the reference's.
The runner's guard report decides the hack verdicts it can see (see docs/environment.md for which
of them the candidate could forge)."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

import torch

from tritongym.evaluate.compare import Tolerance, compare_outputs
from tritongym.evaluate.guards import HOST_CODE, unwritten_elements
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.judge.reference import Trial
from tritongym.evaluate.judge.tree import map_tensors, tensor_leaves
from tritongym.evaluate.result import ErrorStats, Verdict

TEXT_DECIDED = (Verdict.INVALID_SOURCE, Verdict.SYNTAX_ERROR, Verdict.HACK_FORBIDDEN_API)
"""Verdicts the judge gives from the candidate's text alone, before any of it runs: a runner never
has one to report, and one it claimed would be cached by the service as if the text decided it (the
service serves these from its cache to every identical submission: env/store.py's TEXT_VERDICTS)."""
CANDIDATE_VERDICTS = frozenset(
    v for v in Verdict if v not in (Verdict.OK, Verdict.INFRASTRUCTURE_ERROR, Verdict.TIMEOUT, *TEXT_DECIDED)
)
"""Verdicts a runner may report about itself; anything else it claims is a broken protocol."""


@dataclass
class TrialsOutcome:
    verdict: Verdict
    feedback: str
    passed: int
    errors: ErrorStats | None = None
    compute: collections.Counter = field(default_factory=collections.Counter)
    bounds: list[float | None] = field(default_factory=list)
    """Per output tensor, what a timed call's output may differ from the reference's (compare.Comparison)."""


def runner_failure(message: p.Failed, where: str) -> Failure:
    """A failure the runner reported about its candidate, if it is one a candidate can have."""
    try:
        verdict = Verdict(message.verdict)
    except ValueError:
        verdict = None
    if verdict not in CANDIDATE_VERDICTS:
        return Failure(
            Verdict.CRASH, f"The process broke the sandbox protocol {where}: it claimed {message.verdict!r}."
        )
    return Failure(verdict, message.feedback[:4000].replace("{where}", where, 1), message.detail[:8000])


def _same(a: torch.Tensor, b: Any) -> bool:
    if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    b = b.to(a.device)
    return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all()) if a.numel() else True


def _mover(device):
    return lambda t: t.to(device)


def input_mutation(trial: Trial, after: Any, tolerance: Tolerance) -> str | None:
    """Why the candidate's inputs after forward are wrong, or None. Where the reference leaves an
    input unchanged the candidate must too; where the reference changes it in place (an in-place
    activation), the candidate's must either be unchanged or hold what the reference's holds."""
    if not isinstance(after, list) or len(after) != len(trial.inputs):
        return "forward's inputs came back in another structure than they were given"
    for i, (before, ref_after, got) in enumerate(zip(trial.inputs, trial.inputs_after, after, strict=True)):
        if not isinstance(before, torch.Tensor):
            continue
        if _same(before, got):
            continue
        if _same(before, ref_after):
            return f"forward modified its input argument {i} in place; the reference leaves it unchanged"
        ref64 = trial.inputs_after64[i] if trial.inputs_after64 is not None else None
        moved = map_tensors(got, _mover(before.device))
        if not compare_outputs(moved, ref_after, ref64, tolerance).ok:
            return (
                f"forward modified its input argument {i} in place differently from the reference, which also "
                "changes it in place"
            )
    return None


def check_output(
    n: int, total: int, trial: Trial, out: p.Output, runner_children: list[int], tolerance: Tolerance
) -> TrialsOutcome | None:
    """The verdict of one trial's answer (raises Failure for hacks; a failed comparison returns)."""
    if out.tampering:
        raise Failure(
            Verdict.HACK_TAMPERING, f"Trial {n}: the solution tampered with the judge: {'; '.join(out.tampering)}."
        )
    stray = list(out.threads) + (["child processes still running"] if runner_children else [])
    if stray:
        raise Failure(
            Verdict.HACK_THREADS,
            f"Trial {n}: {'; '.join(map(str, stray))} (seen when forward returned). Forward must do its work on its "
            "own thread and leave nothing running.",
        )
    if out.launches == 0:
        marker = HOST_CODE.split("{", 1)[0]
        refused = [str(name) for name in out.compute if marker in str(name)][:3]
        why = f" Not counted as its own: {'; '.join(refused)}." if refused else ""
        raise Failure(
            Verdict.HACK_NO_TRITON,
            f"Trial {n}: forward launched none of the solution's own @triton.jit kernels; the work must "
            f"be done by Triton kernels defined in the solution.{why}",
        )
    if out.off_stream:
        ops = ", ".join(map(str, out.off_stream_ops)) or "Triton kernels"
        raise Failure(
            Verdict.HACK_SIDE_STREAM,
            f"Trial {n}: forward issued GPU work ({ops}) on another CUDA stream than the one it was called on; "
            "that work is outside the timed window. Launch everything on the current stream.",
        )
    changed = input_mutation(trial, out.inputs_after, tolerance)
    if changed:
        raise Failure(Verdict.HACK_INPUT_MUTATION, f"Trial {n}: {changed}.")
    if out.alias and out.alias != trial.alias:
        raise Failure(
            Verdict.HACK_OUTPUT_ALIAS,
            f"Trial {n}: an output shares memory with {out.alias}; return freshly allocated outputs.",
        )
    device = trial.inputs[0].device if trial.inputs and isinstance(trial.inputs[0], torch.Tensor) else None
    got = out.value  # as read (the host) or copied (the device): the comparison moves it a chunk at a time
    comparison = compare_outputs(got, trial.expected, trial.expected64, tolerance)
    if not comparison.ok and device is not None and device.type == "cuda":
        unwritten = _unwritten(got, trial.expected)
        if unwritten:
            raise Failure(
                Verdict.UNINITIALIZED_OUTPUT,
                f"Trial {n}: {unwritten} were never written (they still hold the NaN/0xFF poison tritongym fills "
                "free GPU memory with). Write every element of every output.",
            )
    if not comparison.ok:
        return TrialsOutcome(comparison.verdict, f"Trial {n} of {total}: {comparison.message}", n - 1, comparison.stats)
    return TrialsOutcome(Verdict.OK, "", n, comparison.stats, bounds=comparison.bounds)


def _unwritten(got: Any, expected: Any) -> str:
    """'k of n elements of output[i]' for the first output still holding the poison, or ''."""
    got_leaves, expected_leaves = tensor_leaves(got), tensor_leaves(expected)
    if len(got_leaves) != len(expected_leaves):
        return ""
    for i, (g, e) in enumerate(zip(got_leaves, expected_leaves, strict=True)):
        count = unwritten_elements(g, e)
        if count:
            name = "the output" if len(got_leaves) == 1 else f"output[{i}]"
            return f"{count} of {g.numel()} elements of {name}"
    return ""
