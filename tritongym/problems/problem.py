"""The Problem type: an immutable description of one reference module to be rewritten in Triton."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tritongym.problems.sizes import int_constants, override_int_constants


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
    """Size overrides that make the problem quick on the CPU interpreter (bundled problems)."""

    @property
    def solution_class(self) -> str:
        """The class a candidate must define: ``ModelNew``, or ``<entry_point>New``."""
        return f"{self.entry_point}New"

    @property
    def sizes(self) -> dict[str, int]:
        """Module-level integer constants of the reference source (``batch_size`` ...)."""
        return int_constants(self.source)

    def to_dict(self) -> dict[str, str]:
        """What a problem travels with (HTTP, the task store); ``Problem(**d)`` rebuilds it."""
        return {"name": self.name, "source": self.source, "entry_point": self.entry_point}

    def with_sizes(self, **sizes: int) -> Problem:
        """A copy whose module-level integer constants are overridden (to shrink it for the CPU)."""
        if not sizes:
            return self
        return replace(self, source=override_int_constants(self.source, sizes))

    def small(self) -> Problem:
        """This problem at its CPU-friendly sizes (unchanged if it declares none)."""
        return self.with_sizes(**self.small_sizes)
