"""Coverage on a real GPU profile (profiling.profile_forward in this process): launches of the
candidate's kernel are its own wherever PyTorch opens a record around them."""

import importlib.util

import pytest
import torch

from tritongym.evaluate.profiling import profile_forward

pytestmark = pytest.mark.gpu

SOURCE = """
import torch
import triton
import triton.language as tl


@triton.jit
def silu_fwd_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * tl.sigmoid(x), mask=mask)


def launch(x):
    out = torch.empty_like(x)
    silu_fwd_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


class SiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return launch(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class Plain(torch.nn.Module):
    def forward(self, x):
        return launch(x)


class Wrapped(torch.nn.Module):
    def forward(self, x):
        return SiLU.apply(x)
"""


@pytest.fixture(scope="module")
def candidate(tmp_path_factory):
    path = tmp_path_factory.mktemp("profiled") / "candidate.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("profiled_candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


@pytest.mark.parametrize("model", ["Plain", "Wrapped"])
def test_a_kernel_launched_inside_an_autograd_function_is_the_candidates(candidate, model):
    module, path = candidate
    x = torch.randn(1 << 16, device="cuda")
    forward = getattr(module, model)()
    forward(x)  # compiled before the profile
    torch.cuda.synchronize()
    attribution = profile_forward(forward, [x], path, torch.device("cuda"))
    assert attribution.coverage == 1.0, attribution.kernels
    assert [(k["name"], k["own"]) for k in attribution.kernels] == [("silu_fwd_kernel", True)]
