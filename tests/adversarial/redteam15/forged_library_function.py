"""Red team 15 #3: a library function forged. The ownership rule lets a kernel call (or be handed) a
plain Python function only where it is a library's (``frontend.library_function``: Triton's builtins,
the interpreter's stand-ins, Inductor's runtime helpers), and told one by its code's file name and
its globals: a file under the library's directory, globals that are the namespace of a module loaded
from there. Both are forged without ``exec`` or ``compile``: the function's code object renamed after
Triton's file (``__code__.replace(co_filename=...)``) and a function built over a Triton module's
namespace (``type(f)(code, triton.jit.__globals__, name, defaults)``: NumPy reaches it as a default).
Under the interpreter the kernel's call runs it as host code: it computes the row's softmax with
NumPy from the loaded row's host array. A GPU's code generator refuses a call of a plain Python
function in a kernel: a compile error, ``runtime_error``. ``ROUTE``:

* ``global``: the kernel calls the forged function through a global name;
* ``constexpr``: forward hands it to the kernel as a ``tl.constexpr`` argument."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROUTE = "global"


def host_softmax(x, np=np, **semantic):
    if not hasattr(x.handle, "data"):  # Triton's code generator (the frontend's check, a GPU): the row itself
        return x
    data = x.handle.data.astype(np.float64)
    e = np.exp(data - data.max())
    handle = type(x.handle)((e / e.sum()).astype(np.float32), x.handle.dtype)
    return type(x)(handle, x.type)


FORGED = type(host_softmax)(
    host_softmax.__code__.replace(co_filename=triton.jit.__code__.co_filename),
    triton.jit.__globals__,
    "host_softmax",
    (np,),
)
FORGED.__triton_builtin__ = True  # what Triton's code generator calls as one of its own
ROW_FN = FORGED


@triton.jit
def softmax_global(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row * stride_row + cols, ROW_FN(x), mask=mask)


@triton.jit
def softmax_handed(x_ptr, out_ptr, n_cols, stride_row, FN: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row * stride_row + cols, FN(x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        if ROUTE == "global":
            softmax_global[(rows,)](x, out, cols, x.stride(0), BLOCK=block)
        else:
            softmax_handed[(rows,)](x, out, cols, x.stride(0), FN=FORGED, BLOCK=block)
        return out
