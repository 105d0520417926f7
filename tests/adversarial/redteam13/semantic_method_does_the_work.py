"""Red team 13 #1: Triton's semantic layer (``TritonSemantic``, the Python between a kernel's ``x + y``
and the interpreter's builder) is not in the runner's tampering baseline. At import this solution
replaces ``TritonSemantic.add`` (through ``setattr`` on a name bound by a call, which the static
checks take for its own object); inside its own launch, under the interpreter, ``x + 0.125`` then
computes the row's softmax with NumPy. The kernel's text is a copy with an addition; a GPU's code
generator calls the same method with its own builder, where it adds 0.125 as asked: a mismatch.

``ROUTE = "executor"`` (#1b) replaces instead a method of the interpreter's ``GridExecutor``, the
class whose ``__call__`` runs every interpreted grid: ``_restore_args_dev``, which copies the grid's
host arrays back to the tensors, first writes the softmax into the output's host copy. Neither class
was watched: only the builder (``InterpreterBuilder``), ``TensorHandle`` and the modules themselves.
``ROUTE = "builder_object"`` (#1c) sets ``create_fadd`` on the interpreter's builder object itself
(an attribute of the object shadows its class's method; the object was not watched), and
``ROUTE = "libdevice"`` (#1d) writes its function into the judge's libdevice table behind its
read-only view (``gc.get_referents`` of the ``MappingProxyType``; the module attribute holding the
view was watched, not what it maps): the kernel's ``libdevice.copysign(y, y)`` computes the softmax."""

import sys

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.language.semantic as semantic
from triton.language.extra import libdevice

Semantic = getattr(semantic, "TritonSemantic")  # noqa: B009 (the static checks see no alias)
ADD = Semantic.add


def host_add(self, input, other, *args, **kwargs):
    value = getattr(other, "value", other)
    if type(self.builder).__name__ == "InterpreterBuilder" and isinstance(value, float) and value == 0.125:
        data = input.handle.data.astype(np.float64)
        e = np.exp(data - data.max())
        handle = type(input.handle)((e / e.sum()).astype(np.float32), input.handle.dtype)
        return type(input)(handle, input.type)
    return ADD(self, input, other, *args, **kwargs)


def host_restore(self, args_dev, args_hst, kwargs, kwargs_hst):
    x, out = args_hst[0].numpy(), args_hst[1].numpy()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    out[...] = e / e.sum(axis=1, keepdims=True)
    return RESTORE(self, args_dev, args_hst, kwargs, kwargs_hst)


def _softmax(data):
    e = np.exp(data.astype(np.float64) - data.max())
    return (e / e.sum()).astype(np.float32)


def host_fadd(lhs, rhs):
    if np.all(rhs.data == np.float32(0.125)):
        return type(lhs)(_softmax(lhs.data), lhs.dtype)
    return type(lhs)(lhs.data + rhs.data, lhs.dtype)


def host_copysign(x, y):
    return _softmax(x)


ROUTE = "semantic"
if ROUTE == "builder_object":
    interpreter = getattr(triton.runtime, "interpreter")  # noqa: B009
    builder = interpreter.interpreter_builder
    builder.create_fadd = host_fadd
elif ROUTE == "libdevice":
    modules = getattr(sys, "modules")  # noqa: B009 (sys.modules written out is refused)
    table = modules["gc"].get_referents(modules["tritongym.evaluate.interpreter_libdevice"].SYMBOLS)[0]
    table["__nv_copysignf"] = host_copysign
elif ROUTE == "semantic":
    setattr(Semantic, "add", host_add)  # noqa: B010 (a name it bound: its own, to the static checks)
else:
    Executor = getattr(getattr(triton.runtime, "interpreter"), "GridExecutor")  # noqa: B009
    RESTORE = Executor._restore_args_dev
    setattr(Executor, "_restore_args_dev", host_restore)  # noqa: B010


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf"))
    y = x + 0.125  # the semantic and builder routes' softmax; libdevice's copysign the libdevice route's
    tl.store(out_ptr + row * stride_row + cols, libdevice.copysign(y, y), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
