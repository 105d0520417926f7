"""Copies of a solution whose kernels miss Triton's caches (benchmarks' RL-like batches)."""

from __future__ import annotations

import importlib.util

from tritongym.solutions.variants import distinct_kernels

SOURCE = """
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def first(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@triton.jit(do_not_specialize=["n"])
def second(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 2.0)


def helper(x):
    return x
"""


def _load(source: str, tmp_path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_kernel_of_each_copy_has_a_cache_key_of_its_own(tmp_path):
    one, two = distinct_kernels(SOURCE), distinct_kernels(SOURCE)
    assert one != two
    changed = [(a, b) for a, b in zip(SOURCE.splitlines(), one.splitlines(), strict=True) if a != b]
    assert [a for a, _ in changed] == ["def first(x_ptr, n, BLOCK: tl.constexpr):",
                                       "def second(x_ptr, n, BLOCK: tl.constexpr):"]  # fmt: skip
    original, copy_one, copy_two = (_load(s, tmp_path, f"m{i}") for i, s in enumerate((SOURCE, one, two)))
    modules = (original, copy_one, copy_two)
    assert len({m.second.cache_key for m in modules}) == 3
    assert len({m.first.fn.cache_key for m in modules}) == 3  # beneath the autotuner
