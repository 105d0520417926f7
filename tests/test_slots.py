"""The timing slots the judge shares with a runner are carved from one buffer (speed.carve_slots):
every slot has its leaf's shape and strides, a transposed input included, and no two overlap."""

import contextlib
from types import SimpleNamespace

import pytest
import torch

from tritongym.evaluate.judge import memory, shared_inputs, speed
from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.feedback import Failure
from tritongym.evaluate.judge.memory import Footprint
from tritongym.evaluate.judge.speed import carve_slots, carved_bytes, slot_specs
from tritongym.evaluate.judge.tree import tensor_leaves
from tritongym.evaluate.result import Verdict


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


# --- what forward is handed: each call's element of a slot as a tensor of its own ---------------------


def carved_inputs(count: int):
    """Slots of inputs in several layouts (transposed, strided, half precision, empty), carved from one
    uint8 buffer as the judge's arena carves them, filled with distinct values."""
    inputs = [torch.randn(6, 5).t(), torch.randn(6, 10)[:, ::2], torch.zeros(7, dtype=torch.float16),
              torch.zeros(0, 3), torch.arange(5)]  # fmt: skip
    specs, _ = slot_specs(inputs, [], count)
    buffer = torch.zeros(carved_bytes(specs, 512), dtype=torch.uint8)
    slots = carve_slots(buffer, specs, 512)
    for n, slot in enumerate(slots):
        for k in range(count):
            slot[k].copy_(torch.full(slot[k].shape, 10 * n + k))
    return buffer, slots, inputs


def test_each_calls_input_has_a_storage_of_its_own_over_its_slot():
    """The storages forward sees are those an ordinary caller's inputs have (session 11: on a GPU every
    input shared the arena's one storage, and an honest aliasing check by the storages' addresses,
    storage_alias_check.py, failed): each starts at the input (offset 0), holds its bytes alone and
    is no other input's, over the slot's memory itself (no copy)."""
    buffer, slots, inputs = carved_inputs(3)
    ins = [speed.own_calls(slot) for slot in slots]
    seen = set()
    for k in range(3):
        given = speed.handed(ins, k)
        for slot, leaf, t in zip(slots, inputs, given, strict=True):
            storage = t.untyped_storage()
            assert t.data_ptr() == slot[k].data_ptr() == storage.data_ptr() and t.storage_offset() == 0
            assert t.shape == leaf.shape and t.stride() == leaf.stride() and t.dtype == leaf.dtype
            assert storage.nbytes() == speed._span(leaf) * leaf.element_size() and t._base is None
            assert torch.equal(t, slot[k])
            if t.numel():
                seen.add(storage.data_ptr())
        assert given[0].untyped_storage().nbytes() == given[0].numel() * given[0].element_size() == 120
    assert len(seen) == 4 * 3  # no two inputs of any calls share a storage
    given = speed.handed(ins, 1)
    given[0].fill_(-1.0)  # forward writes an input in place: the slot, so the judge's copy of it, has it
    assert bool((slots[0][1] == -1).all()) and bool((slots[0][0] == 0).all()) and bool((slots[0][2] == 2).all())
    given[2].view(torch.int16).fill_(-1)
    assert bool((buffer[slots[2][1].data_ptr() - buffer.data_ptr() :][:14] == 255).all())


def test_a_tensor_handed_is_the_calls_own_object():
    """What one forward does to the tensor object it was handed (set_, a transpose in place) is not
    what the next call (a timing batch run again) is handed."""
    _, slots, _ = carved_inputs(2)
    ins = [speed.own_calls(slot) for slot in slots]
    first = speed.handed(ins, 0)
    first[0].t_()
    first[1].set_(torch.zeros(2))
    again = speed.handed(ins, 0)
    assert again[0].shape == (5, 6) and again[1].shape == (6, 5) and again[1].data_ptr() == slots[1][0].data_ptr()
    assert again[0] is not first[0] and again[0].untyped_storage().data_ptr() == slots[0][0].data_ptr()


def test_a_timing_batch_hands_each_call_inputs_of_their_own(monkeypatch):
    """open_slots makes each call's inputs once; run_batch hands call k its own (the slots as mapped,
    CPU tensors for the GPU's), and copies each output into its output slot."""
    _, slots, _ = carved_inputs(3)
    out = torch.zeros(3, 2)
    mapped = {"in0": slots[0], "in4": slots[4], "out": out}
    monkeypatch.setattr(speed, "rebuild", lambda spec, device: mapped[spec])
    attach = p.Attach(inputs=["in0", "in4"], outputs=["out"], layout=[{"slot": 0}, 7, {"slot": 1}])
    ins, outs, shape = speed.open_slots(attach, torch.device("cpu"))
    assert outs == [out] and shape == [{"slot": 0}, 7, {"slot": 1}] and [len(calls) for calls in ins] == [3, 3]
    seen = []

    def forward(x, seven, y):
        seen.append(
            [(t.untyped_storage().data_ptr(), t.storage_offset(), t.untyped_storage().nbytes()) for t in (x, y)]
        )
        return torch.stack([x.sum(), y.sum().float()]) + seven

    speed.run_batch(forward, (ins, outs, shape), 3)
    assert seen == [[(s[k].data_ptr(), 0, n) for s, n in ((slots[0], 120), (slots[4], 40))] for k in range(3)]
    assert torch.equal(out[:, 0], torch.tensor([0.0, 30.0, 60.0]) + 7)  # slot 0 holds k everywhere (30 elements)


def test_an_input_keeps_its_slots_buffer_alive():
    """The storage of its own holds the shared buffer (DLPack's deleter): the buffer is not freed while
    forward, or anything it made of an input, holds it, and is once nothing does."""
    import gc
    import weakref

    import numpy as np

    memory = np.zeros(4096, dtype=np.uint8)  # owns the bytes; torch's tensor over it holds it
    freed = []
    weakref.finalize(memory, freed.append, True)
    buffer = torch.from_numpy(memory)
    (slot,) = carve_slots(buffer, slot_specs([torch.zeros(4, 8)], [], 2)[0], 512)
    kept = speed.handed([speed.own_calls(slot)], 1)[0][1:]  # a view forward keeps of call 1's input
    del memory, buffer, slot
    gc.collect()
    assert not freed
    kept.fill_(3.0)  # the memory is still the buffer's, and alive
    assert float(kept.sum()) == 3.0 * 24
    del kept
    gc.collect()
    assert freed


# --- a trial's inputs and output through shared slots (shared_inputs.py), CPU tensors for the GPU's --


class FakeArena:
    """SharedArena's carve on CPU buffers."""

    def __init__(self):
        self.parts = []

    def carve(self, specs, part):
        self.parts.append(part)
        return carve_slots(torch.zeros(carved_bytes(specs, 512), dtype=torch.uint8), specs, 512)


def fake_state(device: str, footprint=None):
    asked = []
    ctx = SimpleNamespace(device=torch.device(device), arena=FakeArena(), answer_limit=memory.DEVICE_ANSWER_BYTES)
    footprint = footprint or Footprint(inputs=1 << 20, outputs=1 << 20, params=0, float64=False)
    state = SimpleNamespace(ctx=ctx, footprint=footprint, ask=lambda message, expect: asked.append(message))
    return state, asked


EXPECTED = (torch.zeros(2, 3), [{"b": torch.zeros(4, dtype=torch.int64)}])
"""A reference output of nested structure: a tuple, a list, a dict."""


@pytest.fixture
def shared(monkeypatch):
    monkeypatch.setattr(speed, "export", lambda t: ["handle", list(t.shape)])
    monkeypatch.setattr(shared_inputs, "available_bytes", lambda device: 1 << 40)
    state, asked = fake_state("cuda")
    inputs = [torch.randn(4, 5).t(), 3, torch.arange(6)]
    return shared_inputs.share_inputs(state, inputs, EXPECTED), asked, inputs


def test_the_cpu_and_inputs_without_tensors_keep_the_socket():
    big = [torch.zeros(1 << 20)]
    assert shared_inputs.share_inputs(fake_state("cpu")[0], big, torch.zeros(1)) is None
    assert shared_inputs.share_inputs(fake_state("cuda")[0], [3, "x"], torch.zeros(1)) is None
    message = shared_inputs.inputs_message(None, p.Call, big, torch.zeros(1), poison=True)
    assert message.args is big and not message.in_slots and not message.out_slots and message.poison


def test_the_runner_maps_one_calls_input_and_output_slots_and_no_events(shared):
    slots, asked, _ = shared
    (attach,) = asked
    assert isinstance(attach, p.Attach) and attach.events == []
    assert attach.inputs == [["handle", [1, 5, 4]], ["handle", [1, 6]]]
    assert attach.layout == [{"slot": 0}, 3, {"slot": 1}]
    assert attach.outputs == [["handle", [1, 2, 3]], ["handle", [1, 4]]]
    assert attach.output_layout == ({"slot": 0}, [{"b": {"slot": 1}}]) and slots.on_device


def test_an_output_with_values_besides_tensors_comes_through_the_socket(monkeypatch):
    # the judge fills the reference's layout with the slots: a scalar there would be the reference's
    monkeypatch.setattr(speed, "export", lambda t: ["handle"])
    monkeypatch.setattr(shared_inputs, "available_bytes", lambda device: 1 << 40)
    for expected in ((torch.zeros(2), 5), [torch.zeros(2), None], 3.0):
        state, asked = fake_state("cuda")
        slots = shared_inputs.share_inputs(state, [torch.ones(3)], expected)
        assert asked[0].outputs == [] and asked[0].output_layout is None and slots.on_device
        assert not shared_inputs.inputs_message(slots, p.Call, [torch.ones(3)], expected).out_slots


def test_a_problem_too_large_for_its_answer_on_the_device_shares_only_its_inputs(monkeypatch):
    monkeypatch.setattr(speed, "export", lambda t: ["handle"])
    monkeypatch.setattr(shared_inputs, "available_bytes", lambda device: 1 << 40)
    large = Footprint(inputs=memory.DEVICE_ANSWER_BYTES, outputs=1, params=0, float64=False)
    for state, asked in (fake_state("cuda", large), fake_state("cuda")):
        if state.footprint is not large:  # a small problem on a GPU whose memory is nearly full
            monkeypatch.setattr(shared_inputs, "available_bytes", lambda device: 1 << 20)
        slots = shared_inputs.share_inputs(state, [torch.ones(3)], torch.ones(2))
        (attach,) = asked
        assert attach.outputs == [] and attach.output_layout is None and not slots.on_device
        message = shared_inputs.inputs_message(slots, p.Hollow, [torch.ones(3)], torch.ones(2))
        assert message.in_slots and not message.out_slots
        assert slots.read()[0].device.type == "cpu"  # the inputs after forward go to the host


def test_a_call_loads_the_slots_and_the_judge_judges_its_own_copy_of_them(shared):
    slots, _, inputs = shared
    message = shared_inputs.inputs_message(slots, p.Call, inputs, poison=True)
    assert message.args is None and message.in_slots and message.poison and not message.out_slots
    assert torch.equal(slots.slots[0][0], inputs[0]) and torch.equal(slots.slots[1][0], inputs[2])
    slots.slots[1][0].add_(1)  # forward changed an input in place
    after = slots.read()
    assert after[1] == 3 and torch.equal(after[0], inputs[0]) and torch.equal(after[2], inputs[2] + 1)
    slots.slots[1][0].zero_()  # the runner keeps writing after its answer: the judge's copy stays
    slots.slots[0][0].fill_(7.0)
    assert torch.equal(after[2], inputs[2] + 1) and torch.equal(after[0], inputs[0])
    again = shared_inputs.inputs_message(slots, p.Fallback, inputs)  # the next call gets them as made
    assert again.in_slots and torch.equal(slots.slots[1][0], inputs[2]) and torch.equal(slots.slots[0][0], inputs[0])


def test_the_output_in_its_slots_is_judged_as_the_judges_own_copy_made_after_the_answer(shared):
    slots, _, inputs = shared
    out_a, out_b = slots.outputs
    out_a[0].fill_(1.0)  # an earlier call's output
    message = shared_inputs.inputs_message(slots, p.Call, inputs, EXPECTED, poison=True)
    assert message.in_slots and message.out_slots
    assert torch.isnan(out_a[0]).all() and bool((out_b[0] == -1).all())  # poisoned before the call
    out_a[0].copy_(torch.full((2, 3), 2.0))  # the runner's answer
    out_b[0].copy_(torch.arange(4))
    got = shared_inputs.received(slots, message, None, out_slots=True)
    assert isinstance(got, tuple) and isinstance(got[1], list) and set(got[1][0]) == {"b"}
    out_a[0].fill_(9.0)  # the runner keeps writing after its answer: the judge's copy stays
    out_b[0].zero_()
    assert torch.equal(got[0], torch.full((2, 3), 2.0)) and torch.equal(got[1][0]["b"], torch.arange(4))
    assert shared_inputs.received(slots, message, "sent", out_slots=False) == "sent"  # it chose the socket


def test_an_answer_in_output_slots_it_was_not_asked_for_is_the_candidates_crash(shared):
    slots, _, inputs = shared
    unasked = shared_inputs.inputs_message(slots, p.Call, inputs, poison=True)
    asked = shared_inputs.inputs_message(slots, p.Hollow, inputs, EXPECTED)
    cases = [(slots, unasked, None), (None, asked, None), (slots, asked, torch.ones(1))]
    for shared_slots, message, value in cases:
        with pytest.raises(Failure) as failure:
            shared_inputs.received(shared_slots, message, value, out_slots=True)
        assert failure.value.verdict is Verdict.CRASH and "protocol" in failure.value.feedback


def test_outputs_the_slots_do_not_fit_are_not_asked_for(shared):
    slots, _, inputs = shared
    others = [
        [EXPECTED[0], EXPECTED[1]],  # a list, not a tuple
        (EXPECTED[0], [{"c": EXPECTED[1][0]["b"]}]),  # another key
        (EXPECTED[0], [{"b": EXPECTED[1][0]["b"]}], 5),  # a value besides tensors
        (torch.zeros(3, 2), EXPECTED[1]),  # another shape
        (EXPECTED[0].double(), EXPECTED[1]),  # another dtype
    ]
    for other in others:
        message = shared_inputs.inputs_message(slots, p.Call, inputs, other)
        assert message.in_slots and not message.out_slots, other


def test_inputs_the_slots_do_not_fit_travel_in_the_message(shared):
    slots, _, inputs = shared
    other_scalar = [inputs[0], 4, inputs[2]]  # the runner holds the first trial's layout
    other_type = [inputs[0], 3.0, inputs[2]]
    other_shape = [inputs[0], 3, torch.arange(7)]
    for different in (other_scalar, other_type, other_shape):
        message = shared_inputs.inputs_message(slots, p.Hollow, different, EXPECTED)
        assert message.args is different and not message.in_slots and not message.out_slots


def test_the_runner_runs_forward_on_the_slots_themselves():
    from tritongym.evaluate.judge.runner import Runner

    runner = Runner.__new__(Runner)
    runner.device = torch.device("cpu")
    slot = torch.zeros(1, 3)
    runner.slots = ([speed.own_calls(slot)], [], [{"slot": 0}, 2])
    given = runner.inputs(p.Call(args=None, in_slots=True))
    assert given[1] == 2 and given[0].data_ptr() == slot.data_ptr()
    assert given[0].untyped_storage().nbytes() == 12 and given[0]._base is None  # a tensor of its own
    given[0].add_(5)  # what forward does to its inputs is in the judge's slot
    assert torch.equal(slot[0], torch.full((3,), 5.0))
    sent = [torch.ones(2)]
    assert torch.equal(runner.inputs(p.Call(args=sent))[0], sent[0])


def runner_with_output_slots(*outs):
    from tritongym.evaluate.judge.runner import Runner

    runner = Runner.__new__(Runner)
    runner.device = torch.device("cpu")
    runner.slots = ([], list(outs), [])
    runner.output_layout = ({"slot": 0}, 2, {"k": {"slot": 1}})
    return runner


def test_the_runner_copies_an_output_of_the_judges_layout_into_its_slots():
    a, b = torch.zeros(1, 2, 3), torch.zeros(1, 4, dtype=torch.int64)
    runner = runner_with_output_slots(a, b)
    got = (torch.ones(3, 2).t(), 2, {"k": torch.arange(4)})  # a transposed output is copied as values
    assert runner.output_in_slots(got)
    assert torch.equal(a[0], torch.ones(2, 3)) and torch.equal(b[0], torch.arange(4))


class Marked(torch.Tensor):
    """A tensor subclass: the socket carries it as an opaque value, so it must not go into a slot."""


def test_an_output_of_another_layout_stays_out_of_the_slots():
    a, b = torch.zeros(1, 2, 3), torch.zeros(1, 4, dtype=torch.int64)
    runner = runner_with_output_slots(a, b)
    others = [
        [torch.ones(2, 3), 2, {"k": torch.arange(4)}],  # a list
        (torch.ones(2, 3), True, {"k": torch.arange(4)}),  # True is not 2, nor 1
        (torch.ones(2, 3), 2, {"j": torch.arange(4)}),  # another key
        (torch.ones(2, 3), 2, {"k": torch.arange(5)}),  # another shape
        (torch.ones(2, 3), 2, {"k": torch.arange(4.0)}),  # another dtype
        (torch.ones(2, 3).as_subclass(Marked), 2, {"k": torch.arange(4)}),
        (torch.ones(2, 3), 2, {"k": torch.arange(4), "l": torch.ones(1)}),  # another tensor
        None,
    ]
    for other in others:
        assert not runner.output_in_slots(other), other
    assert not a.any() and not b.any()
    runner.output_layout = None  # a timing batch's attach: no trial output slots
    assert not runner.output_in_slots((torch.ones(2, 3), 2, {"k": torch.arange(4)}))


def test_layouts_are_the_same_only_value_for_value_and_type_for_type():
    same = speed.same_layout
    assert same([{"slot": 0}, (1, "a", None)], [{"slot": 0}, (1, "a", None)])
    assert not same([1], (1,)) and not same(1, True) and not same(1, 1.0) and not same(float("nan"), float("nan"))
    assert not same({"a": 1, "b": 2}, {"b": 2, "a": 1})  # the order of a dict's entries is its own
    assert not same({1: 0}, {True: 0}) and not same([1, 2], [1]) and not same(object(), object())


def test_an_output_aliasing_one_of_several_views_of_one_buffer_names_that_one():
    from tritongym.evaluate.guards import aliasing

    buffer = torch.zeros(64)
    x, y = buffer[:16], buffer[32:48]  # two inputs that are views of one tensor
    model = torch.nn.Linear(2, 2)
    assert aliasing(y[4:], [x, y], model) == "input argument 1"
    assert aliasing(x.view(4, 4), [x, y], model) == "input argument 0"
    assert aliasing(buffer[20:24], [x, y], model) == "input argument 0"  # the buffer between them: still an input's
    assert aliasing(torch.zeros(3), [x, y], model) is None
    assert aliasing(model.weight[0], [x, y], model) == "'weight' of the module"
    ins = [speed.own_calls(slot) for slot in carve_slots(buffer.view(torch.uint8), slot_specs([x, y], [], 1)[0], 64)]
    x, y = speed.handed(ins, 0)  # the judge's slots: each input's own storage
    assert aliasing(y[4:], [x, y], model) == "input argument 1" and aliasing(x.t(), [x, y], model) == "input argument 0"


def test_a_trials_slots_are_where_a_timing_batch_of_one_call_puts_its_own(monkeypatch):
    # the trial's runner maps the inputs and outputs buffers: a batch that outgrew them would leave
    # them allocated for the judge's life (exported memory a killed runner never lets go)
    monkeypatch.setattr(torch.cuda, "MemPool", lambda: "pool")
    monkeypatch.setattr(torch.cuda, "use_mem_pool", lambda pool: contextlib.nullcontext())
    monkeypatch.setattr(speed.SharedArena, "GRAIN", 1024)
    arena = speed.SharedArena(torch.device("cpu"))
    inputs, output = [torch.randn(8, 3).t(), 2, torch.arange(5)], torch.zeros(4)
    state, _ = fake_state("cuda")
    state.ctx.arena = arena
    monkeypatch.setattr(speed, "export", lambda t: [])
    monkeypatch.setattr(shared_inputs, "available_bytes", lambda device: 1 << 40)
    trial = shared_inputs.share_inputs(state, inputs, output)
    specs_in, specs_out = slot_specs(inputs, output, 1)
    batch_in, batch_out = arena.carve(specs_in, "inputs"), arena.carve(specs_out, "outputs")
    assert [t.data_ptr() for t in batch_in] == [t.data_ptr() for t in trial.slots]
    assert [t.data_ptr() for t in batch_out] == [t.data_ptr() for t in trial.outputs]
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


def test_output_slots_take_the_candidates_dense_layout_and_nothing_else():
    """An output slot has the layout the runner reported for its output where that layout is dense
    (a column-major ``x + bias`` then costs the plain copy the twin's subtracted copies cost, not a
    transposing one); any other claim gets a contiguous slot."""
    inputs = [torch.randn(4, 6)]
    outputs = (torch.randn(6, 4).t(), torch.zeros(2, 1, 3))
    _, outs = slot_specs(inputs, outputs, count=3, output_strides=[[1, 4], [1, 7, 2]])
    assert outs[0][:2] == ((3, 4, 6), (64, 1, 4)) and outs[1][:2] == ((3, 2, 1, 3), (64, 1, 7, 2))  # calls 256 B apart
    buffer = torch.zeros(carved_bytes(outs, 512), dtype=torch.uint8)
    column, _ = carve_slots(buffer, outs, 512)
    column[1].copy_(outputs[0])
    assert torch.equal(column[1], outputs[0]) and column[1].stride() == outputs[0].stride()
    contiguous = ((64, 6, 1), (64, 3, 3, 1))
    for claim in ([1, 1], [2, 8], [1, 4.0], [1, -4], [1, 4, 1], [True, 4], None):  # not dense, malformed
        _, outs = slot_specs(inputs, outputs, count=3, output_strides=[claim, [3, 3, 1]])
        assert (outs[0][1], outs[1][1]) == contiguous, claim
    for claims in ("x", None, [], [[1, 1, 1]]):  # no strides, or not one list per output
        _, outs = slot_specs(inputs, outputs, count=3, output_strides=claims)
        assert (outs[0][1], outs[1][1]) == contiguous, claims


def test_dense_layouts_are_permutations_of_a_contiguous_one():
    assert speed.dense((4, 6), (6, 1)) and speed.dense((4, 6), (1, 4)) and speed.dense((), ())
    assert speed.dense((2, 1, 3), (3, 99, 1)) and speed.dense((1,), (5,))  # a size-1 dimension's stride is free
    assert not speed.dense((4, 6), (1, 1)) and not speed.dense((4, 6), (12, 2)) and not speed.dense((4, 6), (6, 2))
    assert not speed.dense((4, 0), (1, 4)) and not speed.dense((4, 6), (6,)) and not speed.dense((4, 6), None)
    assert not speed.dense((4, 6), (6, 1.0)) and not speed.dense((4, 6), (-6, 1)) and not speed.dense((4, 6), (6, True))


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


class Doubles(torch.nn.Module):
    def forward(self, x):
        return (x * 2, [{"k": x.sum().reshape(1)}])


class Listed(torch.nn.Module):
    def forward(self, x):
        return [x * 2, [{"k": x.sum().reshape(1)}]]


@pytest.mark.parametrize("message", [p.Call(args=None, in_slots=True, out_slots=True),
                                     p.Hollow(args=None, in_slots=True, out_slots=True)])  # fmt: skip
def test_a_runner_asked_for_its_output_in_the_slots_answers_with_it_there_or_in_the_message(message):
    from tritongym.evaluate.judge.runner import Runner
    from tritongym.evaluate.placement import HostReads
    from tritongym.evaluate.taint import ProcessState

    runner = Runner.__new__(Runner)
    runner.device, runner.path, runner.pid, runner.baseline = torch.device("cpu"), "candidate.py", 0, ProcessState()
    runner.text = None  # no candidate file: what a kernel must come from is not checked here
    runner.host = None  # where forward's tensors are made is not checked here (placement.py)
    runner.reads = HostReads()  # a GPU's count: every tensor here is host memory, no copy counted
    x, out, total = torch.arange(3.0).reshape(1, 3), torch.zeros(1, 3), torch.zeros(1, 1)
    runner.slots = ([speed.own_calls(x)], [out, total], [{"slot": 0}])
    runner.output_layout = ({"slot": 0}, [{"k": {"slot": 1}}])
    sent = []
    runner.send = sent.append
    handle = runner.call if isinstance(message, p.Call) else runner.hollow
    runner.model = Doubles()
    handle(message)
    assert sent[-1].out_slots is True and sent[-1].value is None
    assert torch.equal(out[0], torch.tensor([0.0, 2.0, 4.0])) and float(total[0]) == 3.0
    if isinstance(message, p.Call):  # the output's layout, for the timing's output slots
        assert sent[-1].strides == [[1], [1]]
    out.zero_()
    runner.model = Listed()  # another layout: the output comes in the message, the slots untouched
    handle(message)
    assert sent[-1].out_slots is False and isinstance(sent[-1].value, list) and not out.any()
    if isinstance(message, p.Call):
        assert sent[-1].inputs_after is None  # the judge reads the input slots itself
        handle(p.Call(args=None, in_slots=True))  # not asked: never in the slots
        assert sent[-1].out_slots is False and not out.any()


def test_the_profiled_forward_gets_fresh_inputs_in_the_slots_the_runner_maps(shared):
    slots, asked, _ = shared
    fresh = [torch.randn(4, 5).t(), 3, torch.arange(6) + 10]
    reference = SimpleNamespace(inputs=lambda seed: fresh)
    answer = p.ProfileResult(0.5, [], [])
    state = SimpleNamespace(shared=slots, ask=lambda message, expect: asked.append(message) or answer)
    assert speed.profile_candidate(state, reference)["coverage"] == 0.5
    assert asked[-1].in_slots and asked[-1].args is None
    assert torch.equal(slots.slots[0][0], fresh[0]) and torch.equal(slots.slots[1][0], fresh[2])
    state.shared = None  # inputs without tensors, or the CPU: in the message
    speed.profile_candidate(state, reference)
    assert not asked[-1].in_slots and asked[-1].args is fresh


def test_the_runner_profiles_forward_on_its_slots(monkeypatch):
    from tritongym.evaluate import profiling
    from tritongym.evaluate.judge.runner import Runner

    seen = []
    attribution = SimpleNamespace(coverage=0.25, kernels=[], foreign_streams=[])
    monkeypatch.setattr(
        profiling, "profile_forward", lambda model, given, path, device, text: seen.append(given) or attribution
    )
    runner = Runner.__new__(Runner)
    runner.device, runner.path, runner.model, runner.text = torch.device("cpu"), "candidate.py", None, None
    slot = torch.arange(3.0).reshape(1, 3)
    runner.slots = ([speed.own_calls(slot)], [], [{"slot": 0}, 2])
    sent = []
    runner.send = sent.append
    runner.profile(p.Profile(args=None, in_slots=True))
    assert seen[-1][1] == 2 and seen[-1][0].data_ptr() == slot.data_ptr() and sent[-1].coverage == 0.25
    runner.profile(p.Profile(args=[torch.ones(2)]))
    assert torch.equal(seen[-1][0], torch.ones(2))
