"""Red team 19 #8 (the CPU's rewrite of the tutorials' device idiom, ``placement.candidate_code``): in the
branch a GPU does not take (``else`` of ``torch.cuda.is_available()``, the branch the CPU runs), the
rewrite makes each ``"cpu"`` a fresh string that names the device. Forward's copy "to the host" there
(``x.to("cpu")``) is then no copy to the host, and its row sums by NumPy read what the count of host
reads must still see: the CPU's verdict is what a GPU's would be for the same copy."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        host = x.to("cuda") if torch.cuda.is_available() else x.to("cpu")
        sums = torch.tensor(host.numpy(force=True).sum(axis=1), device=x.device)
        out = torch.empty(x.shape[0], device=x.device)
        copy_kernel[(1,)](sums, out, out.numel(), BLOCK=1024)
        return out
