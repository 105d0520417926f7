"""A small design language for Triton kernels of fusion-chain problems.

A *design* is a short sequence of tokens that choose a strategy (honest, lazy, buggy or a known hack)
and its parameters; :func:`render` turns a design and a :class:`FusionSpec` into a complete Triton
``ModelNew`` source. The environment, not this package, decides what each rendering is worth. Used by
the learning experiment (docs/learning.md, ``python -m tritongym.design``), where a small transformer
writes designs instead of code and the trainer trains it (the task plug-in of ``task.py``).
"""

from tritongym.design.language import SLOTS, STRATEGIES, Design, DesignSpace
from tritongym.design.problems import FusionSpec, bundled_specs, generate_specs, spec_problem
from tritongym.design.render import render

__all__ = [
    "SLOTS",
    "STRATEGIES",
    "Design",
    "DesignSpace",
    "FusionSpec",
    "bundled_specs",
    "generate_specs",
    "render",
    "spec_problem",
]
