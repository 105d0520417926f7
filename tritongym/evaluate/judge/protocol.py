"""The one channel between the judge and a runner: typed messages in length-prefixed frames.

A frame is ``MAGIC``, the header's length (u32) and the payload's length (u64), a UTF-8 JSON
header ``{"kind": ..., "fields": {...}}`` and the payload: the raw bytes of every tensor in the
message, back to back. A tensor in the header is ``{"T": [blob, dtype, shape]}`` (contiguous),
``{"T": [blob, dtype, shape, strides]}`` where its layout is dense but not contiguous (a transposed
input arrives transposed; its bytes are in storage order), or, in the judge's messages only
(``Message.LAYOUTS``), ``{"T": [blob, dtype, shape, strides, extent]}`` for any other layout (a slice
with gaps, an expanded view: the ``extent`` elements of storage it covers); lists, tuples and
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
    LAYOUTS: ClassVar[bool] = False
    """Whether its tensors travel in any layout (the judge's inputs: a slice with gaps, an expanded
    view, as a GPU's trial slots keep them), not only a dense one (everything a runner sends, whose
    bytes must stay within the answer's bound)."""


@dataclass
class Hello(Message):
    """Runner -> judge: forked, hardened and warm; waiting for its candidate."""

    KIND: ClassVar[str] = "hello"
    pid: int = 0
    started: dict[str, float] = field(default_factory=dict)
    """When (``time.monotonic``, the machine's clock) each part of its start ended: ``serve`` (it
    began running its own code after the fork), ``context`` (its CUDA context made, a first
    allocation and launch done), ``warm`` (Triton's driver and the op witness's profiler started),
    ``hardened`` (capabilities, Landlock and seccomp in place): the judge's per-stage split of a
    runner's start (RunnerHandle.start_seconds; no ``context`` on the CPU)."""


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
    LAYOUTS: ClassVar[bool] = True
    init_args: Tree = None
    init_kwargs: Tree = None
    state: Tree = None
    """The reference's parameters and buffers by name (copied where name and shape match)."""
    arg_count: int = 0
    seed: int = 0
    """The seed of torch's generators when the reference's constructor ran (drawn for the job, apart from
    the trials' secret seeds): the solution's constructor runs under it too, as KernelBench seeds both,
    so what a solution derives from its own fresh parameters in ``__init__`` (a transposed or packed
    copy) matches the state copied into it."""
    memory_limit_bytes: int = 0
    """Where nonzero (the CPU's second size, drawn once the runner was loaded), the runner's address
    space limit from now on, as ``Load``'s."""


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
    LAYOUTS: ClassVar[bool] = True
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
    answers: list = field(default_factory=list)
    """[numel, dtype] of each output tensor the reference returns (a trial's; empty for a timing's): the
    runner samples what forward hands its launches that could hold one and was not the kernels' work
    (``Output.handed``)."""


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
    host_bytes: int = 0
    """Bytes of device memory forward copied to the host (``placement.host_read_bytes``; counted by
    ``HostTensors`` on the CPU, ``HostReads`` on a GPU): the runner's word, as its op counts are."""
    handed: list[int] = field(default_factory=list)
    """Per entry of ``Call.answers``, the element where the runner's samples of that output start (-1
    where it has none); empty where none wait. The samples are of the memory forward handed a launch of
    its kernels that could hold an output and was not the kernels' work then (``handed.FirstHanded``: a
    tensor of an output's size and dtype, or an output's worth of a storage's bytes read in its dtype),
    from that start on, every ``handed.stepped_sample``-th, as they were before that launch ran: one
    holding the answer then was computed outside the kernels (red team 15 #5, red team 16 #1). Where
    any wait, the judge answers with ``Expected``, the runner with ``Handed``."""
    reach: list = field(default_factory=list)
    """``[role, index, reach]`` for each tensor an own launch's lanes reached past, masked lanes included
    (``races.reach``, under the interpreter; none on a GPU): how far, as a multiple of the tensor's size;
    its role forward's input (``"input"``, its index among the input tensors), its output (``"output"``),
    or neither (``"other"``, -1). The runner's word: the judge draws the second size above it
    (second_size.py), and a reach told smaller only gives back the draw of a block that fits."""


@dataclass
class Fallback(Message):
    """Judge -> runner: one forward with every launch of the candidate's kernels made to fail."""

    KIND: ClassVar[str] = "fallback"
    LAYOUTS: ClassVar[bool] = True
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
    LAYOUTS: ClassVar[bool] = True
    args: Tree = None
    in_slots: bool = False
    """As for Call."""
    out_slots: bool = False
    """As for Call."""
    other_poison: bool = False
    """Fill with the second poison (+inf, False, the smallest integer) instead of the first (NaN, True,
    the largest integer): an answer may hold one of them everywhere, never both (red team 5 #8)."""
    answers: list = field(default_factory=list)
    """[numel, dtype] of each output tensor the reference returns: the runner sends back a copy of each
    tensor of that size and dtype that forward made and passed to a skipped launch (``made``)."""


@dataclass
class HollowResult(Message):
    KIND: ClassVar[str] = "hollow_result"
    value: Tree = None
    """forward's output, or None if it raised (or where it is in the output slots)."""
    out_slots: bool = False
    """As for Output."""
    made: int = 0
    """How many samples wait (then the judge may answer with ``Expected``, the runner with ``Handed``)
    of the tensors forward made and passed to a launch of its kernels, of an output's size and dtype:
    the elements ``runner.answer_sample`` picks, as they were when the launch was skipped. No kernel
    had run, so one holding the answer was computed without Triton (red team 13 #6)."""


@dataclass
class Expected(Message):
    """Judge -> runner, after a trial's ``Output`` or a hollow forward's ``HollowResult`` where samples
    wait: per output tensor, [the reference's output at the elements the samples hold, the error each
    may have] (``compare.element_bounds``), or None. Of no use to a later call: none has these inputs."""

    KIND: ClassVar[str] = "expected"
    references: Tree = None


@dataclass
class Handed(Message):
    """Runner -> judge: of the samples waiting, per output the nearest the reference's
    (``handed.nearest``: ``FirstHanded.PER_OUTPUT`` of a trial's, as [start, elements];
    ``MadeBeforeKernels.PER_OUTPUT`` of a hollow forward's, as elements)."""

    KIND: ClassVar[str] = "handed"
    samples: Tree = None


@dataclass
class Profile(Message):
    """Judge -> runner (GPU): profile one forward and attribute its GPU time (profiling.py)."""

    KIND: ClassVar[str] = "profile"
    LAYOUTS: ClassVar[bool] = True
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
                                      FallbackResult, Hollow, HollowResult, Expected, Handed, Profile, ProfileResult,
                                      Attach, Batch, BatchQueued)}  # fmt: skip


# --- values -------------------------------------------------------------------------------------


def dense(shape: tuple, stride: Any) -> bool:
    """Whether ``stride`` is a layout of ``shape`` whose elements cover exactly ``numel`` places of
    storage, each once (a permutation of a contiguous layout: non-overlapping and dense)."""
    if not isinstance(stride, (list, tuple)) or len(stride) != len(shape):
        return False
    if not all(type(x) is int and 0 <= x < 1 << 62 for x in stride):
        return False
    expected = 1
    for size, step in sorted(((s, st) for s, st in zip(shape, stride, strict=True) if s != 1), key=lambda d: d[1]):
        if size == 0 or step != expected:
            return False
        expected *= size
    return True


def _layout(t: torch.Tensor, any_layout: bool) -> tuple[list[int], int] | None:
    """The strides a tensor travels with and the elements of storage it covers from its offset on:
    its own where its layout is dense but not contiguous (a transposed or permuted tensor: the
    problem's input may be one, and a kernel must be judged on it as it is; red team 10 #4), and with
    ``any_layout`` any other layout too (a slice with gaps, an expanded view); else None (sent
    contiguous)."""
    shape, stride = tuple(t.shape), tuple(t.stride())
    if not t.numel() or t.is_contiguous():
        return None
    if dense(shape, stride):
        return list(stride), t.numel()
    if not any_layout or any(st < 0 for st in stride):
        return None
    return list(stride), _extent(shape, stride)


def _extent(shape, stride) -> int:
    """Elements of storage a (non-empty) tensor of this shape and stride covers from its offset on."""
    return 1 + sum((size - 1) * step for size, step in zip(shape, stride, strict=True))


def _tensor_bytes(t: torch.Tensor, layout: tuple[list[int], int] | None) -> memoryview:
    t = t.detach().to("cpu")
    # with a layout, the storage it covers in storage order, from its offset on
    flat = t.contiguous().reshape(-1) if layout is None else torch.as_strided(t, (layout[1],), (1,), t.storage_offset())
    if flat.dtype.is_complex:
        flat = torch.view_as_real(flat).reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else memoryview(b"")


def encode_tree(value: Any, blobs: list, depth: int = 0, any_layout: bool = False) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    if type(value) is torch.Tensor or type(value) is torch.nn.Parameter:
        if value.dtype not in _DTYPE_NAMES:
            return {"O": f"tensor of dtype {value.dtype}"}
        layout = _layout(value, any_layout)
        blobs.append(_tensor_bytes(value, layout))
        header = [len(blobs) - 1, _DTYPE_NAMES[value.dtype], list(value.shape)]
        if layout is None:
            return {"T": header}
        stride, extent = layout
        return {"T": [*header, stride] if extent == value.numel() else [*header, stride, extent]}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        items = [encode_tree(v, blobs, depth + 1, any_layout) for v in value]
        return {"L" if type(value) is list else "U": items}
    if type(value) is dict:
        items = [[k, encode_tree(v, blobs, depth + 1, any_layout)] for k, v in value.items() if type(k) in (str, int)]
        return {"D": items}
    if value is None or type(value) in (bool, int, float, str):
        return value
    return {"O": type(value).__name__[:100]}


class _Decoder:
    def __init__(self, payload: memoryview, any_layout: bool = False):
        self.payload, self.offset, self.nodes, self.blob = payload, 0, 0, 0
        self.any_layout = any_layout
        """Whether a tensor may come in any layout (a message of the judge's, ``Message.LAYOUTS``)."""

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
        if tag == "T" and type(body) is list and len(body) in (3, 4, 5):
            return self.tensor(*body)
        raise ProtocolError(f"unknown value tag {str(tag)[:20]!r}")

    def tensor(self, index: Any, dtype_name: Any, shape: Any, stride: Any = None, extent: Any = None) -> torch.Tensor:
        if index != self.blob or dtype_name not in DTYPES or type(shape) is not list:
            raise ProtocolError("malformed tensor header")
        if len(shape) > 16 or not all(type(s) is int and 0 <= s < 1 << 40 for s in shape):
            raise ProtocolError("malformed tensor shape")
        numel = 1
        for s in shape:
            numel *= s
        if extent is None:
            if stride is not None and (type(stride) is not list or not dense(tuple(shape), stride)):
                raise ProtocolError("malformed tensor strides (only a dense layout travels)")
            extent = numel
        elif not (self.any_layout and numel and _any_layout(shape, stride, extent)):
            raise ProtocolError("malformed tensor layout (only the judge's inputs travel in any layout)")
        self.blob += 1
        dtype = DTYPES[dtype_name]
        size = extent * torch.empty((), dtype=dtype).element_size()
        if self.offset + size > len(self.payload):
            raise ProtocolError("tensor bytes exceed the payload")
        raw = bytearray(self.payload[self.offset : self.offset + size])
        self.offset += size
        if not numel:
            return torch.empty(shape, dtype=dtype)
        flat = torch.frombuffer(raw, dtype=torch.uint8).view(dtype)
        return flat.reshape(shape) if stride is None else torch.as_strided(flat, shape, stride)


def _any_layout(shape: list, stride: Any, extent: Any) -> bool:
    """Whether ``stride`` and ``extent`` describe a layout of ``shape`` (non-negative strides, the
    storage it covers exactly ``extent`` elements)."""
    if type(stride) is not list or len(stride) != len(shape) or type(extent) is not int:
        return False
    if not all(type(x) is int and 0 <= x < 1 << 40 for x in stride):
        return False
    return extent == _extent(shape, stride)


# --- frames -------------------------------------------------------------------------------------


def encode(message: Message) -> list:
    """The frame of a message, as a list of buffers to send in order."""
    blobs: list = []
    body = {}
    for f in fields(message):
        value = getattr(message, f.name)
        body[f.name] = encode_tree(value, blobs, any_layout=message.LAYOUTS) if f.type == "Tree" else value
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
    decoder = _Decoder(payload, any_layout=cls.LAYOUTS)
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
