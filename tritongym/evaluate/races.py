"""Data races between the programs of one interpreted grid (red team 10 #1).

Triton's interpreter runs the programs of a grid one after another. A GPU runs them at once, in no
order, with nothing between them but atomics. So a kernel whose programs share memory without atomics
(a read-modify-write of one output by every program, program 0 zeroing what the others add to
atomically, a program reading what another one writes) is right under the interpreter, where every
program sees the previous one's finished work, and wrong on a GPU, where their accesses interleave.
The CPU verdict would be ``ok`` for a kernel whose GPU verdict is ``mismatch``, and RL on the CPU
would pay for it.

:class:`GridAccesses` records, while one grid runs, the address of every element each program loads,
stores or updates atomically (through the interpreter's builder: in Triton 3.9 every load and store
of a pointer or a tensor descriptor, and every atomic, goes through ``create_masked_load``,
``create_masked_store``, ``create_atomic_rmw`` or ``create_atomic_cas``; the block pointers of older
releases were not checked), and :meth:`GridAccesses.check`
then finds an element that two programs touched where one of them stored it without an atomic, or
one of them read it with a plain load while the other updated it atomically, and nothing ordered the
two: a race on a GPU. Atomics and volatile loads (how a program polls a flag) among themselves are
no race, and atomics order plain accesses the way a lock or a counter does: an element only ordering
atomics touch (a lock, a counter; not ``sem="relaxed"`` ones, nor volatile loads) that the earlier
program updated after its access and the later one before its own orders the two (Triton's atomics
are acquire-release by default; the
layer-norm tutorial's lock and a "last program sums the partials" counter are not races). That is
the order of the one schedule the interpreter ran, as a dynamic race detector sees it: an atomic that
orders nothing on a GPU (a counter no program's control flow reads) still counts as ordering there.
Two programs storing the same bits to an element (the redundant programs of a grid larger than the
kernel needs) leave memory the same in any order: no race. Elements are compared by their first
byte's address, so two accesses of different widths that overlap at another byte are not seen.
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np

LOAD, STORE, ATOMIC = 0, 1, 2
"""Kinds of access: a plain load, a plain store, an atomic (or volatile) one."""
_NAMES = {LOAD: "loads", STORE: "stores", ATOMIC: "updates atomically"}
COMPACT_AT = 1 << 20
"""Recorded accesses of one kind after which they are first reduced to distinct (element, program)
pairs (40 bytes each until then)."""


class DataRace(RuntimeError):
    """Two programs of one grid touched the same element where a GPU gives no order between them."""


class GridAccesses:
    """The elements each program of one grid accessed, by kind and when (see the module docstring)."""

    def __init__(self, name: str):
        self.name = name
        self.grid = (1, 1, 1)
        """The grid's dimensions, as the interpreter's builder holds them while it runs."""
        self._parts: dict[int, list[tuple]] = {LOAD: [], STORE: [], ATOMIC: []}
        """Per kind: (addresses, programs, first ticks, last ticks, stored bits) of each access, or of
        the distinct (element, program) pairs once compacted (_compact)."""
        self._counts = dict.fromkeys(self._parts, 0)
        self._compact_at = dict.fromkeys(self._parts, COMPACT_AT)
        """Per kind, the count at which the record is compacted next: twice what it held after the last
        compaction, at least COMPACT_AT (compacting at a fixed count would compact at every access once
        the distinct pairs alone reach it)."""
        self._tick = 0
        """Accesses so far: the programs run one after another, so this orders every access of the grid."""

    def record(
        self, kind: int, program: tuple, grid: tuple, pointers, mask=None, values=None, ordering: bool = True
    ) -> None:
        """Note that ``program`` of ``grid`` accessed the elements at ``pointers`` (where ``mask`` is True);
        for a store, ``values`` are what it wrote there; an atomic is ``ordering`` unless its semantics
        are relaxed (or it is a volatile load)."""
        self.grid = tuple(int(n) for n in grid)
        shape = np.shape(pointers)
        addresses = np.asarray(pointers, dtype=np.uint64).reshape(-1)
        keep = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), shape).reshape(-1)
        if keep is not None:
            addresses = addresses[keep]
        self._tick += 1
        if not addresses.size:
            return
        n = addresses.size
        if kind == STORE:
            bits = _bits(values, shape, keep, self._tick)
        else:  # an atomic's: whether it orders (acquire, release); unused for a plain load
            bits = np.full(n, int(kind == ATOMIC and ordering), dtype=np.uint64)
        x, y, z = program
        linear = np.full(n, (x * self.grid[1] + y) * self.grid[2] + z, dtype=np.int64)
        tick = np.full(n, self._tick, dtype=np.int64)
        self._parts[kind].append((addresses, linear, tick, tick, bits))
        self._counts[kind] += n
        if self._counts[kind] >= self._compact_at[kind]:
            self._compact(kind)
            self._compact_at[kind] = max(COMPACT_AT, 2 * self._counts[kind])

    def _compact(self, kind: int) -> tuple[np.ndarray, ...]:
        """The distinct (element, program) pairs of a kind, sorted by element then program, each with
        the first and the last tick at which that program accessed that element so, and (stores) the
        bits it left there."""
        parts = self._parts[kind]
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return np.empty(0, dtype=np.uint64), empty, empty, empty, np.empty(0, dtype=np.uint64)
        addresses, programs, first, last, bits = (np.concatenate(column) for column in zip(*parts, strict=True))
        order = np.lexsort((last, programs, addresses))
        addresses, programs, first, last, bits = (a[order] for a in (addresses, programs, first, last, bits))
        starts = np.flatnonzero(np.r_[True, (addresses[1:] != addresses[:-1]) | (programs[1:] != programs[:-1])])
        ends = np.r_[starts[1:], addresses.size] - 1
        compacted = (addresses[starts], programs[starts], np.minimum.reduceat(first, starts), last[ends], bits[ends])
        self._parts[kind] = [compacted]
        self._counts[kind] = starts.size
        return compacted

    def check(self) -> None:
        """Raise :class:`DataRace` for the first element two programs raced on, if any."""
        pairs = {kind: self._compact(kind) for kind in self._parts}
        racing = []
        for a, b in CONFLICTS:
            shared = _shared_with_another(pairs[a], pairs[b])
            if a == b == STORE:  # stores of one value by every program that stores there: no race
                shared &= _values_differ(pairs[STORE])
            racing.append(pairs[a][0][shared])
        racing = np.unique(np.concatenate(racing))
        if not racing.size:
            return
        sync = _synchronisation(pairs)
        pending = MAX_PAIR_CHECKS
        for address in racing[:MAX_RACING_ELEMENTS]:
            events = []
            for kind, (addresses, programs, first, last, bits) in pairs.items():
                lo, hi = np.searchsorted(addresses, address), np.searchsorted(addresses, address, side="right")
                events += [(int(first[i]), int(last[i]), int(programs[i]), kind, int(bits[i])) for i in range(lo, hi)]
            events.sort()
            for j, (later_first, _, q, later_kind, later_bits) in enumerate(events):
                for _, earlier_last, p, earlier_kind, earlier_bits in events[:j]:
                    pending -= 1
                    if pending < 0:
                        return  # more than the check may cost: left unjudged
                    racy = p != q and (earlier_kind, later_kind) in RACING_KINDS
                    if racy and earlier_kind == later_kind == STORE and earlier_bits == later_bits:
                        racy = False  # the same value stored twice: the memory ends the same in any order
                    if racy and not _ordered(sync, p, earlier_last, q, later_first):
                        self._race(p, earlier_kind, q, later_kind)

    def _race(self, mine: int, kind: int, theirs: int, their_kind: int) -> None:
        raise DataRace(
            f"data race in kernel {self.name}: program {self._program(mine)} {_NAMES[kind]} an element that "
            f"program {self._program(theirs)} {_NAMES[their_kind]} in the same launch, with no acquire-release "
            "atomic ordering them. The interpreter runs programs one after another, a GPU runs them at once in "
            "no order: use tl.atomic_add (or another atomic) or a second kernel launch to combine the programs' "
            "results."
        )

    def _program(self, linear: int) -> str:
        _, ny, nz = self.grid
        return f"({linear // (ny * nz)}, {linear // nz % ny}, {linear % nz})"


CONFLICTS = ((STORE, STORE), (STORE, LOAD), (STORE, ATOMIC), (LOAD, ATOMIC))
"""Kinds of access to one element by two programs that race unless ordered."""
RACING_KINDS = frozenset(CONFLICTS) | {(b, a) for a, b in CONFLICTS}
MAX_RACING_ELEMENTS = 1 << 16
"""Elements two programs touched unsafely (before ordering is considered) that are looked at."""
MAX_PAIR_CHECKS = 1 << 21
"""Pairs of accesses the ordering check looks at in one grid at most; past it, the rest is not judged."""


def _shared_with_another(mine: tuple, theirs: tuple) -> np.ndarray:
    """For each pair of ``mine``, whether a pair of ``theirs`` has its element and another program.
    Both are sorted distinct (element, program, ...) pairs."""
    addresses, programs = mine[0], mine[1]
    other_addresses, other_programs = theirs[0], theirs[1]
    if not addresses.size or not other_addresses.size:
        return np.zeros(addresses.size, dtype=bool)
    starts = np.flatnonzero(np.r_[True, other_addresses[1:] != other_addresses[:-1]])
    unique = other_addresses[starts]
    lowest = other_programs[starts]  # sorted by program within an element
    highest = other_programs[np.r_[starts[1:], other_addresses.size] - 1]
    at = np.searchsorted(unique, addresses)
    at_clipped = np.minimum(at, unique.size - 1)
    shared = (at < unique.size) & (unique[at_clipped] == addresses)
    other = np.where(lowest[at_clipped] != programs, lowest[at_clipped], highest[at_clipped])
    return shared & (other != programs)


def _values_differ(stores: tuple) -> np.ndarray:
    """For each (element, program) store pair, whether the programs storing that element left
    different bits there."""
    addresses, bits = stores[0], stores[4]
    if not addresses.size:
        return np.zeros(0, dtype=bool)
    starts = np.flatnonzero(np.r_[True, addresses[1:] != addresses[:-1]])
    counts = np.diff(np.r_[starts, addresses.size])
    lowest, highest = np.minimum.reduceat(bits, starts), np.maximum.reduceat(bits, starts)
    return np.repeat(lowest != highest, counts)


def _bits(values, shape: tuple, keep, tick: int) -> np.ndarray:
    """The bit patterns of a store's values, one per element stored (where ``keep``); where they cannot
    be read as such, a pattern no other store has (the tick, with the top bit set)."""
    n = int(np.prod(shape)) if keep is None else int(keep.sum())
    try:
        flat = np.ascontiguousarray(np.broadcast_to(np.asarray(values), shape)).reshape(-1)
        flat = flat if keep is None else flat[keep]
        return flat.view(f"u{flat.dtype.itemsize}").astype(np.uint64)
    except (TypeError, ValueError):
        return np.full(n, (1 << 63) | tick, dtype=np.uint64)


def _synchronisation(pairs: dict) -> dict[int, dict[int, tuple[int, int]]]:
    """program -> synchronisation element -> (its first, its last atomic tick there). A
    synchronisation element is one only atomics that order touched (a lock, a counter): a program's
    atomic there after an access, and a later program's atomic there before its own, order the two
    accesses (a release and an acquire: Triton's atomics are acq_rel by default; ``sem="relaxed"``
    ones and volatile loads order nothing)."""
    addresses, programs, first, last, ordering = pairs[ATOMIC]
    plain = np.union1d(pairs[LOAD][0], pairs[STORE][0])
    only_atomic = ~np.isin(addresses, plain)
    if addresses.size:  # and only ordering atomics: a relaxed one (or a volatile load) orders nothing
        starts = np.flatnonzero(np.r_[True, addresses[1:] != addresses[:-1]])
        counts = np.diff(np.r_[starts, addresses.size])
        only_atomic &= np.repeat(np.minimum.reduceat(ordering, starts) == 1, counts)
    sync: dict[int, dict[int, tuple[int, int]]] = {}
    for i in np.flatnonzero(only_atomic)[:MAX_RACING_ELEMENTS]:
        sync.setdefault(int(programs[i]), {})[int(addresses[i])] = (int(first[i]), int(last[i]))
    return sync


def _ordered(sync: dict, p: int, p_last: int, q: int, q_first: int) -> bool:
    """Whether program ``p``'s access (last at tick ``p_last``) happens before ``q``'s (first at
    ``q_first``): ``p`` made an atomic on a synchronisation element after it, and ``q`` one on the same
    element before its own."""
    mine, theirs = sync.get(p, {}), sync.get(q, {})
    return any(mine[s][1] > p_last and theirs[s][0] < q_first for s in mine.keys() & theirs.keys())


_running: list[GridAccesses | None] = [None]
"""The grid being recorded (None: accesses are not recorded)."""
_inside_atomic: list[bool] = []
"""Whether each atomic load or store the builder is inside (it makes them of plain ones) orders."""


@contextlib.contextmanager
def recorded(name: str):
    """Record the accesses of the grid that runs inside, and check them once it finished."""
    outer, _running[0] = _running[0], GridAccesses(name)
    try:
        yield
        _running[0].check()
    finally:
        _running[0] = outer


def _note(builder, kind: int, pointers, mask=None, values=None, ordering: bool = True) -> None:
    accesses = _running[0]
    if accesses is None or getattr(builder, "grid_idx", None) is None:
        return
    if _inside_atomic:
        kind, ordering = ATOMIC, _inside_atomic[-1]
    accesses.record(kind, builder.grid_idx, builder.grid_dim, getattr(pointers, "data", pointers),
                    None if mask is None else getattr(mask, "data", mask),
                    None if values is None else getattr(values, "data", values), ordering)  # fmt: skip


def _orders(original, args: tuple, kwargs: dict) -> bool:
    """Whether an atomic call's memory semantics order (anything but relaxed; acq_rel by default)."""
    with contextlib.suppress(TypeError):
        sem = inspect.signature(original).bind(*args, **kwargs).arguments.get("sem")
        return str(getattr(sem, "name", sem)).upper() != "RELAXED"
    return True


def _load(original):
    signature = inspect.signature(original)  # is_volatile's place differs between Triton releases

    def create_masked_load(builder, ptrs, mask, *args, **kwargs):
        volatile = signature.bind(builder, ptrs, mask, *args, **kwargs).arguments.get("is_volatile")
        _note(builder, ATOMIC if volatile else LOAD, ptrs, mask, ordering=False)
        return original(builder, ptrs, mask, *args, **kwargs)

    return create_masked_load


def _store(original):
    def create_masked_store(builder, ptrs, value, mask, *args, **kwargs):
        _note(builder, STORE, ptrs, mask, value)
        return original(builder, ptrs, value, mask, *args, **kwargs)

    return create_masked_store


def _rmw(original):
    def create_atomic_rmw(builder, op, ptr, val, mask, *args, **kwargs):
        _note(builder, ATOMIC, ptr, mask, ordering=_orders(original, (builder, op, ptr, val, mask, *args), kwargs))
        return original(builder, op, ptr, val, mask, *args, **kwargs)

    return create_atomic_rmw


def _cas(original):
    def create_atomic_cas(builder, ptr, *args, **kwargs):
        _note(builder, ATOMIC, ptr, ordering=_orders(original, (builder, ptr, *args), kwargs))
        return original(builder, ptr, *args, **kwargs)

    return create_atomic_cas


def _atomic(original):
    """An atomic load or store, which the interpreter makes of a plain one: counted as atomic."""

    def atomic(builder, *args, **kwargs):
        _inside_atomic.append(_orders(original, (builder, *args), kwargs))
        try:
            return original(builder, *args, **kwargs)
        finally:
            _inside_atomic.pop()

    return atomic


def builder_points() -> list[tuple[type, str, object]]:
    """(class, attribute, wrapper) for each method of the interpreter's builder through which a kernel
    reads or writes memory; empty where this Triton has no interpreter. The launch monitor wraps them
    while it is active, as it wraps the launch points."""
    try:
        from triton.runtime.interpreter import InterpreterBuilder
    except ImportError:
        return []
    wrappers = {"create_masked_load": _load, "create_masked_store": _store, "create_atomic_rmw": _rmw,
                "create_atomic_cas": _cas, "create_atomic_load": _atomic, "create_atomic_store": _atomic}  # fmt: skip
    return [(InterpreterBuilder, name, wrap) for name, wrap in wrappers.items() if name in vars(InterpreterBuilder)]
