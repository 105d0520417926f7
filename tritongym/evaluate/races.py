"""Data races between the programs of one interpreted grid (red team 10 #1).

Triton's interpreter runs the programs of a grid one after another. A GPU runs them at once, in no
order, with nothing between them but atomics. So a kernel whose programs share memory without atomics
(a read-modify-write of one output by every program, program 0 zeroing what the others add to
atomically, a program reading what another one writes) is right under the interpreter, where every
program sees the previous one's finished work, and wrong on a GPU, where their accesses interleave.
The CPU verdict would be ``ok`` for a kernel whose GPU verdict is ``mismatch``, and RL on the CPU
would pay for it.

:class:`GridAccesses` records, while one grid runs, the address of every element each program loads,
stores or updates atomically (through the interpreter's builder: every load and store of a pointer,
a block pointer or a tensor descriptor, and every atomic, goes through ``create_masked_load``,
``create_masked_store``, ``create_atomic_rmw`` or ``create_atomic_cas``), and :meth:`GridAccesses.check`
then finds an element that two programs touched where one of them stored it without an atomic, or
one of them read it with a plain load while the other updated it atomically: a race on a GPU,
whatever the order. Atomics and volatile loads (how a program polls a flag) among themselves are
synchronisation, not a race. Elements are compared by their first byte's address, so two accesses
of different widths that overlap at another byte are not seen.
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np

LOAD, STORE, ATOMIC = 0, 1, 2
"""Kinds of access: a plain load, a plain store, an atomic (or volatile) one."""
_NAMES = {LOAD: "loads", STORE: "stores", ATOMIC: "updates atomically"}
COMPACT_AT = 1 << 22
"""Recorded accesses of one kind after which they are reduced to distinct (element, program) pairs."""


class DataRace(RuntimeError):
    """Two programs of one grid touched the same element where a GPU gives no order between them."""


class GridAccesses:
    """The elements each program of one grid accessed, by kind (see the module docstring)."""

    def __init__(self, name: str):
        self.name = name
        self.grid = (1, 1, 1)
        """The grid's dimensions, as the interpreter's builder holds them while it runs."""
        self._parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {LOAD: [], STORE: [], ATOMIC: []}
        self._counts = dict.fromkeys(self._parts, 0)

    def record(self, kind: int, program: tuple, grid: tuple, pointers, mask=None) -> None:
        """Note that ``program`` of ``grid`` accessed the elements at ``pointers`` (where ``mask`` is True)."""
        self.grid = tuple(int(n) for n in grid)
        addresses = np.asarray(pointers, dtype=np.uint64).reshape(-1)
        if mask is not None:
            addresses = addresses[np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(pointers)).reshape(-1)]
        if not addresses.size:
            return
        x, y, z = program
        linear = (x * self.grid[1] + y) * self.grid[2] + z
        self._parts[kind].append((addresses, np.full(addresses.size, linear, dtype=np.int64)))
        self._counts[kind] += addresses.size
        if self._counts[kind] >= COMPACT_AT:
            self._compact(kind)

    def _compact(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """The distinct (element, program) pairs of a kind, sorted by element then program."""
        parts = self._parts[kind]
        if not parts:
            return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
        addresses = np.concatenate([a for a, _ in parts])
        programs = np.concatenate([p for _, p in parts])
        order = np.lexsort((programs, addresses))
        addresses, programs = addresses[order], programs[order]
        keep = np.ones(addresses.size, dtype=bool)
        keep[1:] = (addresses[1:] != addresses[:-1]) | (programs[1:] != programs[:-1])
        addresses, programs = addresses[keep], programs[keep]
        self._parts[kind] = [(addresses, programs)]
        self._counts[kind] = addresses.size
        return addresses, programs

    def check(self) -> None:
        """Raise :class:`DataRace` for the first element two programs raced on, if any."""
        pairs = {kind: self._compact(kind) for kind in self._parts}
        for first, second in ((STORE, STORE), (STORE, LOAD), (STORE, ATOMIC), (LOAD, ATOMIC)):
            found = _other_program(pairs[first], pairs[second])
            if found is not None:
                mine, theirs = found
                raise DataRace(
                    f"data race in kernel {self.name}: program {self._program(mine)} {_NAMES[first]} an element "
                    f"that program {self._program(theirs)} {_NAMES[second]} in the same launch, without an atomic."
                    " The interpreter runs programs one after another, a GPU runs them "
                    "at once in no order: use tl.atomic_add (or another atomic) or a second kernel launch to "
                    "combine the programs' results."
                )

    def _program(self, linear: int) -> str:
        _, ny, nz = self.grid
        return f"({linear // (ny * nz)}, {linear // nz % ny}, {linear % nz})"


def _other_program(mine: tuple[np.ndarray, np.ndarray], theirs: tuple[np.ndarray, np.ndarray]):
    """(one program, another program) for an element that a pair of ``mine`` and a pair of
    ``theirs`` share with different programs, else None. Both are sorted distinct pairs."""
    addresses, programs = mine
    other_addresses, other_programs = theirs
    if not addresses.size or not other_addresses.size:
        return None
    starts = np.flatnonzero(np.r_[True, other_addresses[1:] != other_addresses[:-1]])
    unique = other_addresses[starts]
    lowest = other_programs[starts]  # sorted by program within an element
    highest = other_programs[np.r_[starts[1:], other_addresses.size] - 1]
    at = np.searchsorted(unique, addresses)
    at_clipped = np.minimum(at, unique.size - 1)
    shared = (at < unique.size) & (unique[at_clipped] == addresses)
    other = np.where(lowest[at_clipped] != programs, lowest[at_clipped], highest[at_clipped])
    races = np.flatnonzero(shared & (other != programs))
    if not races.size:
        return None
    i = races[0]
    return int(programs[i]), int(other[i])


_running: list[GridAccesses | None] = [None]
"""The grid being recorded (None: accesses are not recorded)."""
_inside_atomic = [0]
"""How deep the builder is inside an atomic load or store (which it makes of a plain one)."""


@contextlib.contextmanager
def recorded(name: str):
    """Record the accesses of the grid that runs inside, and check them once it finished."""
    outer, _running[0] = _running[0], GridAccesses(name)
    try:
        yield
        _running[0].check()
    finally:
        _running[0] = outer


def _note(builder, kind: int, pointers, mask=None) -> None:
    accesses = _running[0]
    if accesses is None or getattr(builder, "grid_idx", None) is None:
        return
    if _inside_atomic[0]:
        kind = ATOMIC
    accesses.record(kind, builder.grid_idx, builder.grid_dim, getattr(pointers, "data", pointers),
                    None if mask is None else getattr(mask, "data", mask))  # fmt: skip


def _load(original):
    signature = inspect.signature(original)  # is_volatile's place differs between Triton releases

    def create_masked_load(builder, ptrs, mask, *args, **kwargs):
        volatile = signature.bind(builder, ptrs, mask, *args, **kwargs).arguments.get("is_volatile")
        _note(builder, ATOMIC if volatile else LOAD, ptrs, mask)
        return original(builder, ptrs, mask, *args, **kwargs)

    return create_masked_load


def _store(original):
    def create_masked_store(builder, ptrs, value, mask, *args, **kwargs):
        _note(builder, STORE, ptrs, mask)
        return original(builder, ptrs, value, mask, *args, **kwargs)

    return create_masked_store


def _rmw(original):
    def create_atomic_rmw(builder, op, ptr, val, mask, *args, **kwargs):
        _note(builder, ATOMIC, ptr, mask)
        return original(builder, op, ptr, val, mask, *args, **kwargs)

    return create_atomic_rmw


def _cas(original):
    def create_atomic_cas(builder, ptr, *args, **kwargs):
        _note(builder, ATOMIC, ptr)
        return original(builder, ptr, *args, **kwargs)

    return create_atomic_cas


def _atomic(original):
    """An atomic load or store, which the interpreter makes of a plain one: counted as atomic."""

    def atomic(builder, *args, **kwargs):
        _inside_atomic[0] += 1
        try:
            return original(builder, *args, **kwargs)
        finally:
            _inside_atomic[0] -= 1

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
