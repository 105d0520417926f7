"""The timed check's Triton kernel (timed_check.py, run by speed.check_counts) against the torch check it
replaced (session 13, throughput9), kept here only as the oracle: the counts must be exactly equal on
adversarial data (a looser timed check is a reward hack). On CPU tensors the kernel runs in Triton's
interpreter; ``test_the_kernel_matches_the_oracle_on_cuda`` runs it compiled where a GPU is present."""

from __future__ import annotations

import math

import pytest
import torch

from tritongym.evaluate.judge import speed

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
OTHERS = [torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool]


def _oracle(expected, got, bounds):
    """speed.check_counts as of session 13 before the kernel: torch operations per chunk."""
    counts = []
    for m, g in enumerate(got):
        bound = bounds[m] if bounds is not None and m < len(bounds) else None
        group = max(1, speed.compare.CHUNK_ELEMENTS // max(g[0].numel(), 1))
        bad = torch.zeros((), dtype=torch.int64, device=g.device)
        imprecise = torch.zeros((), dtype=torch.int64, device=g.device)
        rms = speed._rms([call[m] for call in expected]) if g.is_floating_point() or g.is_complex() else None
        for first in range(0, len(expected), group):
            last = min(first + group, len(expected))
            e = torch.stack([expected[k][m] for k in range(first, last)]) if last - first > 1 else expected[first][m]
            e_flat, g_flat = e.reshape(-1), g[first:last].reshape(-1)
            scale = speed._largest(e_flat) if bound is not None and bound < math.inf else None
            for start in range(0, e_flat.numel(), speed.compare.CHUNK_ELEMENTS):
                ec = e_flat[start : start + speed.compare.CHUNK_ELEMENTS]
                gc = g_flat[start : start + speed.compare.CHUNK_ELEMENTS]
                if ec.is_floating_point() or ec.is_complex():
                    finite = torch.isfinite(ec)
                    same = (ec == gc) | (torch.isnan(ec) & torch.isnan(gc))
                    accepted = same | (torch.isfinite(gc) & ~finite)
                    wide = torch.complex128 if ec.is_complex() else torch.float64
                    e64, g64 = ec.to(wide), gc.to(wide)
                    error = (g64 - e64).abs()
                    if ec.is_complex():
                        fine = (error <= speed.LOOSE_TOLERANCE * (e64.abs() + rms)) & finite
                    else:
                        fine = (error <= (e64.abs() + rms) * speed.LOOSE_TOLERANCE) & finite
                    bad += (~(fine | accepted)).sum()
                    if scale is not None:
                        imprecise += (~((error <= speed.TIMED_SLACK * bound * scale) | accepted)).sum()
                else:
                    bad += (ec != gc).sum()
        counts.append(torch.stack([bad, imprecise]))
    return torch.stack(counts).tolist() if counts else None


def _values(dtype, shape, gen, device):
    """Adversarial values of ``dtype``: ordinary, the dtype's extremes and subnormals, infinities, NaNs, zeros."""
    n = math.prod(shape)
    if dtype == torch.bool:
        return (torch.rand(n, generator=gen) < 0.5).reshape(shape).to(device)
    if not dtype.is_floating_point and not dtype.is_complex:
        info = torch.iinfo(dtype)
        picks = torch.tensor([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=torch.int64)
        t = torch.randint(-100, 100, (n,), generator=gen).clamp(info.min, info.max)
        where = torch.rand(n, generator=gen) < 0.2
        t[where] = picks[torch.randint(0, len(picks), (int(where.sum()),), generator=gen)]
        return t.to(dtype).reshape(shape).to(device)
    real = dtype if not dtype.is_complex else torch.float32
    info = torch.finfo(real)
    specials = torch.tensor([math.inf, -math.inf, math.nan, 0.0, -0.0, info.max, -info.max, info.tiny, info.tiny / 4,
                             info.eps, 1.0], dtype=torch.float64).to(real)  # fmt: skip
    t = (torch.randn(n, generator=gen) * 10.0 ** torch.randint(-3, 4, (n,), generator=gen)).to(real)
    where = torch.rand(n, generator=gen) < 0.15
    t[where] = specials[torch.randint(0, len(specials), (int(where.sum()),), generator=gen)]
    if dtype.is_complex:
        t = torch.complex(t, _values(torch.float32, (n,), gen, "cpu")).to(dtype)
    return t.reshape(shape).to(device)


def _candidate(expected, m, gen, device):
    """A candidate's output for output ``m``: the reference's with noise near the loose and precision
    bounds, some elements replaced by adversarial values, one element off by a little."""
    g = torch.stack([call[m] for call in expected]).clone()
    if not g.numel():
        return g
    flat = g.view(-1)
    if g.dtype.is_floating_point:
        noise = torch.randn(flat.shape, generator=gen).to(torch.float64) * 10.0 ** torch.randint(
            -9, -1, flat.shape, generator=gen
        )
        flat.copy_((flat.double() * (1 + noise).to(flat.device)).to(g.dtype))
    swap = torch.rand(flat.shape, generator=gen) < 0.1
    if swap.any():
        flat[swap.to(device)] = _values(g.dtype, (int(swap.sum()),), gen, device)
    k = int(torch.randint(0, flat.numel(), (), generator=gen))
    flat[k] = flat[k] + 1 if g.dtype != torch.bool else ~flat[k]
    return g


def _case(dtypes, shapes, calls, gen, device):
    expected = [[_values(d, s, gen, device) for d, s in zip(dtypes, shapes, strict=True)] for _ in range(calls)]
    got = [_candidate(expected, m, gen, device) for m in range(len(dtypes))]
    return expected, got


def _check(expected, got, gen):
    for bounds in (None, [float(10.0 ** -int(torch.randint(1, 8, (), generator=gen))) for _ in got],
                   [math.inf for _ in got], [0.0 for _ in got]):  # fmt: skip
        assert speed.check_counts(expected, got, bounds).tolist() == _oracle(expected, got, bounds), bounds


@pytest.mark.parametrize("dtype", FLOATS + OTHERS + [torch.complex64], ids=str)
@pytest.mark.parametrize("chunk", [5, 1 << 24], ids=["chunked", "whole"])
def test_the_kernel_counts_as_the_torch_check(monkeypatch, dtype, chunk):
    # chunk 5: chunk and group boundaries fall inside calls and between them; 0-d and empty outputs beside
    monkeypatch.setattr(speed.compare, "CHUNK_ELEMENTS", chunk)
    gen = torch.Generator().manual_seed(9)
    for trial in range(4):
        shapes = [(3, 1 + trial), (), (0, 2)] if trial % 2 else [(7,), (2, 2), ()]
        expected, got = _case([dtype, dtype, torch.float32], shapes, 1 + trial, gen, "cpu")
        _check(expected, got, gen)


@pytest.mark.parametrize("dtype", [*FLOATS, torch.int64, torch.bool], ids=str)
def test_one_wrong_element_anywhere_is_counted(dtype):
    gen = torch.Generator().manual_seed(3)
    expected = [[(torch.randn(3, 700, generator=gen) * 4).to(dtype)] for _ in range(3)]
    for k in (
        0,
        699,
        1023,
        1024,
        2099,
        3 * 2100 - 1,
    ):  # block boundaries of the GPU's kernel included; integers have no precision bound
        got = [torch.stack([c[0] for c in expected]).clone()]
        flat = got[0].view(-1)
        flat[k] = flat[k] * 3 + 1 if dtype != torch.bool else ~flat[k]
        assert speed.check_counts(expected, got, [1e-3]).tolist() == [[1, int(dtype.is_floating_point)]]
        assert _oracle(expected, got, [1e-3]) == [[1, int(dtype.is_floating_point)]]


@pytest.mark.gpu
def test_the_kernel_matches_the_oracle_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gen = torch.Generator().manual_seed(5)
    for dtype in FLOATS + OTHERS + [torch.complex64]:
        for calls, shapes in ((1, [(1 << 20,), ()]), (5, [(3, 1001), (0,)]), (300, [(17,), (2, 3)])):
            expected, got = _case([dtype, torch.float32], shapes, calls, gen, "cuda")
            _check(expected, got, gen)
