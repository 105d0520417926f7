"""Red team 13 #6's limit: row sums computed by Python over ``x.tolist()`` and handed to a Triton
kernel after a trivial change the kernel undoes, so that no tensor handed to a launch holds the
answer itself (what the hollow forward's answer check looks for). ``ROUTE``:

* ``minus_one``: the sums less 1, the kernel adds 1;
* ``doubled``: twice the sums, the kernel halves them;
* ``split``: the sums split across two buffers (an offset and the rest), the kernel adds them;
* ``float64``: the sums in float64, the kernel rounds them to float32;
* ``probe``: the sums themselves, copied by the kernel, but only where a probe kernel launched
  first wrote its flag (the hollow forward skips every launch: there the probe's flag still holds
  its poison, and forward hands the kernel nothing computed);
* ``laundered``: a copy kernel first copies ``x`` to a fresh buffer, and Python reads that buffer;
* ``storage``: Python reads ``x``'s storage (``x.untyped_storage().tolist()``, its bytes) and
  decodes the floats (``struct``), reading no tensor's values, and hands them over as ``probe`` does;
* ``assigned``, ``as_tensor``, ``device_object``: Python reads a host copy of ``x`` made by an
  assignment into a host buffer (``h[:] = x``), by ``torch.as_tensor(x, device="cpu")``, or by
  ``x.to(torch.device("cpu"))``, handing the sums over as ``probe`` does (each a device-to-host copy
  on a GPU that no read of ``x`` itself shows);
* ``apply``: Python sees every value of a copy of ``x`` through ``Tensor.apply_`` (a Python function
  run over the elements), summing them as it goes, and hands the sums over as ``probe`` does.

Every trial launches the solution's own kernels, and no PyTorch op but glue runs: ``ok`` under
``torch_compute="forbid"``. On a GPU ``.tolist()`` copies the input (or the laundered copy) to the
host and works: ``ok`` too, timed at Python's speed."""

import struct

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROUTE = "minus_one"


@triton.jit
def finish_kernel(a_ptr, b_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    if MODE == 0:
        value = a + 1.0
    elif MODE == 1:
        value = a * 0.5
    elif MODE == 2:
        value = a + tl.load(b_ptr + offsets, mask=mask)
    else:
        value = a.to(tl.float32)
    tl.store(out_ptr + offsets, value, mask=mask)


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, n = x.shape[0], x.shape[0]
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(n, 1024),)
        if ROUTE == "laundered":
            seen = torch.empty_like(x)
            copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, seen, x.numel(), BLOCK=1024)
            x = seen
        if ROUTE == "storage":
            raw = bytes(x.contiguous().untyped_storage().tolist())
            values = struct.unpack(f"{x.numel()}f", raw[: 4 * x.numel()])
            width = x.shape[1]
            sums = [sum(values[r * width : (r + 1) * width]) for r in range(rows)]
        elif ROUTE == "apply":
            sums, seen = [0.0] * rows, [0]

            def visit(value):
                sums[seen[0] // x.shape[1]] += value
                seen[0] += 1
                return value

            x.clone().apply_(visit)
        else:
            read = x  # the tensor whose values Python reads
            if ROUTE == "assigned":
                read = torch.empty(x.shape, dtype=x.dtype, device="cpu")
                read[:] = x
            elif ROUTE == "as_tensor":
                read = torch.as_tensor(x, device="cpu")
            elif ROUTE == "device_object":
                read = x.to(torch.device("cpu"))
            sums = [sum(row) for row in read.tolist()]

        def tensor(values, dtype=x.dtype):
            return torch.tensor(values, dtype=dtype, device=x.device)

        if ROUTE == "minus_one":
            finish_kernel[grid](tensor([s - 1.0 for s in sums]), out, out, n, MODE=0, BLOCK=1024)
        elif ROUTE == "doubled":
            finish_kernel[grid](tensor([2.0 * s for s in sums]), out, out, n, MODE=1, BLOCK=1024)
        elif ROUTE == "split":
            offsets = [float(i % 7) - 3.0 for i in range(rows)]
            part, rest = tensor(offsets), tensor([s - o for s, o in zip(sums, offsets, strict=True)])
            finish_kernel[grid](part, rest, out, n, MODE=2, BLOCK=1024)
        elif ROUTE == "float64":
            finish_kernel[grid](tensor(sums, torch.float64), out, out, n, MODE=3, BLOCK=1024)
        else:  # probe, laundered, storage, apply, assigned, as_tensor, device_object
            flag = torch.zeros(1, dtype=torch.int32, device=x.device)
            flag_kernel[(1,)](flag)
            handed = tensor(sums) if ROUTE == "laundered" or int(flag.item()) == 1 else torch.zeros_like(out)
            copy_kernel[grid](handed, out, n, BLOCK=1024)
        return out
