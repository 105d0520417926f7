"""The one channel between the judge and a runner: typed messages in length-prefixed frames.

A frame is ``MAGIC``, the header's length (u32) and the payload's length (u64), a UTF-8 JSON
header ``{"kind": ..., "fields": {...}}`` and the payload: the raw bytes of every tensor in the
message, back to back. A tensor in the header is ``{"T": [blob, dtype, shape]}``; lists, tuples and
dicts are ``{"L": [...]}``, ``{"U": [...]}`` and ``{"D": [[key, value], ...]}``; other leaves are JSON
scalars. A value that is none of these (a tensor subclass, an arbitrary object) travels as
``{"O": type name}`` and arrives as an :class:`Opaque`. Nothing is pickled.

Reading is strict: a wrong magic, an oversized header or payload, a kind the reader does not expect,
a missing or mistyped field, an unknown dtype, a blob whose size disagrees with its shape, or a
payload with bytes left over raises :class:`ProtocolError`. For the judge that is the candidate's
crash.
"""

from __future__ import annotations

import json
import math
import select
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import torch

from tritongym.evaluate.judge.memory import is_out_of_memory

MAGIC = b"TGJ1"
_PREFIX = struct.Struct("<4sIQ")
MAX_HEADER_BYTES = 16 << 20
MAX_DEPTH = 32
MAX_NODES = 1 << 16

DTYPES = {
    name: getattr(torch, name)
    for name in (
        "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
        "complex64", "complex128",
    )
}  # fmt: skip
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


class ProtocolError(Exception):
    """The other side sent something the protocol does not allow."""


class PeerGone(Exception):
    """The other side closed the channel (it exited or was killed)."""


class Deadline(Exception):
    """The deadline passed while waiting for the other side."""


@dataclass(frozen=True)
class Opaque:
    """A value the runner returned that the protocol does not carry (its type's name)."""

    type_name: str

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


# --- messages -----------------------------------------------------------------------------------

Tree = Any
"""A nested value of tensors and scalars (see the module docstring)."""


@dataclass
class Message:
    KIND: ClassVar[str] = ""


@dataclass
class Hello(Message):
    """Runner -> judge: forked, hardened and warm; waiting for its candidate."""

    KIND: ClassVar[str] = "hello"
    pid: int = 0


@dataclass
class Ping(Message):
    """Judge -> runner: are you still there and answering (a spare, before it is given a job)."""

    KIND: ClassVar[str] = "ping"


@dataclass
class Pong(Message):
    KIND: ClassVar[str] = "pong"


@dataclass
class Load(Message):
    """Judge -> runner: import this candidate (its file is in ``workdir``)."""

    KIND: ClassVar[str] = "load"
    candidate_path: str = ""
    class_name: str = ""
    workdir: str = ""
    memory_limit_bytes: int = 0
    lifetime_s: float = 0.0
    """The runner's own watchdog ends it after this long, whatever the judge does."""


@dataclass
class Build(Message):
    """Judge -> runner: construct the model and copy the reference's state into it."""

    KIND: ClassVar[str] = "build"
    init_args: Tree = None
    init_kwargs: Tree = None
    state: Tree = None
    """The reference's parameters and buffers by name (copied where name and shape match)."""
    arg_count: int = 0


@dataclass
class Loaded(Message):
    KIND: ClassVar[str] = "loaded"


@dataclass
class Failed(Message):
    """Runner -> judge: the candidate raised (importing, building or in forward)."""

    KIND: ClassVar[str] = "failed"
    verdict: str = ""
    feedback: str = ""
    detail: str = ""


@dataclass
class Call(Message):
    """Judge -> runner: one watched forward on these inputs."""

    KIND: ClassVar[str] = "call"
    args: Tree = None
    poison: bool = False
    """Fill the free GPU memory with the poison byte first (unwritten-output check)."""
    in_slots: bool = False
    """The inputs are in the input slots attached before (a trial on a GPU), not in ``args``; the
    inputs after forward are then read there by the judge, not sent back."""
    out_slots: bool = False
    """Where forward's output has the output layout attached before (the reference's: the same
    structure and values besides tensors, every tensor its slot's shape and dtype), copy it into the
    output slots, synchronise the device, and answer with ``out_slots`` set instead of the value."""


@dataclass
class Output(Message):
    """Runner -> judge: forward's output, its inputs afterwards, and what the runner's guards saw.
    The output and inputs are checked by the judge; the guard report is the runner's word."""

    KIND: ClassVar[str] = "output"
    value: Tree = None
    """forward's output; None where it is in the output slots (``out_slots``)."""
    out_slots: bool = False
    """The output was copied into the output slots (asked by the Call) and the device synchronised."""
    inputs_after: Tree = None
    launches: int = 0
    off_stream: int = 0
    off_stream_ops: list[str] = field(default_factory=list)
    compute: dict[str, int] = field(default_factory=dict)
    tampering: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    alias: str = ""
    strides: list[list[int]] = field(default_factory=list)
    """Each output tensor's strides (the runner's word): the timing's output slots take this layout
    where it is dense (speed.slot_specs)."""


@dataclass
class Fallback(Message):
    """Judge -> runner: one forward with every launch of the candidate's kernels made to fail."""

    KIND: ClassVar[str] = "fallback"
    args: Tree = None
    in_slots: bool = False
    """As for Call."""


@dataclass
class FallbackResult(Message):
    KIND: ClassVar[str] = "fallback_result"
    returned: bool = False


@dataclass
class Hollow(Message):
    """Judge -> runner: one forward in which every launch of the candidate's kernels returns at once
    without running, after filling the tensors passed to it that are not forward's inputs or the
    model's state (the buffers it would write) with poison."""

    KIND: ClassVar[str] = "hollow"
    args: Tree = None
    in_slots: bool = False
    """As for Call."""
    out_slots: bool = False
    """As for Call."""
    other_poison: bool = False
    """Fill with the second poison (+inf, False, the smallest integer) instead of the first (NaN, True,
    the largest integer): an answer may hold one of them everywhere, never both (red team 5 #8)."""


@dataclass
class HollowResult(Message):
    KIND: ClassVar[str] = "hollow_result"
    value: Tree = None
    """forward's output, or None if it raised (or where it is in the output slots)."""
    out_slots: bool = False
    """As for Output."""


@dataclass
class Profile(Message):
    """Judge -> runner (GPU): profile one forward and attribute its GPU time (profiling.py)."""

    KIND: ClassVar[str] = "profile"
    args: Tree = None
    in_slots: bool = False
    """As for Call: the inputs are in the input slots the runner maps now (the timing batch's call 0,
    or the trials' where the job was not timed)."""


@dataclass
class ProfileResult(Message):
    KIND: ClassVar[str] = "profile_result"
    coverage: float = -1.0
    """-1: the forward ran nothing on the GPU."""
    kernels: list = field(default_factory=list)
    """Checked field by field by the judge (speed.py)."""
    foreign_streams: list[str] = field(default_factory=list)


@dataclass
class Attach(Message):
    """Judge -> runner (GPU): open the judge's exported input and output slots (CUDA IPC handles):
    a timing batch's, or a trial's (one call, no events; output slots where its answers stay on the
    GPU)."""

    KIND: ClassVar[str] = "attach"
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    layout: Tree = None
    """The structure of one call's inputs, with slot numbers for tensors (speed.py)."""
    events: list = field(default_factory=list)
    """CUDA IPC handles (hex) of the judge's ``go`` and ``done`` events (none for a trial's slots)."""
    output_layout: Tree = None
    """A trial's: the structure of the reference's output, with slot numbers for tensors; an output
    of this layout goes into the output slots where a call asks (``out_slots``). None for a batch."""


@dataclass
class Batch(Message):
    """Judge -> runner (GPU): queue on the current stream a wait on ``go``, forward on input slots
    0..count-1 with each output copied into its slot, and a record of ``done``; then answer
    BatchQueued (at once: the judge polls ``done``)."""

    KIND: ClassVar[str] = "batch"
    count: int = 0


@dataclass
class BatchQueued(Message):
    KIND: ClassVar[str] = "batch_queued"


MESSAGES = {cls.KIND: cls for cls in (Hello, Ping, Pong, Load, Build, Loaded, Failed, Call, Output, Fallback,
                                      FallbackResult, Hollow, HollowResult, Profile, ProfileResult, Attach, Batch,
                                      BatchQueued)}  # fmt: skip


# --- values -------------------------------------------------------------------------------------


def _tensor_bytes(t: torch.Tensor) -> memoryview:
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    if flat.dtype.is_complex:
        flat = torch.view_as_real(flat).reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else memoryview(b"")


def encode_tree(value: Any, blobs: list, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    if type(value) is torch.Tensor or type(value) is torch.nn.Parameter:
        if value.dtype not in _DTYPE_NAMES:
            return {"O": f"tensor of dtype {value.dtype}"}
        blobs.append(_tensor_bytes(value))
        return {"T": [len(blobs) - 1, _DTYPE_NAMES[value.dtype], list(value.shape)]}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return {"L" if type(value) is list else "U": [encode_tree(v, blobs, depth + 1) for v in value]}
    if type(value) is dict:
        return {"D": [[k, encode_tree(v, blobs, depth + 1)] for k, v in value.items() if type(k) in (str, int)]}
    if value is None or type(value) in (bool, int, float, str):
        return value
    return {"O": type(value).__name__[:100]}


class _Decoder:
    def __init__(self, payload: memoryview):
        self.payload, self.offset, self.nodes, self.blob = payload, 0, 0, 0

    def value(self, node: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise ProtocolError("value nested too deeply or too large")
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is not dict or len(node) != 1:
            raise ProtocolError("malformed value")
        ((tag, body),) = node.items()
        if tag in ("L", "U") and type(body) is list:
            items = [self.value(v, depth + 1) for v in body]
            return items if tag == "L" else tuple(items)
        if tag == "D" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) not in (str, int):
                    raise ProtocolError("malformed dict entry")
                out[pair[0]] = self.value(pair[1], depth + 1)
            return out
        if tag == "O" and type(body) is str:
            return Opaque(body[:100])
        if tag == "T" and type(body) is list and len(body) == 3:
            return self.tensor(*body)
        raise ProtocolError(f"unknown value tag {str(tag)[:20]!r}")

    def tensor(self, index: Any, dtype_name: Any, shape: Any) -> torch.Tensor:
        if index != self.blob or dtype_name not in DTYPES or type(shape) is not list:
            raise ProtocolError("malformed tensor header")
        if len(shape) > 16 or not all(type(s) is int and 0 <= s < 1 << 40 for s in shape):
            raise ProtocolError("malformed tensor shape")
        self.blob += 1
        dtype = DTYPES[dtype_name]
        numel = 1
        for s in shape:
            numel *= s
        size = numel * torch.empty((), dtype=dtype).element_size()
        if self.offset + size > len(self.payload):
            raise ProtocolError("tensor bytes exceed the payload")
        raw = bytearray(self.payload[self.offset : self.offset + size])
        self.offset += size
        if not numel:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape)


# --- frames -------------------------------------------------------------------------------------


def encode(message: Message) -> list:
    """The frame of a message, as a list of buffers to send in order."""
    blobs: list = []
    body = {}
    for f in fields(message):
        value = getattr(message, f.name)
        body[f.name] = encode_tree(value, blobs) if f.type == "Tree" else value
    header = json.dumps({"kind": message.KIND, "fields": body}).encode()
    payload = sum(len(b) * b.itemsize for b in blobs)
    return [_PREFIX.pack(MAGIC, len(header), payload), header, *blobs]


def send(
    sock: socket.socket, message: Message, deadline: float = float("inf"), tick: Callable[[], None] | None = None
) -> None:
    """Write a message. With a deadline, never blocks past it (a peer that stops reading raises
    :class:`Deadline`); ``tick`` runs at least every 0.1 s while waiting, as for :func:`receive`."""
    for part in encode(message):
        if deadline == float("inf"):
            sock.sendall(part)
            continue
        view = memoryview(part).cast("B")
        while view:
            now = time.monotonic()
            if now >= deadline:
                raise Deadline()
            _, ready, _ = select.select([], [sock], [], min(0.1, deadline - now))
            if tick is not None:
                tick()
            if not ready:
                continue
            try:
                view = view[sock.send(view, socket.MSG_DONTWAIT) :]
            except (BlockingIOError, InterruptedError):
                continue
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise PeerGone() from exc


_SCALARS = {"str": str, "int": int, "float": (int, float), "bool": bool, "list": list, "dict": dict}


def _typed(value: Any, annotation: str) -> bool:
    """Whether a header value has a field's declared type (``list[str]``, ``dict[str, int]``...). A
    ``float`` field must be finite: JSON as Python reads it carries NaN and infinities, and a number
    such as a coverage that compares false with everything would slip past every bound the judge
    puts on it (values in a tree, a forward's output, may be anything)."""
    base, _, inner = annotation.partition("[")
    if not isinstance(value, _SCALARS[base]) or (base in ("int", "float") and type(value) is bool):
        return False
    if base == "float" and not math.isfinite(value):
        return False
    if base == "list" and inner:
        return all(_typed(v, inner.rstrip("]")) for v in value)
    if base == "dict" and inner:
        key, item = (part.strip() for part in inner.rstrip("]").split(","))
        return all(_typed(k, key) and _typed(v, item) for k, v in value.items())
    return True


def _build(kind: Any, body: Any, payload: memoryview, expect: tuple[type, ...]) -> Message:
    cls = MESSAGES.get(kind) if type(kind) is str else None
    if cls is None or cls not in expect:
        names = ", ".join(c.KIND for c in expect)
        raise ProtocolError(f"expected a {names} message, got {str(kind)[:40]!r}")
    if type(body) is not dict or set(body) != {f.name for f in fields(cls)}:
        raise ProtocolError(f"malformed {cls.KIND} message")
    decoder = _Decoder(payload)
    values = {}
    for f in fields(cls):
        value = body[f.name]
        if f.type == "Tree":
            value = decoder.value(value)
        elif not _typed(value, f.type):
            raise ProtocolError(f"field {f.name} of {cls.KIND} has the wrong type")
        values[f.name] = value
    if decoder.offset != len(payload):
        raise ProtocolError("payload bytes left over")
    return cls(**values)


def _read_exactly(sock: socket.socket, size: int, deadline: float, tick: Callable[[], None] | None) -> memoryview:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        now = time.monotonic()
        if now >= deadline:
            raise Deadline()
        ready, _, _ = select.select([sock], [], [], min(0.1, deadline - now))
        if tick is not None:
            tick()
        if not ready:
            continue
        try:
            n = sock.recv_into(view[got:], size - got)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise PeerGone() from exc
        if n == 0:
            raise PeerGone()
        got += n
    return view


def receive(
    sock: socket.socket,
    expect: tuple[type, ...],
    deadline: float,
    max_payload: int,
    tick: Callable[[], None] | None = None,
) -> Message:
    """The next message, which must be one of ``expect``. ``tick`` runs at least every 0.1 s while
    waiting (the judge's memory watchdog); it may raise to stop waiting."""
    magic, header_size, payload_size = _PREFIX.unpack(_read_exactly(sock, _PREFIX.size, deadline, tick))
    if magic != MAGIC:
        raise ProtocolError("bad frame magic")
    if header_size > MAX_HEADER_BYTES or payload_size > max_payload:
        raise ProtocolError(f"frame too large ({header_size} header + {payload_size} payload bytes)")
    header = _read_exactly(sock, header_size, deadline, tick)
    payload = _read_exactly(sock, payload_size, deadline, tick)
    try:
        parsed = json.loads(bytes(header))
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProtocolError("header is not JSON or nested too deeply") from exc
    if type(parsed) is not dict or set(parsed) != {"kind", "fields"}:
        raise ProtocolError("malformed header")
    try:
        return _build(parsed["kind"], parsed["fields"], payload, expect)
    except ProtocolError:
        raise
    except Exception as exc:  # anything the checks above missed is still the sender's fault
        if is_out_of_memory(exc):  # except the reader's own memory running out: the sender kept to its bound
            raise
        raise ProtocolError(f"malformed {str(parsed['kind'])[:40]} message ({type(exc).__name__})") from exc
