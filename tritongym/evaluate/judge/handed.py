"""The trials' answer check by provenance: what forward hands its own launches, and whose work it holds.

A storage first handed to a launch that already holds the answer was computed before any kernel was
given it (host code, PyTorch's glue), and the kernels only moved it (red team 15 #5). Whether memory
a launch is handed is the kernels' work is decided by what the kernels wrote, not by the handing:

* after each launch, every tensor it was handed is sampled over its extent in its storage (``Left``,
  bytes); a later handing of memory within that extent is the kernels' work where those bytes are
  still what a launch left there (a ``Check`` taken at the handing, compared after forward), and is
  looked at where glue wrote since (red team 16 #1: a buffer handed to a kernel that does nothing,
  then given glue's answer by ``copy_``);
* glue that moves the kernels' work (``clone``, ``copy_``, a cast, ``cat``, ``stack``, whatever view
  they read: ``permute(...).contiguous()``) leaves the kernels' work: its output is sampled as a launch's
  is, valid where its sources were still what a launch left (red team 16's false positive on honest
  glue between kernels); glue that writes from anything else (an input, a weight, a constant, a
  computation) takes that memory's record away. Forward's inputs' and the weights' storages are
  never a source of the kernels' work for glue (so glue's answer built from the inputs, slices and
  ``torch.cat``, is looked at wherever it is handed); their records only tell that a launch left
  them as they are (a kernel working on an input in place, handed it again);
* each tensor handed is looked at in its storage's bytes read in each output's dtype (red team 16
  #1b): one of an output's size and dtype as it is, any other over an output's worth of bytes from
  where it starts and up to where it ends (the answer handed as pieces, or as another dtype's bits),
  and one of an output's size in another numeric dtype also as its values cast to the output's (the
  answer made in float64 and cast by a kernel: red team 19 #1).

Every sample is a strided copy (glue, which the op recorder does not count as forward's compute) on
the current stream, the launch's, with no synchronisation; they are compared after forward's watch
(``FirstHanded.copies``). Every sample of an output starts at one element the runner draws for the
trial. Those not the kernels' work wait for the judge: once forward's output is sent, it sends the
reference's output at the sampled elements with the error each may have (``Expected``), and the runner
sends back, per output, the ``PER_OUTPUT`` nearest it (``nearest``; red team 19 #5: ranked by forward's
own output, decoys nearer it crowded the answer out). The reference's elements reach the runner only
after the call whose inputs they answer, and no later call has those inputs (a trial's are fresh; the
hollow forward's second run on its inputs is looked at for a correct output, which they would make)."""

from __future__ import annotations

import functools
import gc
import itertools
import math
import numbers
import secrets
import weakref
from collections.abc import Callable

import numpy as np
import torch
from torch.utils._python_dispatch import _disable_current_modes

from tritongym.evaluate.judge.tree import tensor_leaves
from tritongym.evaluate.placement import ADDRESS_SHIFT, launch_pointers

HANDED_SAMPLE = 1024
"""Elements of each of ``FirstHanded``'s samples of a region that could hold an output, at most."""

LEFT_BYTES = 16384
"""Bytes of each of ``Left``'s samples, at most: an extent this large or smaller is copied whole."""

LEFT_WIDTH = 8
"""Bytes at each place a larger extent is sampled (every element of up to this size there)."""

KEPT_FLOOR = 32 << 20
"""Bytes of samples and checks a trial keeps in the runner before it settles them (``FirstHanded.settle``)
where forward's handed storages are smaller: the floor of its bound."""

RUNS = 64
"""Dense runs of a strided tensor that a record of what a launch or a move left is made of, at most:
a tensor of more is recorded over its extent where earlier records cover it, else nowhere (its memory
is looked at when handed)."""

ADDRESS_FLOOR = 1 << 32
"""Integers a launch is handed from here on may be the address of device memory (``data_ptr()``, which a
kernel casts to a pointer: red team 19 #13): ``addressed`` looks for the storage holding it. Below it
lie the sizes, strides and offsets a launch is handed."""

MOVES = frozenset(["clone", "copy_", "_to_copy", "cat", "stack"])
"""aten ops that move data (the op recorder's glue) without taking in any but their sources': their
output is the kernels' work where every source is."""

RESHAPES = frozenset(
    ["set_", "resize_", "resize_as_", "detach_", "t_", "transpose_", "squeeze_", "unsqueeze_", "as_strided_",
     "swapdims_", "swapaxes_"]
)  # fmt: skip
"""In-place aten ops that change a tensor's shape or storage, not the data in it."""


@functools.lru_cache(maxsize=64)
def stepped_sample(numel: int) -> int:
    """The step of ``FirstHanded``'s sample of a flat region of ``numel`` elements (every one where they
    are at most ``HANDED_SAMPLE``), from a start drawn in ``[0, step)`` when it is taken (so that no
    forward knows which elements are looked at): a slice with a step is a view, and its copy glue, so
    that taking it inside forward runs no PyTorch compute the op recorder would count as forward's.
    The step is a prime, so that the sample crosses a tensor's rows rather than falling in the few
    columns a step dividing the row length would give (every 16,384th element of a 4096-wide matrix is
    one column: session 10's RMS norm)."""
    step = max(1, -(-numel // HANDED_SAMPLE))
    while step > 1 and any(step % d == 0 for d in range(2, math.isqrt(step) + 1)):
        step += 1
    return step


def extent(t: torch.Tensor) -> tuple[int, int] | None:
    """[first byte, past the last byte) that ``t`` reaches in its storage; None for an empty tensor or
    one without a plain storage."""
    if t.layout is not torch.strided or not t.numel():
        return None
    first = last = t.storage_offset()
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride < 0:
            first += (size - 1) * stride
        else:
            last += (size - 1) * stride
    return first * t.element_size(), (last + 1) * t.element_size()


def runs(t: torch.Tensor) -> list[tuple[int, int]]:
    """[first byte, past the last byte) of each dense run of the elements ``t`` addresses in its storage
    (one, its ``extent``, where it is dense in any order; a row each of a column slice): a strided
    view's extent holds bytes it does not address, which a write through it leaves as they were (red
    team 18 #1). Empty where there are more than ``RUNS``."""
    if t.layout is not torch.strided or not t.numel():
        return []
    dims = sorted((stride, size) for size, stride in zip(t.shape, t.stride(), strict=True) if size > 1 and stride)
    inner = 1
    while dims and dims[0][0] == inner:
        inner *= dims.pop(0)[1]
    if math.prod(size for _, size in dims) > RUNS:
        return []
    width = t.element_size()
    starts = sorted(
        t.storage_offset() + sum(i * stride for i, (stride, _) in zip(index, dims, strict=True))
        for index in itertools.product(*(range(size) for _, size in dims))
    )
    return [(start * width, (start + inner) * width) for start in starts]


def numeric(dtype: torch.dtype) -> bool:
    """Whether ``dtype``'s values cast to another numeric dtype keep what they count (neither a boolean
    nor a complex number): a tensor of an output's size in such a dtype may hold its answer as values."""
    return dtype is not torch.bool and not dtype.is_complex


TABLES = frozenset([torch.int64, torch.uint64])
"""Dtypes of a tensor a launch is handed that may hold addresses (a pointer table: Triton's grouped GEMM
loads its operands' pointers from one), read where it holds at most ``RUNS`` elements."""


def _integers(named: list, depth: int = 0) -> list[int]:
    """The integers among a launch's arguments (one inside a tuple or list too, as ``launch_pointers``
    walks them, and those a pointer table holds: ``TABLES``, red team 19 #14; on a GPU reading one waits
    for the device) from ``ADDRESS_FLOOR`` on."""
    found = []
    for value in named:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= ADDRESS_FLOOR:
            found.append(int(value))
        elif isinstance(value, (tuple, list)) and depth < 4:
            found += _integers(list(value[:256]), depth + 1)
        elif isinstance(value, torch.Tensor) and value.dtype in TABLES and 0 < value.numel() <= RUNS:
            with torch._C.DisableTorchFunction():  # the judge's read: no count of forward's host reads sees it
                found += [v for v in value.detach().reshape(-1).tolist() if v >= ADDRESS_FLOOR]
    return found


def addressed(named: list, wanted: list[tuple[int, torch.dtype]]) -> list[torch.Tensor]:
    """The memory a launch reaches through an integer it is handed, not a tensor (red team 19 #13: glue's
    answer handed as ``answer.data_ptr()``, which the kernel casts to a pointer): for each integer that
    is an address in a live tensor's storage (as forward was given it: shifted by
    ``placement.ADDRESS_SHIFT`` on the CPU, as it is on a GPU otherwise), that storage from there, in each
    output's dtype and of its size where it fits, else as bytes to the storage's end. The storages are
    found among every tensor alive (the garbage collector's), only for a launch handed such an integer."""
    addresses = _integers(named)
    if not addresses:
        return []
    storages = _live_storages()
    found: list[torch.Tensor] = []
    for value in addresses:
        for address in dict.fromkeys((value, value - ADDRESS_SHIFT[0])):
            for start, storage in storages.items():
                offset = address - start
                if not 0 <= offset < storage.nbytes():
                    continue
                fits = False
                for numel, dtype in wanted:
                    size = dtype.itemsize
                    if offset % size == 0 and offset + numel * size <= storage.nbytes():
                        found.append(_typed(storage, dtype)[offset // size :][:numel])
                        fits = True
                if not fits:
                    found.append(_typed(storage, torch.uint8)[offset:])
    return found


def _live_storages() -> dict[int, torch.UntypedStorage]:
    """Address -> storage, of every tensor alive (the garbage collector's) with a plain storage."""
    storages: dict[int, torch.UntypedStorage] = {}
    for t in gc.get_objects():
        if not issubclass(type(t), torch.Tensor):
            continue
        try:
            storage = _storage(t) if t.layout is torch.strided and t.device.type != "meta" else None
        except Exception:  # a tensor subclass of the candidate's that refuses: nothing to find there
            continue
        if storage is not None and storage.nbytes():
            storages.setdefault(storage.data_ptr(), storage)
    return storages


def unhanded(read: np.ndarray, handed: list[tuple[int, int]]) -> np.ndarray:
    """Of the sorted addresses ``read``, those in none of the spans ``handed`` ([first byte, past the last))."""
    if not read.size or not handed:
        return read
    merged: list[list[int]] = []
    for start, end in sorted(handed):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = np.array([m[0] for m in merged], dtype=np.uint64)
    ends = np.array([m[1] for m in merged], dtype=np.uint64)
    at = np.searchsorted(starts, read, side="right") - 1
    inside = (at >= 0) & (read < ends[np.maximum(at, 0)])
    return read[~inside]


def _storage(t: torch.Tensor) -> torch.UntypedStorage | None:
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _typed(storage: torch.UntypedStorage, dtype: torch.dtype) -> torch.Tensor:
    """The whole of ``storage`` as a flat tensor of ``dtype`` (its bytes past the last whole element left out)."""
    count = storage.nbytes() // dtype.itemsize
    return torch.empty(0, dtype=dtype, device=storage.device).set_(storage, 0, (count,), (1,))


class Left:
    """What the kernels left in ``[start, end)`` of a storage, as a sample of its bytes taken then: every
    byte of an extent of at most ``LEFT_BYTES``, else ``LEFT_WIDTH`` bytes at evenly spaced places from
    an offset drawn when it is taken. Its bytes are the kernels' work where its ``parents`` (the records
    of memory it was merged with, or moved from) were and its ``checks`` hold (that memory was still
    what they left when the launch, or glue's move, took it)."""

    __slots__ = ("address", "checks", "end", "parents", "sample", "start", "storage", "valid", "where")

    def __init__(self, storage, start: int, end: int, parents: list[Left], checks: list[Check]) -> None:
        self.storage = weakref.ref(storage)
        self.address = storage.data_ptr()
        self.start, self.end = start, end
        span = end - start
        if span <= LEFT_BYTES:
            self.where = (start, (span,), (1,))
        else:
            rows = LEFT_BYTES // LEFT_WIDTH
            step = span // rows
            self.where = (start + secrets.randbelow(step - LEFT_WIDTH + 1), (rows, LEFT_WIDTH), (step, 1))
        self.sample = self.take()
        self.parents, self.checks = parents, checks
        self.valid: bool | None = None
        """Decided after forward (``FirstHanded.copies``), in the order the records were made."""

    def take(self) -> torch.Tensor | None:
        """The sampled bytes as they are now; None where the storage died or moved (``resize_``)."""
        storage = self.storage()
        if storage is None or storage.data_ptr() != self.address:
            return None
        offset, size, stride = self.where
        return _typed(storage, torch.uint8).as_strided(size, stride, offset).clone()

    def alive(self, storage) -> bool:
        return self.storage() is storage and storage.data_ptr() == self.address

    def overlaps(self, start: int, end: int) -> bool:
        return self.start < end and start < self.end


class Check:
    """A ``Left``'s bytes taken again later: the memory is still what the kernels left where they are
    the same (compared after forward)."""

    __slots__ = ("left", "now", "result")

    def __init__(self, left: Left) -> None:
        self.left, self.now = left, left.take()
        self.result: bool | None = None

    def holds(self) -> bool:
        if self.result is None:
            then, now = self.left.sample, self.now
            self.result = bool(
                self.left.valid and then is not None and now is not None and torch.equal(then.cpu(), now.cpu())
            )
        return self.result


def _covered(records: list[Left], start: int, end: int) -> bool:
    """Whether the extents of ``records`` cover ``[start, end)``."""
    reach = start
    for left in sorted(records, key=lambda r: r.start):
        if left.start > reach:
            break
        reach = max(reach, left.end)
    return reach >= end


class Handing:
    """A sample of a region that could hold output ``output`` (``HANDED_SAMPLE`` elements at most, every
    ``stepped_sample``-th from ``start``), as it was when handed to a launch, with the records of what
    the kernels left there then: it is their work where those cover it and still hold."""

    __slots__ = ("checks", "covered", "output", "sample", "start")

    def __init__(self, output: int, start: int, sample: torch.Tensor, covered: bool, checks: list[Check]) -> None:
        self.output, self.start, self.sample, self.covered, self.checks = output, start, sample, covered, checks

    def kernels_work(self) -> bool:
        return self.covered and all(check.holds() for check in self.checks)


class FirstHanded:
    """What forward hands its own launches in a trial (module docstring): ``see`` before each launch
    (returning what runs after it), ``moved`` around each aten op forward runs (the op recorder's), and
    ``copies`` after forward's watch. ``answers``: [numel, dtype] of each output tensor; ``given``:
    forward's inputs and the model's parameters and buffers (never a source of the kernels' work)."""

    PER_OUTPUT = 256

    def __init__(self, answers: list, given: list | tuple = ()) -> None:
        self.wanted: list[tuple[int, torch.dtype]] = []
        self.outputs: list[int] = []
        """The index in ``answers`` of each of ``wanted``."""
        self.answers = len(answers)
        for index, (numel, name) in enumerate(answers):
            dtype = getattr(torch, str(name).removeprefix("torch."), None)
            if type(numel) is int and numel > 0 and isinstance(dtype, torch.dtype):
                self.wanted.append((numel, dtype))
                self.outputs.append(index)
        self.starts = [secrets.randbelow(stepped_sample(numel)) for numel, _ in self.wanted]
        """Of each of ``wanted``, the first element of its every sample in this trial (every
        ``stepped_sample``-th from there): the judge sends the reference's output there (``nearest``)."""
        self.given = {id(s) for s in map(_storage, given) if s is not None}
        self._given_alive = [s for s in map(_storage, given) if s is not None]  # ids stay theirs
        self.records: dict[int, list[Left]] = {}
        """id(storage) -> what the kernels left in it, as the latest records (extents may overlap)."""
        self.made: list[Left] = []
        """Every record, in the order made (a record's parents and checks are earlier ones')."""
        self.handings: list[Handing] = []
        self.kept = 0
        """Bytes of the samples and checks held (``settle`` past ``KEPT_FLOOR`` or ``handed_bytes``)."""
        self.handed_bytes: dict[int, int] = {}
        """id(storage) -> its bytes, of every storage handed to a launch: what forward's memory is."""
        self.quiet = False
        """True while a launch runs (its launcher's and the interpreter's copies are the launch's) or this
        object's own samples are taken: ``moved`` leaves those alone."""

    # -- what the kernels left -----------------------------------------------------------------------

    def _current(self, storage) -> list[Left]:
        """The live records of ``storage`` (those of a storage that died, whose id is another's, dropped)."""
        key = id(storage)
        records = [r for r in self.records.get(key, []) if r.alive(storage)]
        if records:
            self.records[key] = records
        else:
            self.records.pop(key, None)
        return records

    def _overlapping(self, storage, start: int, end: int) -> list[Left]:
        return [r for r in self._current(storage) if r.overlaps(start, end)]

    def _kernels(self, t: torch.Tensor) -> list[Left] | None:
        """The records covering ``t``'s memory, where the kernels' work covers it (by what they left, as
        their checks will tell), else None."""
        storage, reach = _storage(t), extent(t)
        if storage is None or reach is None or id(storage) in self.given:
            return None
        records = self._overlapping(storage, *reach)
        return records if records and _covered(records, *reach) else None

    def _leave(self, storage, start: int, end: int, checks: dict[Left, Check], parents: list[Left],
               more: list[Check], fresh: set) -> None:  # fmt: skip
        """Record what the kernels left in ``[start, end)`` of ``storage`` now, merged with the records it
        overlaps (each checked before the launch or move, ``checks``; ``fresh``: records made since,
        which need none)."""
        olds = self._overlapping(storage, start, end)
        start, end = min([start, *(r.start for r in olds)]), max([end, *(r.end for r in olds)])
        own = [checks[r] for r in olds if r not in fresh and r in checks]
        if any(r not in fresh and r not in checks for r in olds):
            return  # not checked before: not known to be the kernels' (never so: every overlap is)
        left = Left(storage, start, end, [*olds, *parents], [*own, *more])
        self.kept += left.sample.nbytes if left.sample is not None else 0
        self.records[id(storage)] = [r for r in self._current(storage) if r not in olds] + [left]
        self.made.append(left)
        fresh.add(left)

    def _spans(self, t: torch.Tensor, storage) -> list[tuple[int, int]]:
        """Where a record of what a launch or a move left in ``t`` goes: its dense runs (``runs``); for a
        view of more than ``RUNS``, its extent where the records of that memory cover it (the bytes
        between its runs already the kernels' work, as those records' checks will tell), else nowhere."""
        found, reach = runs(t), extent(t)
        if found or reach is None:
            return found
        covering = self._overlapping(storage, *reach)
        return [reach] if covering and _covered(covering, *reach) else []

    def _forget(self, t: torch.Tensor) -> None:
        storage, reach = _storage(t), extent(t)
        if storage is not None and reach is not None:
            olds = self._overlapping(storage, *reach)
            self.records[id(storage)] = [r for r in self._current(storage) if r not in olds]

    # -- a launch --------------------------------------------------------------------------------------

    def see(self, args: tuple, kwargs: dict) -> Callable[[], None] | None:
        """Before a launch: sample what could hold an output in what it is handed, and check the records
        of that memory. Returns what records, after the launch, what it left. Its own copies run past
        the dispatch modes (the op recorder's: they are the judge's, not forward's, and a third of the
        cost; the op witness sees them as the glue they are)."""
        if not self.wanted:
            return None
        quiet, self.quiet = self.quiet, True
        handed: list[tuple[torch.Tensor, object, tuple[int, int]]] = []
        checks: dict[Left, Check] = {}
        try:
            with _disable_current_modes():
                named = [*enumerate(args), *kwargs.items()]
                tensors = [value for _, value in launch_pointers(named)]
                for value in [*tensors, *addressed([value for _, value in named], self.wanted)]:
                    storage, reach = _storage(value), extent(value)
                    if storage is None or reach is None:
                        continue
                    self.handed_bytes[id(storage)] = storage.nbytes()
                    handed.append((value, storage, reach))
                    for left in self._overlapping(storage, *reach):
                        checks.setdefault(left, self._check(left))
                    self._look(value, storage, reach, checks)
        finally:
            self.quiet = True  # the launch's own copies (the interpreter's) are the launch's

        def after(grids: list = ()) -> None:
            fresh: set = set()
            try:
                with _disable_current_modes():
                    self._reached(grids, handed)
                    for value, storage, _reach in handed:
                        for start, end in self._spans(value, storage):
                            self._leave(storage, start, end, checks, [], [], fresh)
                    self._bound()
            finally:
                self.quiet = quiet

        return after

    def _reached(self, grids: list, handed: list) -> None:
        """Memory a launch's grids read (``races.GridAccesses.read``: the interpreter records every address a
        program loads) outside every extent it was handed: a kernel's pointer arithmetic reaches any memory
        from a tensor it is handed (red team 19 #15: glue's answer read at ``x_ptr + distance``, never
        handed). In each live storage holding such reads, the bytes from the first to the last read
        (and a last element of the widest output's) are looked at as a handed tensor is, as they are after
        the launch: no launch left them, or the checks of their records tell. A GPU records no address a
        kernel reads, so there this memory is not looked at (red team 19's README, E)."""
        read = [grid.read() for grid in grids]
        addresses = np.unique(np.concatenate(read)) if read else np.empty(0, dtype=np.uint64)
        spans = [(storage.data_ptr() + reach[0], storage.data_ptr() + reach[1]) for _, storage, reach in handed]
        outside = unhanded(addresses, spans)
        if not outside.size:
            return
        width = max(dtype.itemsize for _, dtype in self.wanted)
        for start, storage in _live_storages().items():
            if storage.device.type != "cpu":
                continue
            lo, hi = np.searchsorted(outside, [start, start + storage.nbytes()])
            if lo == hi:
                continue
            reach = (int(outside[lo]) - start, min(int(outside[hi - 1]) - start + width, storage.nbytes()))
            self.handed_bytes[id(storage)] = storage.nbytes()
            checks: dict[Left, Check] = {}
            for left in self._overlapping(storage, *reach):
                checks.setdefault(left, self._check(left))
            self._look(_typed(storage, torch.uint8)[reach[0] : reach[1]], storage, reach, checks)

    def _look(self, t: torch.Tensor, storage, reach: tuple[int, int], checks: dict[Left, Check]) -> None:
        """Sample each region of ``t``'s storage that could hold an output (``regions``), with the checks
        of the records covering it."""
        for output, start, end, flat in self.regions(t, storage, reach):
            first = self.starts[output]
            covering = self._overlapping(storage, start, end)
            for left in covering:
                checks.setdefault(left, self._check(left))
            covered = bool(covering) and _covered(covering, start, end)
            sample = flat[first :: stepped_sample(flat.numel())].to(self.wanted[output][1], copy=True)
            self.kept += sample.nbytes
            self.handings.append(Handing(output, first, sample, covered, [checks[r] for r in covering]))

    def regions(self, t: torch.Tensor, storage, reach: tuple[int, int]) -> list:
        """(output, first byte, past the last, the region flat in the output's dtype) for each region of
        ``t`` that could hold an output: ``t`` itself where it is of that output's size and dtype
        (``reshape``: its elements in order, whatever its layout), else an output's worth of its
        storage's bytes read in the output's dtype from where ``t`` starts and up to where it ends; one of
        an output's size in another numeric dtype both ways: its values, sampled cast to the output's dtype
        (red team 19 #1: glue's answer made in float64, cast by a kernel into the float32 output), and its
        bytes."""
        found = []
        for i, (numel, dtype) in enumerate(self.wanted):
            if t.numel() == numel and (t.dtype == dtype or (numeric(t.dtype) and numeric(dtype))):
                found.append((i, *reach, t.detach().reshape(-1)))
                if t.dtype == dtype:
                    continue
            size = numel * dtype.itemsize
            for start in dict.fromkeys((reach[0], reach[1] - size)):
                if start >= 0 and start % dtype.itemsize == 0 and start + size <= storage.nbytes():
                    flat = _typed(storage, dtype)[start // dtype.itemsize :][:numel]
                    found.append((i, start, start + size, flat))
        return found

    # -- glue ------------------------------------------------------------------------------------------

    def moved(self, func, args: tuple, kwargs: dict) -> Callable[[object], None] | None:
        """Around an aten op of forward's (the op recorder's): where it writes memory in place, that memory
        stops being the kernels' work, unless the op moves data (``MOVES``) whose every source is; an op
        that moves the kernels' work into memory of its own makes that memory theirs. Returns what runs
        with the op's output, or None."""
        if self.quiet or not self.wanted:
            return None
        name = func.overloadpacket.__name__
        if name in RESHAPES:
            return None
        written, sources = _written(func, args, kwargs)
        if not written and name not in MOVES:
            return None  # a new tensor computed: nothing was the kernels' there
        self.quiet = True
        try:
            covering = [self._kernels(s) for s in sources if s.numel()]
            if name not in MOVES or not covering or any(c is None for c in covering):
                for t in written:
                    self._forget(t)
                return None
            parents = list(dict.fromkeys(r for c in covering for r in c if c is not None))
            more = [self._check(r) for r in parents]
            checks: dict[Left, Check] = {}
            for t in written:
                storage, reach = _storage(t), extent(t)
                if storage is not None and reach is not None:
                    for left in self._overlapping(storage, *reach):
                        checks.setdefault(left, self._check(left))
            read = {id(s) for s in map(_storage, sources) if s is not None}
        finally:
            self.quiet = False

        def after(out: object) -> None:
            targets = written or [
                t for t in tensor_leaves(out) if isinstance(t, torch.Tensor) and id(_storage(t)) not in read
            ]
            fresh: set = set()
            self.quiet = True
            try:
                for t in targets:
                    storage = _storage(t)
                    if storage is not None:
                        for start, end in self._spans(t, storage):
                            self._leave(storage, start, end, checks, parents, more, fresh)
                self._bound()
            finally:
                self.quiet = False

        return after

    def _check(self, left: Left) -> Check:
        check = Check(left)
        self.kept += check.now.nbytes if check.now is not None else 0
        return check

    # -- the bound --------------------------------------------------------------------------------------

    def _bound(self) -> None:
        if self.kept > max(KEPT_FLOOR, sum(self.handed_bytes.values())):
            self.settle()

    def settle(self) -> None:
        """Decide every record and handing so far and free what no later check needs: the samples of
        records since merged or taken away, every check's bytes, the handings that were the kernels'
        work. Called past the bound (``KEPT_FLOOR``, or the bytes of the storages forward handed, the
        larger) so that the runner keeps no more than forward's own memory; on a GPU it reads the checks
        to the host after the device's work is done (the one synchronisation, past the bound: a sample
        taken on a launch's stream is complete before it is read)."""
        if any(left.sample is not None and left.sample.is_cuda for left in self.made):
            torch.cuda.synchronize()
        for left in self.made:
            if left.valid is None:
                left.valid = all(p.valid for p in left.parents) and all(c.holds() for c in left.checks)
        looked = []
        for handing in self.handings:
            if not handing.kernels_work():
                handing.covered, handing.checks = False, []
                looked.append(handing)
        current = {id(r) for records in self.records.values() for r in records}
        for left in self.made:
            for check in left.checks:
                check.now = None
            left.parents, left.checks = [], []
            if id(left) not in current:
                left.sample = None
        self.made = [left for left in self.made if id(left) in current]
        self.handings = looked
        self.kept = sum(left.sample.nbytes for left in self.made if left.sample is not None)
        self.kept += sum(handing.sample.nbytes for handing in looked)

    # -- after forward ---------------------------------------------------------------------------------

    def copies(self) -> list[tuple[int, list, torch.Tensor]]:
        """(the output's index in ``answers``, [start, sample], the sample) of each sample that is not the
        kernels' work, in host memory, in the order handed; those holding one value everywhere left out (a
        zeroed or fresh buffer: a constant answer is not looked for). The judge is sent those ``nearest``
        the reference's output."""
        from tritongym.evaluate.judge.runner import one_value

        for left in self.made:  # parents and checks are earlier records': decided first
            if left.valid is None:
                left.valid = all(p.valid for p in left.parents) and all(c.holds() for c in left.checks)
        found = []
        for handing in self.handings:
            if handing.kernels_work():
                continue
            sample = handing.sample.to("cpu", copy=True)
            try:
                if not sample.numel() or one_value(sample):
                    continue
            except (RuntimeError, NotImplementedError):  # a dtype without a max or min here (float8)
                pass
            found.append((self.outputs[handing.output], [handing.start, sample], sample))
        self.handings, self.made, self.records = [], [], {}
        return found

    def waiting(self, copies: list) -> list[int]:
        """Per entry of ``answers``, the start of its samples among ``copies`` (-1 where it has none); empty
        where there are none: what ``Output.handed`` tells the judge."""
        if not copies:
            return []
        starts = [-1] * self.answers
        for output, (start, _), _ in copies:
            starts[output] = start
        return starts


def nearest(copies: list[tuple[int, object, torch.Tensor]], references: list, per_output: int) -> list:
    """Of ``copies`` ((output index, what is sent, the sample)), the payloads of the ``per_output`` nearest
    the reference's output, per output, in their order: ``references`` holds per output [the elements the
    samples hold, the error each may have] (``Expected``, ``compare.element_bounds``), or None. Ranked by
    ``excess``, ties by order: a sample ranked before one within the tolerance is within it too (red
    team 19 #5: ranked by forward's own output, 256 decoys nearer it than the answer were sent instead)."""
    ranked: dict[int, list[tuple[float, int, object]]] = {}
    for order, (output, payload, sample) in enumerate(copies):
        reference = references[output] if 0 <= output < len(references) else None
        valid = isinstance(reference, list) and len(reference) == 2
        valid = valid and all(isinstance(t, torch.Tensor) for t in reference)
        score = excess(sample, *reference) if valid else math.inf
        ranked.setdefault(output, []).append((score, order, payload))
    kept = [entry for entries in ranked.values() for entry in sorted(entries, key=lambda e: e[:2])[:per_output]]
    return [payload for _, _, payload in sorted(kept, key=lambda entry: entry[1])]


def excess(sample: torch.Tensor, reference: torch.Tensor, allowed: torch.Tensor) -> float:
    """How many times the error it may have ``sample`` is off ``reference`` at its worst element: 0 where
    it equals it (NaN where it is NaN), at most 1 within the tolerance, inf where it cannot be compared
    (an exact dtype's sample that differs anywhere; another shape)."""
    try:
        if sample.is_complex():
            sample = torch.view_as_real(sample).reshape(-1)
        if sample.shape != reference.shape or allowed.shape != reference.shape or not sample.numel():
            return math.inf
        if not reference.is_floating_point():
            return 0.0 if sample.dtype == reference.dtype and torch.equal(sample, reference) else math.inf
        a, r = sample.double(), reference.double()
        same = (a == r) | (torch.isnan(a) & torch.isnan(r))
        ratio = torch.where(same, 0.0, (a - r).abs() / allowed.double())
        return float(torch.nan_to_num(ratio, nan=math.inf, posinf=math.inf).amax())
    except (RuntimeError, NotImplementedError, TypeError):  # no cast to float64 here: the farthest
        return math.inf


def _written(func, args: tuple, kwargs: dict) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(the tensors an aten op writes in place, every other tensor it is given), by its schema."""
    written: list[torch.Tensor] = []
    sources: list[torch.Tensor] = []
    try:
        arguments = func._schema.arguments
    except AttributeError:
        arguments = []
    positional = [a for a in arguments if not a.kwarg_only]
    named = [(a, args[i]) for i, a in enumerate(positional) if i < len(args)]
    named += [(a, kwargs[a.name]) for a in arguments if a.name in kwargs]
    for argument, value in named:
        tensors = [value] if isinstance(value, torch.Tensor) else []
        if isinstance(value, (list, tuple)):
            tensors = [v for v in value if isinstance(v, torch.Tensor)]
        writes = argument.alias_info is not None and argument.alias_info.is_write
        (written if writes else sources).extend(tensors)
    return written, sources
