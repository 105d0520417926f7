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
atomics touch (a lock, a counter; not ``sem="relaxed"`` ones, nor ``scope="cta"`` ones, which order
nothing between programs, nor volatile loads) that the earlier program updated after its access with
a releasing atomic and the later one before its own with an acquiring one orders the two (Triton's
atomics are acquire-release by default; the
layer-norm tutorial's lock and a "last program sums the partials" counter are not races). An atomic
orders two programs only where the later one's acquire read what the earlier one's release wrote, and
on a GPU nothing makes it read that unless the program waits for it: the interpreter's one schedule
always has the earlier program's atomics first, so a counter that no program reads (a throwaway
``tl.atomic_add`` around a racy read-modify-write, red team 11's open item) looked like a lock. So an
acquire counts only where the later program *observed* it (red team 12 #1): its control flow (an
``if``, a ``while``, an index) or the mask of the access read a value computed from the atomic's
result, and that value would have been different had the atomic run while the earlier program was at
its access (had it read what the synchronisation element held then). A spin lock's ``while
atomic_cas(...) == 1`` would have spun; a last program's ``if count == n - 1`` would not have been
taken; ``if count >= 0`` and an unread counter would have run the same, and order nothing. Values are
followed through the interpreter's builder (every operation on a value derived from an atomic's
result is kept, and evaluated again with the other value); a value that leaves the builder (a
reduction computed in NumPy by the interpreter) is no longer followed, so what it decides orders
nothing (stricter, never more lenient).
Two programs storing the same bits to an element (the redundant programs of a grid larger than the
kernel needs) leave memory the same in any order: no race. Elements are compared by their first
byte's address, so two accesses of different widths that overlap at another byte are not seen.
"""

from __future__ import annotations

import bisect
import contextlib
import inspect

import numpy as np

LOAD, STORE, ATOMIC = 0, 1, 2
"""Kinds of access: a plain load, a plain store, an atomic (or volatile) one."""
ACQUIRE, RELEASE = 1, 2
ACQ_REL = ACQUIRE | RELEASE
"""What an atomic's memory semantics order (Triton's default: both); relaxed ones and those of a CTA's
scope (which orders nothing between programs) order neither."""
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
        self._events: list[list] = []
        """Small atomics (at most EVENT_ELEMENTS elements): [program, tick, addresses, keep, what each
        element held before it (None until known)], in tick order."""
        self._observations: dict[int, list[tuple]] = {}
        """program -> (tick, events it depends on, evaluate, what was observed), one per observation."""
        self.values: dict[int, tuple] = {}
        """id(value) -> (value, how it was made): the values derived from atomics' results
        (``("event", id)`` or ``("op", function, builder, args, kwargs)``), kept alive while the grid runs."""
        self.spans: dict[int, int] = {}
        """Per access with a lane kept: the lowest address a kept lane touched -> the highest address of
        any of its lanes, masked ones included (the interpreter computes every lane's): how far the
        grid's blocks reach past what they touch (``reach``: the second size's draw, second_size.py)."""

    def record(
        self, kind: int, program: tuple, grid: tuple, pointers, mask=None, values=None, ordering: int = ACQ_REL
    ) -> int | None:
        """Note that ``program`` of ``grid`` accessed the elements at ``pointers`` (where ``mask`` is True);
        for a store, ``values`` are what it wrote there; an atomic's ``ordering`` is what its semantics
        order (ACQUIRE, RELEASE; none where relaxed, of a CTA's scope, or a volatile load). Returns, for
        a small ordering atomic, the event whose result :meth:`returned` gives."""
        ordering = ACQ_REL if ordering is True else int(ordering)
        self.grid = tuple(int(n) for n in grid)
        shape = np.shape(pointers)
        addresses = np.asarray(pointers, dtype=np.uint64).reshape(-1)
        keep = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), shape).reshape(-1)
        highest = int(addresses.max()) if addresses.size else 0
        if keep is not None:
            addresses = addresses[keep]
        self._tick += 1
        if not addresses.size:
            return None
        lowest = int(addresses.min())
        self.spans[lowest] = max(self.spans.get(lowest, 0), highest)
        n = addresses.size
        event = None
        if kind == ATOMIC and ordering and n <= EVENT_ELEMENTS:
            event = len(self._events)
            self._events.append([self._linear(program), self._tick, addresses, keep, None, ordering])
        if kind == STORE:
            bits = _bits(values, shape, keep, self._tick)
        else:  # an atomic's: whether it orders (acquire, release); unused for a plain load
            bits = np.full(n, int(kind == ATOMIC and ordering != 0), dtype=np.uint64)
        linear = np.full(n, self._linear(program), dtype=np.int64)
        tick = np.full(n, self._tick, dtype=np.int64)
        self._parts[kind].append((addresses, linear, tick, tick, bits))
        self._counts[kind] += n
        if self._counts[kind] >= self._compact_at[kind]:
            self._compact(kind)
            self._compact_at[kind] = max(COMPACT_AT, 2 * self._counts[kind])
        return event

    def read(self) -> np.ndarray:
        """The address of every element a program of the grid loaded or updated atomically, each once, sorted
        (the trials' answer check looks at memory a launch read that it was not handed: handed.py)."""
        columns = [part[0] for kind in (LOAD, ATOMIC) for part in self._parts[kind]]
        return np.unique(np.concatenate(columns)) if columns else np.empty(0, dtype=np.uint64)

    def _linear(self, program: tuple) -> int:
        x, y, z = program
        return (x * self.grid[1] + y) * self.grid[2] + z

    def returned(self, event: int, held) -> None:
        """What each element of atomic ``event`` held before it (an RMW's or CAS's result, an atomic
        load's value), in the shape of its pointers."""
        flat = np.asarray(held).reshape(-1)
        keep = self._events[event][3]
        self._events[event][4] = (flat if keep is None else flat[keep]).copy()

    def observe(self, program: tuple, events: frozenset, evaluate, observed) -> None:
        """``program``'s control flow (or an access's mask) read ``observed``, computed from the results of
        atomic ``events``; ``evaluate({event: other result})`` computes it again from other results."""
        if events:
            self._observations.setdefault(self._linear(program), []).append((self._tick, events, evaluate, observed))

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
        self._index(sync)
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
                    if racy and not self._ordered(sync, p, earlier_last, q, later_first):
                        self._race(p, earlier_kind, q, later_kind)

    def _ordered(self, sync: dict, p: int, p_last: int, q: int, q_first: int) -> bool:
        """Whether program ``p``'s access (last at tick ``p_last``) happens before ``q``'s (first at
        ``q_first``): ``p`` made an atomic on a synchronisation element after it, ``q`` one on the same
        element before its own, and ``q`` observed that atomic's result in a way the element's value at
        ``p``'s access would have changed (module docstring)."""
        # the answer depends on the accesses' ticks only through which atomics and observations lie
        # between them: one answer per such position (a grid's pairs are many, its atomics few)
        key = (p, bisect.bisect_right(self._ticks, p_last), q, bisect.bisect_left(self._ticks, q_first))
        if key not in self._memo:
            self._memo[key] = self._synchronised(sync, p, p_last, q, q_first)
        return self._memo[key]

    def _synchronised(self, sync: dict, p: int, p_last: int, q: int, q_first: int) -> bool:
        mine, theirs = sync.get(p, {}), sync.get(q, {})
        for element in mine.keys() & theirs.keys():
            if theirs[element][0] >= q_first or not self._released(element, p, p_last):
                continue
            if self._waited(element, p_last, q, q_first):
                return True
        return False

    def _index(self, sync: dict) -> None:
        """Per element, the small atomics there in tick order (tick, program, flags, what it found), per
        program its observations' ticks, and every tick the ordering check compares an access's with
        (atomics, observations, the synchronisation elements' first ticks): looked up once per check."""
        self._at: dict[int, tuple[list, list]] = {}
        by_element: dict[int, list] = {}
        for program, at, addresses, _, held, flags in self._events:
            for i, address in enumerate(addresses.tolist()):
                by_element.setdefault(address, []).append((at, program, flags, None if held is None else held[i]))
        for address, found in by_element.items():  # events are appended in tick order
            self._at[address] = ([f[0] for f in found], found)
        self._seen = {q: [o[0] for o in found] for q, found in self._observations.items()}
        firsts = {first for elements in sync.values() for first, _ in elements.values()}
        self._ticks = sorted(
            {e[1] for e in self._events} | {t for ticks in self._seen.values() for t in ticks} | firsts
        )
        self._memo: dict[tuple, bool] = {}
        self._waits: dict[tuple, bool] = {}

    def _released(self, element: int, p: int, p_last: int) -> bool:
        """Whether ``p`` made a releasing atomic on ``element`` after tick ``p_last``."""
        ticks, found = self._at.get(element, ([], []))
        return any(
            program == p and flags & RELEASE for _, program, flags, _ in found[bisect.bisect_right(ticks, p_last) :]
        )

    def _waited(self, element: int, p_last: int, q: int, q_first: int) -> bool:
        """Whether ``q``, before tick ``q_first``, observed an atomic's result at ``element`` such that
        the value the element held at tick ``p_last`` would have made the observation differ."""
        then = self._held_after(element, p_last)
        if then is None:
            return False
        seen = bisect.bisect_left(self._seen.get(q, []), q_first)
        key = (element, then.tobytes() if hasattr(then, "tobytes") else then, q, seen)
        if key not in self._waits:
            self._waits[key] = self._would_differ(element, then, self._observations.get(q, [])[:seen], q)
        return self._waits[key]

    def _would_differ(self, element: int, then, observations: list, q: int) -> bool:
        for tick, events, evaluate, observed in observations:
            for event in events:
                program, at, addresses, _, held, flags = self._events[event]
                if program != q or at > tick or held is None or not flags & ACQUIRE:
                    continue
                where = np.flatnonzero(addresses == element)
                if not where.size or np.all(held[where] == then):
                    continue
                other = held.copy()
                other[where] = then
                try:
                    again = evaluate({event: other})
                except Exception:  # not evaluable again: no wait shown (a value it cannot follow orders nothing)
                    continue
                if not np.array_equal(np.asarray(again), np.asarray(observed)):
                    return True
        return False

    def _held_after(self, element: int, tick: int):
        """What ``element`` held just after ``tick``: what the next small atomic there found (only atomics
        touch a synchronisation element); None where that is unknown."""
        ticks, found = self._at.get(element, ([], []))
        start = bisect.bisect_right(ticks, tick)
        return found[start][3] if start < len(found) else None

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
EVENT_ELEMENTS = 64
"""Atomics of at most this many elements (a lock, a counter) are kept as events whose results a
program's control flow may observe; a larger one (a block of sums) orders nothing."""
MAX_VALUES = 1 << 18
"""Values derived from atomics' results followed in one grid at most; past it, no more are (what they
decide then orders nothing)."""
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


def reach(grids: list[GridAccesses], tensors: list[tuple[int, int, int]]) -> list[float]:
    """How far past each tensor's start the lanes of ``grids`` (one launch's) reached, as a multiple of
    the tensor's bytes, for each of the tensors ``(first byte's address, past the last, element size)``
    the launch was handed (0 where no access started in it). An access counts for the tensor holding
    its lowest kept address (of views of one storage holding it, the one it reaches least past), with
    its highest lane's, masked or not. A block fitted to the tensor (``cdiv(n, BLOCK)`` programs, a
    ``next_power_of_2`` row) reaches at most about 2; one block of 4096 over 1000 elements 4.1."""
    found = [0.0] * len(tensors)
    if not tensors or not any(grid.spans for grid in grids):
        return found
    lows = np.array([low for grid in grids for low in grid.spans], dtype=np.float64)
    highs = np.array([high for grid in grids for high in grid.spans.values()], dtype=np.float64)
    ratios = np.full((len(tensors), lows.size), np.inf)
    for i, (start, end, size) in enumerate(tensors):
        inside = (lows >= start) & (lows < end)
        ratios[i, inside] = (highs[inside] + size - start) / max(end - start, 1)
    least = ratios.min(axis=0)  # each access under the tensor it reaches least past
    for i in range(len(tensors)):
        mine = ratios[i] == least
        mine &= np.isfinite(least)
        if mine.any():
            found[i] = float(ratios[i, mine].max())
    return found


_running: list[GridAccesses | None] = [None]
"""The grid being recorded (None: accesses are not recorded)."""
_inside_atomic: list[int] = []
"""What each atomic load or store the builder is inside (it makes them of plain ones) orders."""


@contextlib.contextmanager
def recorded(name: str):
    """Record the accesses of the grid that runs inside (yielded: ``GridAccesses.read``), and check them once
    it finished."""
    outer, _running[0] = _running[0], GridAccesses(name)
    followed = len(_followed)
    try:
        yield _running[0]
        _running[0].check()
    finally:
        _running[0] = outer
        while len(_followed) > followed:  # the builder as it was before this grid followed values
            cls, name, original = _followed.pop()
            setattr(cls, name, original)


_followed: list[tuple[type, str, object]] = []
"""(class, attribute, what it held) for each builder method wrapped to follow values derived from
atomics: wrapped at a grid's first such value (most grids have none, and pay nothing), put back when
the grid ends."""


def _follow(builder) -> None:
    """Follow values through every method of the builder that makes one (once per grid)."""
    cls = type(builder)
    if any(owner is cls for owner, _, _ in _followed):
        return
    for name, value in list(vars(cls).items()):
        if name.startswith("_") or name in _STATE | _MEMORY | _WRAPPED or not inspect.isfunction(value):
            continue
        _followed.append((cls, name, value))
        setattr(cls, name, _derived(value))


def _note(builder, kind: int, pointers, mask=None, values=None, ordering: int = ACQ_REL) -> int | None:
    accesses = _running[0]
    if accesses is None or getattr(builder, "grid_idx", None) is None:
        return None
    if _inside_atomic:
        kind, ordering = ATOMIC, _inside_atomic[-1]
    if mask is not None and id(mask) in accesses.values:  # the access happens where a derived value says
        _observed(accesses, builder, mask, lambda h: np.asarray(h.data, dtype=bool).copy())
    return accesses.record(kind, builder.grid_idx, builder.grid_dim, getattr(pointers, "data", pointers),
                           None if mask is None else getattr(mask, "data", mask),
                           None if values is None else getattr(values, "data", values), ordering)  # fmt: skip


def _result(builder, event: int | None, result) -> None:
    """An atomic's result: what the elements held before it, a value whose uses are followed."""
    accesses = _running[0]
    if event is None or accesses is None or not hasattr(result, "data"):
        return
    accesses.returned(event, result.data)
    if len(accesses.values) < MAX_VALUES:
        accesses.values[id(result)] = (result, ("event", event))
        _follow(builder)


def _derived(original):
    """A builder method: its result is followed where an argument is a value derived from an atomic's."""

    def method(builder, *args, **kwargs):
        out = original(builder, *args, **kwargs)
        accesses = _running[0]
        followed = accesses is not None and accesses.values and len(accesses.values) < MAX_VALUES
        if followed and hasattr(out, "data") and any(id(a) in accesses.values for a in _handles(args, kwargs)):
            accesses.values[id(out)] = (out, ("op", original, builder, args, kwargs))
        return out

    return method


def _handles(args: tuple, kwargs: dict) -> list:
    found = []
    for value in (*args, *kwargs.values()):
        found += value if isinstance(value, (list, tuple)) else [value]
    return found


def _evaluated(accesses: GridAccesses, value, other: dict, memo: dict):
    """``value`` computed again with the results of the atomics in ``other`` replaced."""
    entry = accesses.values.get(id(value))
    if entry is None:
        return value
    if id(value) in memo:
        return memo[id(value)]
    _, (how, *made) = entry
    if how == "event":
        replaced, keep = other.get(made[0]), accesses._events[made[0]][3]
        data = None
        if replaced is not None:  # what the atomic found where its mask let it, the rest as it returned
            data = np.array(value.data, copy=True).reshape(-1)
            data[slice(None) if keep is None else keep] = replaced
            data = data.reshape(np.shape(value.data))
        again = value if data is None else type(value)(data, value.dtype)
    else:
        function, builder, args, kwargs = made

        def redo(v):
            if isinstance(v, (list, tuple)):
                return type(v)(redo(item) for item in v)
            return _evaluated(accesses, v, other, memo)

        again = function(builder, *redo(args), **{k: redo(v) for k, v in kwargs.items()})
    memo[id(value)] = again
    return again


def _events(accesses: GridAccesses, value) -> frozenset:
    """The atomics whose results ``value`` was computed from."""
    found, todo, seen = set(), [value], set()
    while todo:
        entry = accesses.values.get(id(todo.pop()))
        if entry is None or id(entry[0]) in seen:
            continue
        seen.add(id(entry[0]))
        how, *made = entry[1]
        if how == "event":
            found.add(made[0])
        else:
            todo += _handles(made[2], made[3])
    return frozenset(found)


def _observed(accesses: GridAccesses, builder, value, convert) -> None:
    """The running program read ``convert(value)`` (a branch, an index, an access's mask)."""
    program = getattr(builder, "grid_idx", None)
    if program is None:
        return
    accesses.observe(program, _events(accesses, value),
                     lambda other: convert(_evaluated(accesses, value, other, {})), convert(value))  # fmt: skip


def _as_bool(handle):
    data = np.asarray(handle.data)
    return bool(data) if data.size == 1 else True  # the interpreter's own reading of a tensor as a bool


def _as_index(handle):
    return int(np.asarray(handle.data).squeeze())


def _sink(read, convert):
    """A ``tl.tensor`` conversion Python's control flow makes (``__bool__``, ``__index__``): observed."""

    def conversion(tensor):
        accesses, handle = _running[0], getattr(tensor, "handle", None)
        if accesses is not None and handle is not None and id(handle) in accesses.values:
            from triton.runtime.interpreter import interpreter_builder

            _observed(accesses, interpreter_builder, handle, convert)
        return read(tensor)

    conversion._tritongym_sink = True
    return conversion


def _patch_tensor(original):
    """The interpreter's patch of ``tl.tensor`` for a kernel's run: its conversions to a bool and an
    index (what an ``if``, a ``while`` or an index reads) observe the values derived from atomics."""

    def patch(tensor, *args, **kwargs):
        out = original(tensor, *args, **kwargs)
        scope = args[0] if args else kwargs.get("scope")
        for name, convert in (("__bool__", _as_bool), ("__index__", _as_index)):
            read = vars(tensor).get(name)
            if read is not None and not getattr(read, "_tritongym_sink", False):
                setter = getattr(scope, "set_attr", None) or setattr
                setter(tensor, name, _sink(read, convert))
        return out

    return patch


_MEMORY = frozenset(["create_masked_load", "create_masked_store", "create_load", "create_store", "create_atomic_rmw",
                     "create_atomic_cas", "create_atomic_load", "create_atomic_store", "create_atomic_poll",
                     "create_tensor_descriptor_load", "create_tensor_descriptor_store", "create_descriptor_load",
                     "create_descriptor_store", "create_descriptor_gather", "create_descriptor_scatter"])  # fmt: skip
"""Builder methods that touch memory: a value read through a pointer derived from an atomic's result is
not followed (evaluating it again would read memory as it is now)."""


def _orders(original, args: tuple, kwargs: dict) -> int:
    """What an atomic call's memory semantics order between programs (ACQUIRE, RELEASE; acq_rel by
    default): nothing where relaxed, or where its scope is one CTA (one program: a GPU orders another
    program's accesses only by atomics of the GPU's or the system's scope)."""
    with contextlib.suppress(TypeError):
        bound = inspect.signature(original).bind(*args, **kwargs).arguments
        sem = str(getattr(bound.get("sem"), "name", bound.get("sem"))).upper()
        if str(getattr(bound.get("scope"), "name", bound.get("scope"))).upper() == "CTA":
            return 0
        return {"RELAXED": 0, "ACQUIRE": ACQUIRE, "RELEASE": RELEASE}.get(sem, ACQ_REL)
    return ACQ_REL


def _load(original):
    signature = inspect.signature(original)  # is_volatile's place differs between Triton releases

    def create_masked_load(builder, ptrs, mask, *args, **kwargs):
        volatile = signature.bind(builder, ptrs, mask, *args, **kwargs).arguments.get("is_volatile")
        event = _note(builder, ATOMIC if volatile else LOAD, ptrs, mask, ordering=0)
        out = original(builder, ptrs, mask, *args, **kwargs)
        _result(builder, event, out)  # an atomic load's (the builder makes it of a volatile load)
        return out

    return create_masked_load


def _store(original):
    def create_masked_store(builder, ptrs, value, mask, *args, **kwargs):
        event = _note(builder, STORE, ptrs, mask, value)
        if event is not None:  # an atomic store: what it overwrites is what the element held before it
            held = _memory(ptrs, mask)
            if held is not None:
                _running[0].returned(event, held)
        return original(builder, ptrs, value, mask, *args, **kwargs)

    return create_masked_store


def _memory(ptrs, mask):
    """What memory holds at ``ptrs`` (where ``mask``), read as the interpreter reads it; None where this
    Triton reads it otherwise."""
    try:
        from triton.runtime import interpreter

        dtype = interpreter._get_np_dtype(ptrs.get_element_ty())
        other = np.zeros(np.shape(ptrs.data), dtype=dtype)
        return interpreter._interpreter.load(ptrs.data, np.asarray(mask.data, dtype=bool), other, dtype)
    except Exception:
        return None


def _rmw(original):
    def create_atomic_rmw(builder, op, ptr, val, mask, *args, **kwargs):
        ordering = _orders(original, (builder, op, ptr, val, mask, *args), kwargs)
        event = _note(builder, ATOMIC, ptr, mask, ordering=ordering)
        out = original(builder, op, ptr, val, mask, *args, **kwargs)
        _result(builder, event, out)
        return out

    return create_atomic_rmw


def _cas(original):
    def create_atomic_cas(builder, ptr, *args, **kwargs):
        event = _note(builder, ATOMIC, ptr, ordering=_orders(original, (builder, ptr, *args), kwargs))
        out = original(builder, ptr, *args, **kwargs)
        _result(builder, event, out)
        return out

    return create_atomic_cas


def _poll(original):
    """``tl.atomic_poll``: volatile loads of each element until it holds the expected value (acquire by
    default). Each load is an atomic, and the program waits on what it read: had the element held
    anything else, the poll would have kept spinning (or, with a timeout, returned False)."""

    def create_atomic_poll(builder, ptr, expected, *args, **kwargs):
        accesses, first = _running[0], len(_running[0]._events) if _running[0] is not None else 0
        _inside_atomic.append(_orders(original, (builder, ptr, expected, *args), kwargs))
        try:
            out = original(builder, ptr, expected, *args, **kwargs)
        finally:
            _inside_atomic.pop()
        program = getattr(builder, "grid_idx", None)
        if accesses is None or program is None:
            return out
        addresses = np.asarray(ptr.data).reshape(-1).tolist()
        values = np.broadcast_to(np.asarray(expected.data), np.shape(ptr.data)).reshape(-1).tolist()
        wanted = dict(zip(addresses, values, strict=True))
        for event in range(first, len(accesses._events)):
            address, held = accesses._events[event][2][0], accesses._events[event][4]
            if address in wanted and held is not None:
                value = wanted[address]
                again = _polled(event, value)
                accesses.observe(program, frozenset([event]), again, again({event: held}))
        return out

    return create_atomic_poll


def _polled(event: int, value):
    """Whether a poll's load ``event`` found the value that ends its wait, from what it found."""
    return lambda found: bool(found[event][0] == value)


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
    from triton.runtime import interpreter

    wrappers = {"create_masked_load": _load, "create_masked_store": _store, "create_atomic_rmw": _rmw,
                "create_atomic_cas": _cas, "create_atomic_load": _atomic, "create_atomic_store": _atomic,
                "create_atomic_poll": _poll}  # fmt: skip
    points: list[tuple[object, str, object]] = [
        (InterpreterBuilder, name, wrap) for name, wrap in wrappers.items() if name in vars(InterpreterBuilder)
    ]
    if "_patch_lang_tensor" in vars(interpreter):
        points.append((interpreter, "_patch_lang_tensor", _patch_tensor))
    return points


_WRAPPED = frozenset(["create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas",
                      "create_atomic_load", "create_atomic_store", "create_atomic_poll"])  # fmt: skip
"""Builder methods the launch monitor wraps to record accesses (builder_points)."""
_STATE = frozenset(["set_grid_idx", "set_grid_dim", "get_options", "set_options"])
"""Builder methods that set its state rather than make a value."""
