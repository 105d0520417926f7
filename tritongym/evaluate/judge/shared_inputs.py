"""A trial's data on a GPU travels through slots the runner maps, not through the socket.

Sent as bytes, every call's inputs cost a copy to the host, the frame, the runner's copy of the
frame and its copy back to the GPU, and the output and the inputs after forward the same way back:
hundreds of milliseconds per call for an input set of a few hundred MB. On a GPU the judge carves
one call's slots instead from the buffers it already shares with runners for timing
(speed.SharedArena, mapped by CUDA IPC) and has the job's runner map them once (``Attach``):

* inputs: before each call (a trial, the fallback and hollow checks: the one before may have
  changed them) the judge copies the call's inputs into the input slots, device to device, and
  synchronises; the runner's forward runs on the slots themselves. After the answer the judge copies
  the slots into memory of its own: those copies are the inputs after forward it judges.
* outputs, where the problem is small enough (memory.answer_on_device) and the reference's output
  is tensors alone (nested in lists, tuples and dicts; a scalar besides would be filled in from the
  reference's): the judge sends the reference's output layout with the slots and, before each call
  that asks for it, fills the output slots with the poison byte. The runner synchronises its device
  after forward (every stream of its context: a kernel left running on another stream is finished),
  copies the output into the output slots where it has that layout (else it sends the output as
  bytes, as on the CPU), synchronises again and answers. Only after the answer does the judge copy
  the output slots into memory of its own, on its own stream, ahead of everything that reads them:
  what the runner writes to a slot after that copy never reaches what is judged, and what it wrote
  before was its output to give. Where the answer stays on the device, the inputs after forward are
  copied on the device too; else to the host.

What the slots hold is the runner's anyway: the call's inputs, which it is given, what its forward
left in them, and its output. Nothing else of the judge's is in the shared buffers. The socket stays
for the CPU, for a call whose inputs (or output) do not fit the slots (another structure, other
values besides tensors, other shapes or dtypes than the first trial's), and for a problem too large
for its answer to stay on the device.
"""

from __future__ import annotations

from typing import Any

import torch

from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.judge.memory import answer_on_device, available_bytes
from tritongym.evaluate.judge.tree import leaves, map_tensors, tensor_leaves
from tritongym.evaluate.result import Verdict


class SharedInputs:
    """One call's slots shared with the job's runner: its inputs' and, where ``output_shape`` is
    set, its output's."""

    def __init__(self, slots: list[torch.Tensor], shape: Any, outputs: list[torch.Tensor] | None = None,
                 output_shape: Any = None, on_device: bool = False):  # fmt: skip
        self.slots, self.shape = slots, shape
        self.outputs = outputs or []
        """The output slots (one call each); empty where outputs come through the socket."""
        self.output_shape = output_shape
        """The reference's output layout (speed.layout); None where outputs come through the socket."""
        self.on_device = on_device
        """Whether the judge's copies of the slots stay on the device (else they go to the host)."""

    @classmethod
    def attach(cls, state, inputs: list, expected: Any = None, on_device: bool = False) -> SharedInputs:
        """Carve one call's slots for inputs like these (and outputs like ``expected``, where given)
        from the shared ``inputs`` and ``outputs`` buffers and have the runner map them. A timing
        batch carves its slots from the same buffers later: a batch of one call (all a batch of a
        large problem holds, speed.SLOT_BYTES) takes the same places, so the buffers the runner
        mapped are not outgrown (an outgrown buffer a runner mapped stays allocated for the judge's
        life); a small problem's first timing batch outgrows them once, and every later job of its
        size fits."""
        from tritongym.evaluate.judge.speed import export, layout, slot_specs

        specs_in, specs_out = slot_specs(inputs, expected if expected is not None else [], 1)
        outputs = state.ctx.arena.carve(specs_out, "outputs") if expected is not None else []
        output_shape = layout(expected) if expected is not None else None
        shared = cls(state.ctx.arena.carve(specs_in, "inputs"), layout(inputs), outputs, output_shape, on_device)
        attach = p.Attach([export(t) for t in shared.slots], [export(t) for t in outputs], shared.shape, [],
                          output_layout=output_shape)  # fmt: skip
        state.ask(attach, (p.Loaded,))
        return shared

    def fits(self, inputs: list) -> bool:
        """Whether every tensor of ``inputs`` has its slot's shape and dtype."""
        return _fits(tensor_leaves(inputs), self.slots)

    def fits_output(self, expected: Any) -> bool:
        """Whether an output like ``expected`` goes into the output slots."""
        from tritongym.evaluate.judge.speed import layout, same_layout

        if self.output_shape is None or not same_layout(layout(expected), self.output_shape):
            return False
        return _fits(tensor_leaves(expected), self.outputs)

    def load(self, inputs: list, poison_outputs: bool = False) -> None:
        """Copy a call's inputs into the slots (and fill the output slots with the poison byte: no
        earlier call's output is left there); the copies are complete when this returns."""
        from tritongym.evaluate.judge.speed import POISON, slot_bytes

        for slot, leaf in zip(self.slots, tensor_leaves(inputs), strict=True):
            slot[0].copy_(leaf)
        if poison_outputs:
            for slot in self.outputs:
                slot_bytes(slot).fill_(POISON)
        if self.slots and self.slots[0].device.type == "cuda":
            torch.cuda.synchronize(self.slots[0].device)

    def read(self) -> list:
        """The inputs as the runner's forward left them: the judge's own copies of the slots (on the
        device where ``on_device``, else on the host), in the inputs' structure, which nothing the
        runner does afterwards changes."""
        from tritongym.evaluate.judge.speed import fill

        return map_tensors(fill(self.shape, [t[0] for t in self.slots]), self._copy)

    def read_output(self) -> Any:
        """The output the runner copied into the output slots: the judge's own copies of them (on the
        device), in the reference's output structure, which nothing the runner does afterwards
        changes."""
        from tritongym.evaluate.judge.speed import fill

        return fill(self.output_shape, [self._copy(t[0]) for t in self.outputs])

    def _copy(self, t: torch.Tensor) -> torch.Tensor:
        # queued on the judge's stream after the runner's answer, ahead of every read of the copy
        return t.clone() if self.on_device else t.to("cpu", copy=True)


def _fits(leaves: list, slots: list) -> bool:
    return len(leaves) == len(slots) and all(
        isinstance(t, torch.Tensor) and t.shape == s.shape[1:] and t.dtype == s.dtype
        for t, s in zip(leaves, slots, strict=True)
    )


def share_inputs(state, inputs: list, expected: Any = None) -> SharedInputs | None:
    """The job's shared slots on a GPU (``expected``, the first trial's reference output, gives the
    output slots where the answer may stay on the device: memory.answer_on_device); None on the CPU
    or where the inputs hold no tensor (everything travels in the messages)."""
    if state.ctx.device.type != "cuda" or not tensor_leaves(inputs):
        return None
    footprint = state.footprint
    available = available_bytes(state.ctx.device)
    on_device = footprint is not None and answer_on_device(footprint, available, state.ctx.answer_limit)
    if not on_device or not all_tensors(expected):
        expected = None
    return SharedInputs.attach(state, inputs, expected, on_device)


def all_tensors(expected: Any) -> bool:
    """Whether an output is tensors alone, in containers (no scalar or None besides): only such an
    output goes into output slots. The judge fills the reference's layout with what the slots hold,
    so a value besides tensors would be the reference's, not the candidate's."""
    found = leaves(expected)
    return bool(found) and all(isinstance(leaf, torch.Tensor) for _, leaf in found)


def inputs_message(shared: SharedInputs | None, cls: type, inputs: list, expected: Any = None, **fields) -> p.Message:
    """A Call, Fallback or Hollow on ``inputs``: loaded into the shared slots where the job has them
    and they fit (the same tensors' shapes, the same values besides tensors: the runner holds the
    layout of the first trial's), else carried in the message. Given ``expected`` (the reference's
    output on them), the runner is asked to answer in the output slots where those fit it."""
    from tritongym.evaluate.judge.speed import layout, same_layout

    if shared is None or not same_layout(layout(inputs), shared.shape) or not shared.fits(inputs):
        return cls(args=inputs, **fields)
    if expected is not None and shared.fits_output(expected):
        fields["out_slots"] = True
    shared.load(inputs, poison_outputs=fields.get("out_slots", False))
    return cls(args=None, in_slots=True, **fields)


def received(shared: SharedInputs | None, asked: p.Message, value: Any, out_slots: bool) -> Any:
    """The output a runner answered ``asked`` with: the judge's own copy of the output slots where
    the runner says it put it there, else the value in its message. Saying so unasked (or with a
    value besides) breaks the protocol: the candidate's crash."""
    if not out_slots:
        return value
    if shared is None or not getattr(asked, "out_slots", False) or value is not None:
        raise Failure(
            Verdict.CRASH,
            "The process broke the sandbox protocol: it answered in output slots it was not asked to use.",
        )
    return shared.read_output()
