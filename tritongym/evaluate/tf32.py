"""``tl.dot``'s input precision under Triton's interpreter (red team 10 #2).

On an NVIDIA GPU since Ampere, ``tl.dot`` of two float32 blocks multiplies them in TF32 by default
(``input_precision="tf32"``, Triton's ``default_dot_input_precision``): each operand keeps 10 of its
23 mantissa bits, so a float32 problem computed that way is about 2^13 times less accurate than
PyTorch's float32 and its verdict is ``precision`` (compare.py; the feedback says to pass
``input_precision="ieee"``). Triton's interpreter ignores the input precision and multiplies the
full float32 values with NumPy, so the same kernel was ``ok`` on the CPU: the CPU's verdict differed
from the GPU's, and RL on the CPU paid for a kernel that fails where it runs. The launch monitor
(guards.py) wraps the interpreter's ``create_dot`` while it is active: where the precision is TF32
and an operand is float32, the operands are rounded to TF32 (to nearest, ties to even, at 10
mantissa bits, infinities and NaN kept: what Triton's interpreter does for a TF32 tensor map) before
they are multiplied. ``tf32x3`` and ``ieee`` (near and at float32 accuracy) run as before.
"""

from __future__ import annotations

import numpy as np

_EXPONENT = np.uint32(0x7F800000)


def round_to_tf32(data: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32's 10 mantissa bits (to nearest, ties to even); Inf and NaN kept."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    special = (bits & _EXPONENT) == _EXPONENT
    bias = ((bits >> np.uint32(13)) & np.uint32(1)) + np.uint32(0x00000FFF)
    rounded = (bits + bias) & np.uint32(0xFFFFE000)
    return np.where(special, bits, rounded).view(np.float32)


def _is_tf32(precision) -> bool:
    return str(getattr(precision, "name", precision)).upper() == "TF32"


def _float32(handle) -> bool:
    return getattr(handle, "data", None) is not None and handle.data.dtype == np.float32


def _dot(original):
    def create_dot(builder, a, b, d, input_precision=None, *args, **kwargs):
        if _is_tf32(input_precision) and (_float32(a) or _float32(b)):
            a, b = _rounded(a), _rounded(b)
        return original(builder, a, b, d, input_precision, *args, **kwargs)

    return create_dot


def _rounded(handle):
    if not _float32(handle):
        return handle
    return type(handle)(round_to_tf32(handle.data), handle.dtype)


def builder_points() -> list[tuple[type, str, object]]:
    """(class, attribute, wrapper) for the interpreter's ``create_dot``; empty without an interpreter."""
    try:
        from triton.runtime.interpreter import InterpreterBuilder
    except ImportError:
        return []
    return [(InterpreterBuilder, "create_dot", _dot)] if "create_dot" in vars(InterpreterBuilder) else []
