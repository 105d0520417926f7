"""A large trial's inputs on a GPU travel through slots the runner maps, not through the socket.

Sent as bytes, every call on a trial's inputs costs a copy to the host, the frame, the runner's
copy of the frame and its copy back to the GPU, and the inputs after forward the same way back: about
``3 I`` of host memory in each process and seconds per GiB. Where one input set is
``SHARED_INPUT_BYTES`` or more, the judge copies the inputs into input slots of one call instead,
carved from the buffer of input slots it already shares with runners for timing (speed.SharedArena,
mapped by CUDA IPC), before each call (a trial, the fallback and hollow checks: the one before may have changed
them); the runner's forward runs on the slots themselves, and after its answer the judge copies the
slots to its own host memory: those copies are the inputs after forward it judges, whatever the
runner writes to the slots later. The output still comes as bytes (a copy in the slot would cost the
GPU the output's size once more).

What the slots hold is the runner's anyway: the trial's inputs, which it is given, and what its
forward left in them. Nothing else of the judge's is in the shared buffer.
"""

from __future__ import annotations

from typing import Any

import torch

from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.memory import nbytes
from tritongym.evaluate.judge.tree import map_tensors, tensor_leaves

SHARED_INPUT_BYTES = 1 << 30
"""Input sets of this many bytes or more go through shared slots on a GPU (below it, the socket's
copies cost less than carving and mapping the slots)."""


class SharedInputs:
    """One call's input slots, shared with the job's runner."""

    def __init__(self, slots: list[torch.Tensor], shape: Any):
        self.slots, self.shape = slots, shape

    @classmethod
    def attach(cls, state, inputs: list) -> SharedInputs:
        """Carve the slots for inputs like these from the shared ``inputs`` buffer and have the
        runner map them. A timing batch of one call (all a batch of inputs this large holds,
        speed.SLOT_BYTES) carves the same slots there later: the buffer the runner mapped is not
        outgrown (an outgrown buffer a runner mapped would stay allocated for the judge's life)."""
        from tritongym.evaluate.judge.speed import export, layout, slot_specs

        specs, _ = slot_specs(inputs, [], 1)
        shared = cls(state.ctx.arena.carve(specs, "inputs"), layout(inputs))
        state.ask(p.Attach([export(t) for t in shared.slots], [], shared.shape, []), (p.Loaded,))
        return shared

    def fits(self, inputs: list) -> bool:
        """Whether every tensor of ``inputs`` has its slot's shape and dtype."""
        leaves = tensor_leaves(inputs)
        return len(leaves) == len(self.slots) and all(
            t.shape == s.shape[1:] and t.dtype == s.dtype for t, s in zip(leaves, self.slots, strict=True)
        )

    def load(self, inputs: list) -> None:
        """Copy a call's inputs into the slots; the copy is complete when this returns."""
        for slot, leaf in zip(self.slots, tensor_leaves(inputs), strict=True):
            slot[0].copy_(leaf)
        if self.slots and self.slots[0].device.type == "cuda":
            torch.cuda.synchronize(self.slots[0].device)

    def read(self) -> list:
        """The inputs as the runner's forward left them: host copies of the slots, in the inputs'
        structure, which nothing the runner does afterwards changes."""
        from tritongym.evaluate.judge.speed import fill

        return map_tensors(fill(self.shape, [t[0] for t in self.slots]), lambda t: t.to("cpu", copy=True))


def share_inputs(state, inputs: list) -> SharedInputs | None:
    """The job's shared input slots, where its input sets are large and it runs on a GPU; else None
    (the inputs travel in the messages)."""
    if state.ctx.device.type != "cuda" or nbytes(inputs) < SHARED_INPUT_BYTES:
        return None
    return SharedInputs.attach(state, inputs)


def inputs_message(shared: SharedInputs | None, cls: type, inputs: list, **fields) -> p.Message:
    """A Call, Fallback or Hollow on ``inputs``: loaded into the shared slots where the job has them
    and they fit (the same tensors' shapes, the same values besides tensors: the runner holds the
    layout of the first trial's), else carried in the message."""
    from tritongym.evaluate.judge.speed import layout

    if shared is None or layout(inputs) != shared.shape or not shared.fits(inputs):
        return cls(args=inputs, **fields)
    shared.load(inputs)
    return cls(args=None, in_slots=True, **fields)
