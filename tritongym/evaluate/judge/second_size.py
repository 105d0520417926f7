"""One trial at a second size, where the problem's sizes were shrunk (the CPU judges them so).

A problem shrunk for Triton's interpreter is judged at one small size, the one its prompt shows. A
kernel sized for that size alone (a block that covers a row of it with one program, a grid or an
unmasked tile fitted to it, a constant baked from the shape the constructor saw) is right there and
wrong at the full size a GPU judges: every CPU run would pay it as correct. So the judge runs one
trial more at the problem's second size (``Problem.resized``: each shrunk constant at another value
between its small and its full one, sharing what those two share), with its own reference, its own
inputs and a model built for it (the solution's constructor under that reference's seed, as for the
first). A problem whose reference cannot run at the second size is judged at its own size alone (its
last trial at that size), and says so in a finding.

The judge draws the second size itself (``SECOND_SIZE_DRAW``), after the trials at the problem's own
size and above how far their launches reached (``Output.reach``, red team 24): one block of 4096 over
1000 elements covered every second size of the pool's draw (1032..4088), and not the full 16,777,216.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from pathlib import Path

import torch

from tritongym.evaluate.compare import Tolerance
from tritongym.evaluate.judge.feedback import Failure, short
from tritongym.evaluate.judge.memory import is_out_of_memory, nbytes
from tritongym.evaluate.judge.reference import Reference, Trial
from tritongym.evaluate.judge.tree import tensor_leaves
from tritongym.problems import Problem
from tritongym.problems.sizes import SECOND_SIZE_COVER_FREE, SECOND_SIZE_COVER_MAX, second_sizes

SECOND_SIZE_DRAW = secrets.SystemRandom()
"""Where each job's second size is drawn: the operating system's randomness, as the judge's seeds, in
the judge's process (a rule the candidate could follow would let it hard-wire the second size beside
the first; a runner never holds it before that trial's inputs)."""

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

    def allowance(self, one_trial_s: float, first: Trial, timeout_s: float, judge_s: float = 0.0) -> float:
        """Seconds the job's deadline grows by before this trial, which ``one_trial_s`` (a trial at the
        problem's own size, ``first``) does not count: the timeout is the problem's, at the size it
        shows, and the trial more a check of the judge's (honest4: a slow honest matmul of a 2048 x
        2048 output, within the timeout at one size, timed out at the second's four times the
        elements), and ``judge_s``, the judge's own work for it (the draw, this reference), in the job
        since it comes after the first trials. It follows the size drawn: at most ``timeout_s``, so
        the job takes at most twice its timeout."""
        size = nbytes(first.inputs) + nbytes(first.expected)
        ratio = (nbytes(self.trial.inputs) + nbytes(self.trial.expected)) / max(size, 1)
        return min(SECOND_TRIAL_TIME * max(ratio, 1.0) * one_trial_s + max(judge_s, 0.0), timeout_s)

    def note(self) -> str:
        """What the feedback of a failure at the second size adds."""
        return (
            f" (This trial ran at other sizes than the problem shows: {self.sizes}. A kernel must be right at "
            "every size of the problem, the full one included, not only at the one it was shown.)"
        )


def has_second_size(source: str, shrunk: dict) -> bool:
    """Whether a problem at its small sizes (``source``, ``shrunk``: name -> (full, small)) has a second
    size to draw (static: nothing is run)."""
    try:
        return bool(shrunk) and bool(second_sizes(source, {k: tuple(v) for k, v in shrunk.items()}))
    except Exception:  # a problem whose sizes cannot be read is judged at its own size
        return False


ROLES = ("input", "output", "other")
"""What a tensor reached past is to forward (``Output.reach``)."""
REDRAWS = 3
"""Draws at most where one leaves a tensor reached past within what its launches reached (the inputs'
growth is the cover's measure, not each tensor's): each next one covers what the last missed."""


def reaches(told: object) -> list[tuple[str, int, float]]:
    """The runner's ``Output.reach``, what of it is well formed: (role, index, reach) with a finite reach
    above ``SECOND_SIZE_COVER_FREE`` (a block fitted to its tensor reaches less)."""
    found = []
    for entry in told if isinstance(told, list) else []:
        if not (isinstance(entry, list) and len(entry) == 3):
            continue
        role, index, ratio = entry
        well_formed = role in ROLES and type(index) is int and type(ratio) is float and math.isfinite(ratio)
        if well_formed and ratio > SECOND_SIZE_COVER_FREE:
            found.append((role, index, ratio))
    return found[:64]


def merged(before: list[tuple[str, int, float]], told: object) -> list[tuple[str, int, float]]:
    """The reaches so far and a trial's (``reaches``), the largest for each tensor."""
    best: dict[tuple[str, int], float] = {}
    for role, index, ratio in [*before, *reaches(told)]:
        best[(role, index)] = max(best.get((role, index), 0.0), ratio)
    return [(role, index, ratio) for (role, index), ratio in best.items()]


def sized_by(shape: list[int], shrunk: dict) -> set[str]:
    """The shrunk constants whose small value is a dimension of ``shape`` (what sizes that tensor)."""
    return {name for name, (_, small) in shrunk.items() for dim in shape if dim == small}


def growing(reach: list[tuple[str, int, float]], shapes: dict, shrunk: dict) -> set[str]:
    """The constants a cover grows first: those that size every input and output tensor reached past
    (growing them grows each: an output of ``batch_size`` rows and an input of ``batch_size x dim``
    reached past both grow by ``batch_size``), else those of the one reached past most; none where
    no tensor of forward's was reached past (an intermediate: the batch is left at its floor)."""
    sets = []
    for role, index, _ in sorted(reach, key=lambda entry: -entry[2]):
        if 0 <= index < len(shapes.get(role, [])):
            found = sized_by(shapes[role][index], shrunk)
            if found:
                sets.append(found)
    if not sets:
        return set()
    return set.intersection(*sets) or sets[0]


def drawn_problem(
    source: str, entry_point: str, shrunk: dict, cover: float = 0.0, grow: set[str] = frozenset()
) -> Problem | None:
    """The problem at a second size drawn now from ``SECOND_SIZE_DRAW``, above ``cover`` (how far the
    first trials' launches reached past a tensor: ``sizes.second_sizes``), growing ``grow`` first, or None
    where it has none."""
    pairs = {name: (int(full), int(small)) for name, (full, small) in shrunk.items()}
    return Problem("job", source, entry_point, shrunk=pairs).resized(SECOND_SIZE_DRAW, cover, grow)


def uncovered(reach: list[tuple[str, int, float]], shapes: dict, trial: Trial) -> float:
    """How much more the inputs must grow for every input and output tensor reached past to hold more
    elements at the second size (``trial``) than its launches reached at the small size (``shapes``:
    role -> each tensor's shape there): below 1 where each does (0 where none was reached past)."""
    now = {"input": tensor_leaves(trial.inputs), "output": tensor_leaves(trial.expected)}
    short_by = 0.0
    for role, index, ratio in reach:
        if role in now and index < min(len(now[role]), len(shapes.get(role, []))):
            needed = ratio * math.prod(shapes[role][index])
            short_by = max(short_by, needed / max(now[role][index].numel(), 1))
    return short_by


def second_size(
    source: str,
    entry_point: str,
    shrunk: dict,
    reach: list[tuple[str, int, float]],
    shapes: dict,
    path: Path,
    device: torch.device,
    float64: bool,
) -> tuple[SecondSize | None, str]:
    """The problem drawn at its second size now, above ``reach`` (``reaches``: what the trials at the small
    size, of ``shapes``, reached), its reference and its trial, from fresh secret seeds; or None and why,
    where it has none or the reference itself fails there (a size the problem's own code does not allow:
    nothing the candidate did). The cover is the largest reach, growing first the constants that size
    the tensors reached past (``growing``); a draw leaving an input or output tensor within what was reached of it
    is drawn again above it (``REDRAWS``). One still within its reach (the CPU's bound, the full size)
    comes back as the note, with the trial."""
    cover = max((ratio for _, _, ratio in reach), default=0.0)
    grow = growing(reach, shapes, shrunk)
    for attempt in range(1, REDRAWS + 1):
        try:
            problem = drawn_problem(source, entry_point, shrunk, cover, grow)
        except Exception as exc:
            return None, f"no second size could be drawn ({short(exc)})"
        if problem is None:
            return None, "no second size could be drawn"
        sizes = problem.size_notice
        try:
            torch.manual_seed(secrets.randbits(63))
            reference = Reference(problem.source, entry_point, path, device, float64=float64)
            trial = reference.trial(secrets.randbits(63))
        except Failure as failure:
            return None, f"the reference failed at the second size ({sizes}: {failure.feedback})"
        except Exception as exc:
            if is_out_of_memory(exc):
                raise
            return None, f"the reference failed at the second size ({sizes}: {short(exc)})"
        short_by = uncovered(reach, shapes, trial)
        if short_by < 1.0 or attempt == REDRAWS or cover >= SECOND_SIZE_COVER_MAX / 2:
            break
        cover *= short_by * 1.05  # the inputs' growth that would take that tensor past its reach
        reference = trial = None
    note = ""
    if short_by >= 1.0:  # a tensor of forward's still within its launches' reach: at the CPU's bound, or the full size
        note = (
            f"a tensor of forward's is still within what its launches reached at the small size at the second "
            f"size ({sizes}; the CPU grows the inputs {SECOND_SIZE_COVER_MAX} times at most): a block that "
            "covers it is not seen"
        )
    return SecondSize(reference, trial, sizes), note
