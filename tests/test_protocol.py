"""The judge-runner protocol: every value forward can take or return survives the trip, and
anything malformed is refused (for the judge, the candidate's crash)."""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest
import torch

from tritongym.evaluate.judge import protocol as p
from tritongym.evaluate.judge.tree import leaves, map_tensors


def roundtrip(message: p.Message, expect=None, max_payload: int = 1 << 30) -> p.Message:
    a, b = socket.socketpair()
    with a, b:
        p.send(a, message)
        return p.receive(b, expect or (type(message),), time.monotonic() + 5, max_payload)


def raw(header: dict, payload: bytes = b"", magic: bytes = p.MAGIC, expect=(p.Output,), max_payload=1 << 20):
    data = json.dumps(header).encode()
    a, b = socket.socketpair()
    with a, b:
        a.sendall(struct.pack("<4sIQ", magic, len(data), len(payload)) + data + payload)
        return p.receive(b, expect, time.monotonic() + 5, max_payload)


def output_fields(**overrides) -> dict:
    fields = {"value": None, "out_slots": False, "inputs_after": None, "launches": 1, "off_stream": 0,
              "off_stream_ops": [], "compute": {}, "tampering": [], "threads": [], "alias": "",
              "strides": [], "host_bytes": 0, "handed": [], "reach": []}  # fmt: skip
    return fields | overrides


def test_nested_values_of_every_dtype_survive():
    value = {
        "sum": torch.randn(3, 4).t(),
        "parts": (torch.arange(5, dtype=torch.int64), [torch.ones(2, dtype=torch.bfloat16), 7, 2.5, None]),
        "flags": torch.tensor([True, False]),
        "complex": torch.randn(2, dtype=torch.complex64),
        "empty": torch.empty(0, 3),
        "scalar": torch.tensor(3.0),
    }
    got = roundtrip(p.Output(value=value, inputs_after=[torch.zeros(1)], compute={"mm": 2})).value
    assert type(got["parts"]) is tuple and type(got["parts"][1]) is list
    for (path, g), (_, e) in zip(leaves(got), leaves(value), strict=True):
        if isinstance(e, torch.Tensor):
            assert g.dtype == e.dtype and g.shape == e.shape and torch.equal(g, e), path
        else:
            assert g == e, path


def test_a_value_the_protocol_does_not_carry_arrives_opaque():
    class Sneaky(torch.Tensor):
        pass

    got = roundtrip(p.Output(value=[torch.zeros(2).as_subclass(Sneaky), object()])).value
    assert got == [p.Opaque("Sneaky"), p.Opaque("object")]


@pytest.mark.parametrize(
    ("header", "payload", "message"),
    [
        ({"kind": "hello", "fields": {"pid": 1}}, b"", "expected a output message"),
        ({"kind": "output", "fields": output_fields(launches="many")}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(tampering=[1, 2])}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(compute={"mm": "x"})}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(launches=True)}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(strides=[[1, "2"]])}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(strides=[1, 2])}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(host_bytes="all")}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(handed=[0.5])}, b"", "wrong type"),
        ({"kind": "output", "fields": output_fields(reach=4.1)}, b"", "wrong type"),
        ({"kind": "output", "fields": {"value": None}}, b"", "malformed output"),
        ({"kind": "output", "fields": output_fields(value={"T": [0, "float32", [4]]})}, b"\0" * 8, "exceed"),
        ({"kind": "output", "fields": output_fields(value={"T": [0, "float32", [1]]})}, b"\0" * 8, "left over"),
        ({"kind": "output", "fields": output_fields(value={"T": [0, "object", [1]]})}, b"\0" * 4, "tensor header"),
        ({"kind": "output", "fields": output_fields(value={"T": [3, "float32", [1]]})}, b"\0" * 4, "tensor header"),
        ({"kind": "output", "fields": output_fields(value={"X": 1})}, b"", "unknown value tag"),
        ({"kind": "output", "fields": output_fields(value={"D": [[1.5, 2]]})}, b"", "dict entry"),
    ],
)
def test_malformed_frames_are_refused(header, payload, message):
    with pytest.raises(p.ProtocolError, match=message):
        raw(header, payload)


def test_the_reference_sent_for_the_samples_and_those_sent_back_survive():
    """``Expected`` (judge -> runner) and ``Handed`` (runner -> judge): the answer check's ranking."""
    reference = [torch.arange(4.0, dtype=torch.float64), torch.full((4,), 0.5, dtype=torch.float64)]
    got = roundtrip(p.Expected(references=[reference, None])).references
    assert got[1] is None and all(torch.equal(a, b) for a, b in zip(got[0], reference, strict=True))
    sample = torch.arange(3.0)
    ((start, back),) = roundtrip(p.Handed(samples=[[2, sample]])).samples
    assert start == 2 and torch.equal(back, sample)


def test_deep_nesting_and_bad_magic_and_oversize_are_refused():
    deep = None
    for _ in range(p.MAX_DEPTH + 5):
        deep = {"L": [deep]}
    with pytest.raises(p.ProtocolError, match="deeply"):
        raw({"kind": "output", "fields": output_fields(value=deep)})
    with pytest.raises(p.ProtocolError, match="magic"):
        raw({"kind": "output", "fields": output_fields()}, magic=b"JSON")
    with pytest.raises(p.ProtocolError, match="too large"):
        raw({"kind": "output", "fields": output_fields()}, b"\0" * 64, max_payload=16)


def test_a_closed_channel_and_a_deadline_are_told_apart():
    a, b = socket.socketpair()
    a.close()
    with b, pytest.raises(p.PeerGone):
        p.receive(b, (p.Output,), time.monotonic() + 5, 1 << 20)
    a, b = socket.socketpair()
    with a, b, pytest.raises(p.Deadline):
        p.receive(b, (p.Output,), time.monotonic() + 0.2, 1 << 20)


def test_map_tensors_and_leaves_walk_dicts_in_key_order():
    value = {"b": torch.ones(1), "a": [torch.zeros(1), 3]}
    assert [path for path, _ in leaves(value)] == ["output['a'][0]", "output['a'][1]", "output['b']"]
    doubled = map_tensors(value, lambda t: t + 1)
    assert doubled["a"][1] == 3 and float(doubled["b"]) == 2.0


@pytest.mark.parametrize("cls", [p.Call, p.Fallback, p.Hollow])
def test_a_call_on_inputs_in_the_shared_slots_carries_no_inputs(cls):
    got = roundtrip(cls(args=None, in_slots=True))
    assert got.args is None and got.in_slots is True
    assert roundtrip(cls(args=[torch.ones(2)])).in_slots is False
    fields = {"args": None, "in_slots": "yes"} | ({"poison": False} if cls is p.Call else {})
    fields |= {"out_slots": False} if cls is not p.Fallback else {}
    fields |= {"other_poison": False, "answers": []} if cls is p.Hollow else {"answers": []} if cls is p.Call else {}
    with pytest.raises(p.ProtocolError, match="wrong type"):
        raw({"kind": cls.KIND, "fields": fields}, expect=(cls,))


@pytest.mark.parametrize("cls", [p.Call, p.Hollow])
def test_a_call_may_ask_for_the_output_in_the_shared_slots_and_the_answer_says_it_is_there(cls):
    assert roundtrip(cls(args=None, in_slots=True, out_slots=True)).out_slots is True
    assert roundtrip(cls(args=None, in_slots=True)).out_slots is False
    answer = p.Output if cls is p.Call else p.HollowResult
    got = roundtrip(answer(value=None, out_slots=True))
    assert got.out_slots is True and got.value is None
    attach = roundtrip(p.Attach([], [], [{"slot": 0}], [], output_layout=({"slot": 0}, 2, {"k": {"slot": 1}})))
    assert attach.output_layout == ({"slot": 0}, 2, {"k": {"slot": 1}})  # tuples stay tuples
    with pytest.raises(p.ProtocolError, match="wrong type"):
        raw({"kind": "output", "fields": output_fields(out_slots=1)})
