"""The timing slots the judge shares with a runner are carved from one buffer (speed.carve_slots):
every slot has its leaf's shape and strides, a transposed input included, and no two overlap."""

import contextlib
from types import SimpleNamespace

import pytest
import torch

from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge import shared_inputs, speed
from tritongym.evaluate.judge.speed import carve_slots, carved_bytes, slot_specs
from tritongym.evaluate.judge.tree import tensor_leaves


def test_slots_of_every_layout_are_disjoint_and_shaped_like_their_leaves():
    inputs = [torch.randn(6, 5).t(), torch.randn(6, 10)[:, ::2], torch.arange(7, dtype=torch.int64)]
    outputs = (torch.randn(5, 7), torch.zeros(3, dtype=torch.float16))  # 140 and 6 bytes a call
    specs_in, specs_out = slot_specs(inputs, outputs, count=3)
    specs = specs_in + specs_out
    buffer = torch.zeros(carved_bytes(specs, 512), dtype=torch.uint8)
    slots = carve_slots(buffer, specs, 512)
    for slot, leaf in zip(slots[:3], inputs, strict=True):
        assert slot.shape == (3, *leaf.shape) and slot[1].stride() == leaf.stride() and slot.dtype == leaf.dtype
    for slot, leaf in zip(slots[3:], outputs, strict=True):
        assert slot.shape == (3, *leaf.shape) and slot[2].is_contiguous() and slot.dtype == leaf.dtype
    owner = torch.full((buffer.numel(),), -1)  # which slot element wrote each byte
    for n, slot in enumerate(slots):
        for k in range(3):
            for index in torch.cartesian_prod(*[torch.arange(s) for s in slot[k].shape]).reshape(-1, slot[k].dim()):
                element = slot[k][tuple(index.tolist())]
                start = element.data_ptr() - buffer.data_ptr()
                span = owner[start : start + element.element_size()]
                assert bool((span == -1).all()), f"slot {n} call {k} overlaps another element"
                span.fill_(n * 100 + k)
            # every call's element is aligned as a tensor of its own would be (fair to the candidate)
            assert (slot[k].data_ptr() - buffer.data_ptr()) % speed.CALL_ALIGN == 0


# --- a large trial's inputs through shared slots (shared_inputs.py), with CPU tensors for the GPU's --


class FakeArena:
    """SharedArena's carve on CPU buffers."""

    def __init__(self):
        self.parts = []

    def carve(self, specs, part):
        self.parts.append(part)
        return carve_slots(torch.zeros(carved_bytes(specs, 512), dtype=torch.uint8), specs, 512)


def fake_state(device: str):
    asked = []
    ctx = SimpleNamespace(device=torch.device(device), arena=FakeArena())
    return SimpleNamespace(ctx=ctx, ask=lambda message, expect: asked.append(message)), asked


@pytest.fixture
def shared(monkeypatch):
    monkeypatch.setattr(speed, "export", lambda t: ["handle", list(t.shape)])
    monkeypatch.setattr(shared_inputs, "SHARED_INPUT_BYTES", 64)
    state, asked = fake_state("cuda")
    inputs = [torch.randn(4, 5).t(), 3, torch.arange(6)]
    return shared_inputs.share_inputs(state, inputs), asked, inputs


def test_small_inputs_and_the_cpu_keep_the_socket():
    big = [torch.zeros(shared_inputs.SHARED_INPUT_BYTES // 4 + 1)]
    assert shared_inputs.share_inputs(fake_state("cpu")[0], big) is None
    assert shared_inputs.share_inputs(fake_state("cuda")[0], [torch.zeros(16)]) is None
    message = shared_inputs.inputs_message(None, p.Call, big, poison=True)
    assert message.args is big and not message.in_slots and message.poison


def test_the_runner_maps_one_calls_input_slots_and_no_events(shared):
    _, asked, _ = shared
    (attach,) = asked
    assert isinstance(attach, p.Attach) and attach.outputs == [] and attach.events == []
    assert attach.inputs == [["handle", [1, 5, 4]], ["handle", [1, 6]]]
    assert attach.layout == [{"slot": 0}, 3, {"slot": 1}]


def test_a_call_loads_the_slots_and_the_judge_judges_its_own_copy_of_them(shared):
    slots, _, inputs = shared
    message = shared_inputs.inputs_message(slots, p.Call, inputs, poison=True)
    assert message.args is None and message.in_slots and message.poison
    assert torch.equal(slots.slots[0][0], inputs[0]) and torch.equal(slots.slots[1][0], inputs[2])
    slots.slots[1][0].add_(1)  # forward changed an input in place
    after = slots.read()
    assert after[1] == 3 and torch.equal(after[0], inputs[0]) and torch.equal(after[2], inputs[2] + 1)
    slots.slots[1][0].zero_()  # the runner keeps writing after its answer: the judge's copy stays
    slots.slots[0][0].fill_(7.0)
    assert torch.equal(after[2], inputs[2] + 1) and torch.equal(after[0], inputs[0])
    again = shared_inputs.inputs_message(slots, p.Fallback, inputs)  # the next call gets them as made
    assert again.in_slots and torch.equal(slots.slots[1][0], inputs[2]) and torch.equal(slots.slots[0][0], inputs[0])


def test_inputs_the_slots_do_not_fit_travel_in_the_message(shared):
    slots, _, inputs = shared
    other_scalar = [inputs[0], 4, inputs[2]]  # the runner holds the first trial's layout
    other_shape = [inputs[0], 3, torch.arange(7)]
    for different in (other_scalar, other_shape):
        message = shared_inputs.inputs_message(slots, p.Hollow, different)
        assert message.args is different and not message.in_slots


def test_the_runner_runs_forward_on_the_slots_themselves():
    from tritongym.evaluate.judge.runner import Runner

    runner = Runner.__new__(Runner)
    runner.device = torch.device("cpu")
    slot = torch.zeros(1, 3)
    runner.slots = ([slot], [], [{"slot": 0}, 2])
    given = runner.inputs(p.Call(args=None, in_slots=True))
    assert given[1] == 2
    given[0].add_(5)  # what forward does to its inputs is in the judge's slot
    assert torch.equal(slot[0], torch.full((3,), 5.0))
    sent = [torch.ones(2)]
    assert torch.equal(runner.inputs(p.Call(args=sent))[0], sent[0])


def test_a_large_trials_input_slots_are_where_a_timing_batch_of_one_call_puts_its_own(monkeypatch):
    # the trial's runner maps the inputs buffer: a batch that outgrew it would leave it allocated
    # for the judge's life (exported memory a killed runner never lets go)
    monkeypatch.setattr(torch.cuda, "MemPool", lambda: "pool")
    monkeypatch.setattr(torch.cuda, "use_mem_pool", lambda pool: contextlib.nullcontext())
    monkeypatch.setattr(speed.SharedArena, "GRAIN", 1024)
    arena = speed.SharedArena(torch.device("cpu"))
    inputs, output = [torch.randn(8, 3).t(), 2, torch.arange(5)], torch.zeros(4)
    state, _ = fake_state("cuda")
    state.ctx.arena = arena
    monkeypatch.setattr(speed, "export", lambda t: [])
    monkeypatch.setattr(shared_inputs, "SHARED_INPUT_BYTES", 1)
    trial = shared_inputs.share_inputs(state, inputs)
    specs_in, specs_out = slot_specs(inputs, output, 1)
    batch_in, batch_out = arena.carve(specs_in, "inputs"), arena.carve(specs_out, "outputs")
    assert [t.data_ptr() for t in batch_in] == [t.data_ptr() for t in trial.slots]
    assert arena.buffers["outputs"].data_ptr() != arena.buffers["inputs"].data_ptr() and batch_out[0].shape == (1, 4)
    kept = arena.buffers["inputs"]
    arena.carve(slot_specs(inputs, output, 8)[0], "inputs")  # a larger batch: a larger buffer
    assert arena.buffers["inputs"] is not kept and arena.buffers["outputs"].numel() == 1024


def test_a_layout_numbers_its_slots_in_the_order_they_are_filled():
    # dict entries by key, as tensor_leaves walks them, whatever order they were made in
    x, y, z = torch.zeros(1), torch.ones(2), torch.full((3,), 2.0)
    inputs = [{"b": x, "a": (y, 5)}, z]
    shape = speed.layout(inputs)
    assert shape == [{"b": {"slot": 1}, "a": ({"slot": 0}, 5)}, {"slot": 2}]
    filled = speed.fill(shape, tensor_leaves(inputs))
    assert filled[0]["b"] is x and filled[0]["a"][0] is y and filled[0]["a"][1] == 5 and filled[1] is z


def test_the_output_slots_of_a_scalar_output_are_poisoned_byte_by_byte():
    """A one-element output's slot strides many elements between calls (each call aligned), so no
    dtype view of it is contiguous: the poison before a timed batch fills its bytes on the storage
    (a 0-dim output, mse_loss's, made every timed job an infrastructure_error on a GPU)."""
    _, outs = slot_specs([torch.ones(4)], torch.ones(()), count=3)
    buffer = torch.zeros(carved_bytes(outs, 512) + 512, dtype=torch.uint8)
    [slot] = carve_slots(buffer, outs, 512)
    assert slot.shape == (3,) and slot.stride()[0] > 1
    speed.slot_bytes(slot).fill_(speed.POISON)
    assert torch.isnan(slot).all()
    size = speed.slot_bytes(slot).numel()
    assert size == (2 * slot.stride()[0] + 1) * 4 and not buffer[size:].any()
