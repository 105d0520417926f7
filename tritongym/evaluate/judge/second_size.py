"""One trial at a second size, where the problem's sizes were shrunk (the CPU judges them so).

A problem shrunk for Triton's interpreter is judged at one small size, the one its prompt shows. A
kernel sized for that size alone (a block that covers a row of it with one program, a grid or an
unmasked tile fitted to it, a constant baked from the shape the constructor saw) is right there and
wrong at the full size a GPU judges: every CPU run would pay it as correct. So the judge runs one
trial more at the problem's second size (``Problem.resized``: each shrunk constant at another value
between its small and its full one, sharing what those two share), with its own reference, its own
inputs and a model built for it (the solution's constructor under that reference's seed, as for the
first). A problem whose reference cannot run at the second size is judged at its own size alone, and
says so in a finding.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import torch

from tritongym.evaluate.compare import Tolerance
from tritongym.evaluate.judge.feedback import Failure, short
from tritongym.evaluate.judge.memory import is_out_of_memory, nbytes
from tritongym.evaluate.judge.reference import Reference, Trial

SECOND_TRIAL_TIME = 2.0
"""The time the second size's trial is allowed beyond the job's timeout, in trials at the problem's
own size, per time its inputs and output hold as many bytes as theirs: a contraction's work grows
faster than its elements (a matmul's by 8 where they grow by 4)."""


@dataclass
class SecondSize:
    """The reference at the second size and its one trial."""

    reference: Reference
    trial: Trial
    sizes: str
    """What the second size changed (``dim 100->132``)."""

    def tolerance(self, tolerance: Tolerance) -> Tolerance:
        """The trial's tolerance: the job's, fixed where this reference has no float64 output."""
        if self.reference.float64_note and tolerance.policy != "fixed":
            return Tolerance("fixed", atol=tolerance.atol, rtol=tolerance.rtol)
        return tolerance

    def allowance(self, one_trial_s: float, first: Trial, timeout_s: float) -> float:
        """Seconds the job's deadline grows by before this trial, which ``one_trial_s`` (a trial at the
        problem's own size, ``first``) does not count: the timeout is the problem's, at the size it
        shows, and the trial more a check of the judge's (honest4: a slow honest matmul of a 2048 x
        2048 output, within the timeout at one size, timed out at the second's four times the
        elements). At most ``timeout_s``: the job takes at most twice its timeout."""
        size = nbytes(first.inputs) + nbytes(first.expected)
        ratio = (nbytes(self.trial.inputs) + nbytes(self.trial.expected)) / max(size, 1)
        return min(SECOND_TRIAL_TIME * max(ratio, 1.0) * one_trial_s, timeout_s)

    def note(self) -> str:
        """What the feedback of a failure at the second size adds."""
        return (
            f" (This trial ran at other sizes than the problem shows: {self.sizes}. A kernel must be right at "
            "every size of the problem, the full one included, not only at the one it was shown.)"
        )


def second_size(
    source: str, entry_point: str, sizes: str, path: Path, device: torch.device, float64: bool
) -> tuple[SecondSize | None, str]:
    """The reference of ``source`` (the problem at its second size) and its trial, from fresh secret
    seeds; or None and why, where the reference itself fails there (a size the problem's own code
    does not allow: nothing the candidate did)."""
    try:
        torch.manual_seed(secrets.randbits(63))
        reference = Reference(source, entry_point, path, device, float64=float64)
        return SecondSize(reference, reference.trial(secrets.randbits(63)), sizes), ""
    except Failure as failure:
        return None, f"the reference failed at the second size ({sizes}: {failure.feedback})"
    except Exception as exc:
        if is_out_of_memory(exc):
            raise
        return None, f"the reference failed at the second size ({sizes}: {short(exc)})"
