"""The Problem type: an immutable description of one reference module to be rewritten in Triton."""

from __future__ import annotations

import logging
import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from tritongym.errors import ProblemError
from tritongym.problems.sizes import (
    INPUT_BUDGET,
    changed_sizes,
    describe_changes,
    input_elements,
    int_constants,
    missing_packages,
    module_names,
    override_int_constants,
    second_sizes,
    shrink_sizes,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    """A PyTorch reference problem in the KernelBench convention.

    The source defines the reference class (``Model`` unless ``entry_point`` names another),
    ``get_inputs()`` and ``get_init_inputs()``. Building models and inputs happens inside the
    sandbox process (it executes code); this object is plain data and safe to pass around.
    """

    name: str
    """Short unique name (file stem, KernelBench ``19_ReLU``, or a dataset row id)."""
    source: str
    """Python source of the reference module."""
    entry_point: str = "Model"
    """Name of the reference class; a solution defines ``<entry_point>New`` (``ModelNew``)."""
    level: int | None = None
    """KernelBench level (from a ``levelN`` directory), if known."""
    tags: tuple[str, ...] = ()
    """Free-form labels such as ``reduction`` or ``fp16``."""
    solution: str | None = None
    """A known-good Triton solution (bundled problems, KernelBook ``triton_code``), if any."""
    origin: str = ""
    """Where the problem was loaded from (a path, ``path:row``, or ``bundled``)."""
    small_sizes: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    """Size overrides that make the problem quick on the CPU interpreter (bundled problems); when
    empty, ``small()`` shrinks the size constants to a budget instead."""
    shrunk: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False, hash=False)
    """The size constants ``small()`` changed: name -> (original, small); empty when none was."""

    @property
    def solution_class(self) -> str:
        """The class a candidate must define: ``ModelNew``, or ``<entry_point>New``."""
        return f"{self.entry_point}New"

    @property
    def sizes(self) -> dict[str, int]:
        """Module-level integer size constants of the reference source (``batch_size`` ...), including
        expressions (``N = 2048 * 2``) and chained assignments (``height = width = 128``)."""
        return int_constants(self.source)

    @property
    def size_notice(self) -> str:
        """What ``small()`` changed, for people (``batch_size 4096->16, dim 8192->32``); "" if nothing."""
        return describe_changes(self.shrunk)

    def to_dict(self) -> dict:
        """What a problem travels with (HTTP, the task store); ``Problem(**d)`` rebuilds it. ``shrunk``
        travels where there is one: the judge's second size (``resized``) is made from it."""
        data: dict = {"name": self.name, "source": self.source, "entry_point": self.entry_point}
        if self.shrunk:
            data["shrunk"] = {name: list(pair) for name, pair in self.shrunk.items()}
        return data

    def resized(
        self, draw: random.Random | None = None, cover: float = 0.0, grow: Collection[str] = ()
    ) -> Problem | None:
        """This shrunk problem at a second size (``sizes.second_sizes``: every shrunk constant at
        another value between its small and its full one, drawn by ``draw``, the smallest of each
        where None; above how far the kernel's blocks reached, ``cover``, growing ``grow`` first), or
        None where nothing was shrunk. A judge without a GPU runs one trial there besides those at the
        problem's own sizes, so that a kernel sized for the one shrunk size (a block that covers it, a
        constant baked from it) fails there, as it does at the full size on a GPU; the judge draws it
        in secret, after the trials at the problem's own sizes (judge/second_size.py), so that no table
        of sizes and no block covers it."""
        overrides = second_sizes(self.source, self.shrunk, draw=draw, cover=cover, grow=grow) if self.shrunk else {}
        if not overrides:
            return None
        resized = self.with_sizes(**overrides)
        return replace(resized, shrunk=changed_sizes(self.sizes, resized.sizes))

    def with_sizes(self, **sizes: int) -> Problem:
        """A copy whose module-level integer constants are overridden (constants derived from them follow)."""
        if not sizes:
            return self
        try:
            return replace(self, source=override_int_constants(self.source, sizes))
        except ProblemError as exc:
            raise ProblemError(f"problem {self.name}: {exc}") from None

    def small(self, budget: int = INPUT_BUDGET) -> Problem:
        """This problem at CPU-friendly sizes: its declared ``small_sizes``, or else its size constants
        shrunk until ``get_inputs()`` creates at most ``budget`` elements. ``shrunk`` says what changed."""
        try:
            overrides = self.small_sizes or shrink_sizes(self.source, budget)
        except ProblemError as exc:
            raise ProblemError(f"problem {self.name}: {exc}") from None
        small = self.with_sizes(**overrides)
        original = self.sizes | {name: full for name, (full, _) in self.shrunk.items()}  # small() of a small one
        small = replace(small, shrunk=changed_sizes(original, small.sizes))
        if not self.small_sizes and (elements := input_elements(small.source)[0]) > budget:
            log.warning(
                "problem %s: inputs of %d elements at its smallest sizes, over the budget of %d (%s)",
                self.name,
                elements,
                budget,
                small.size_notice or "no size constant to shrink",
            )
        return small

    def require_packages(self) -> None:
        """Raise ProblemError naming the packages the reference imports that are not installed here."""
        try:
            missing = missing_packages(self.source)
        except ProblemError as exc:
            raise ProblemError(f"problem {self.name}: {exc}") from None
        if missing:
            names = ", ".join(missing)
            raise ProblemError(
                f"problem {self.name} needs {names}, not installed in this environment "
                f"(pip install {' '.join(missing)}, or leave the problem out)"
            )

    def require_definitions(self) -> None:
        """Raise ProblemError naming what a problem must define at module level and this one does not:
        its class (``entry_point``), ``get_inputs`` and ``get_init_inputs``."""
        try:
            names = module_names(self.source)
        except ProblemError as exc:
            raise ProblemError(f"problem {self.name}: {exc}") from None
        wanted = (self.entry_point, "get_inputs", "get_init_inputs")
        if names is not None and (missing := [n for n in wanted if n not in names]):
            raise ProblemError(
                f"problem {self.name} defines no {', '.join(missing)}; a problem defines class "
                f"{self.entry_point}(nn.Module), get_inputs() and get_init_inputs()"
            )

    def prepare(self, small: bool = False, sizes: Mapping[str, int] | None = None) -> Problem:
        """The problem as a run evaluates it: its packages checked, shrunk when ``small``, then the
        explicit ``sizes`` applied. ``shrunk`` compares with the same ``sizes`` at full size, so a
        constant derived from an explicit size is not reported as shrunk."""
        self.require_packages()
        self.require_definitions()
        problem = self.small() if small else self
        sizes = dict(sizes or {})
        if not sizes:
            return problem
        final = problem.with_sizes(**sizes)
        full, now = self.with_sizes(**sizes).sizes, final.sizes
        shrunk = {n: (full[n], now[n]) for n in problem.shrunk if n not in sizes and now[n] != full[n]}
        return replace(final, shrunk=shrunk)


def shrunk_notice(problems: list[Problem]) -> str:
    """What a run says of the problems it shrank: ``""`` where none was; one line for one problem, else a
    line per problem under a heading (a batch of KernelBench problems would make one line of thousands)."""
    shrunk = [p for p in problems if p.shrunk]
    heading = "small sizes (--full to keep them):"
    if len(shrunk) == 1:
        return f"{heading} {shrunk[0].name}: {shrunk[0].size_notice}"
    return (
        "\n".join([f"{len(shrunk)} problems at {heading}", *(f"  {p.name}: {p.size_notice}" for p in shrunk)])
        if shrunk
        else ""
    )
