"""Runtime guards around the candidate's forward (sandbox side).

* LaunchMonitor wraps Triton's launch path for the duration of a forward. It counts launches of
  kernels compiled from the candidate's own ``@triton.jit`` functions (identity: the function's
  source file is the candidate's, never a name match). It pauses op recording inside launches (the
  interpreter runs torch ops of its own). On request it makes every such launch fail, to expose
  forwards that route around a failed Triton path.
* OpRecorder (a TorchDispatchMode) records the aten ops that forward runs outside Triton launches.
  Allocation, views, copies and fills are glue; everything else is PyTorch doing compute.
* aliasing() says whether an output shares memory with an input, a parameter or a buffer.
"""

from __future__ import annotations

import collections
import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

GLUE_OPS = frozenset(
    [
        "empty",
        "empty_like",
        "new_empty",
        "empty_strided",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "fill_",
        "zero_",
        "view",
        "_unsafe_view",
        "reshape",
        "as_strided",
        "t",
        "transpose",
        "permute",
        "expand",
        "expand_as",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "clone",
        "copy_",
        "_to_copy",
        "to",
        "contiguous",
        "detach",
        "alias",
        "slice",
        "select",
        "split",
        "split_with_sizes",
        "chunk",
        "narrow",
        "unbind",
        "set_",
        "lift_fresh",
        "resize_",
        "cat",
        "stack",
        "view_as",
        "_reshape_alias",
        "numpy_T",
        "movedim",
        "unfold",
    ]
)
"""aten ops that move, shape or allocate memory: allowed glue around the candidate's kernels."""


class LaunchBlocked(RuntimeError):
    """Raised instead of launching a candidate kernel during the fallback check."""


class OpRecorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.compute: collections.Counter[str] = collections.Counter()
        self.paused = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not self.paused and name not in GLUE_OPS:
            self.compute[name] += 1
        return func(*args, **(kwargs or {}))


def _launch_classes() -> list[type]:
    from triton.runtime.jit import JITFunction

    classes = [JITFunction]
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    return classes


class LaunchMonitor:
    """Counts (and optionally blocks) launches of the candidate's own kernels while active."""

    def __init__(self, candidate_path: str, recorder: OpRecorder | None = None, block: bool = False):
        self.candidate_path, self.recorder, self.block = candidate_path, recorder, block
        self.launches = 0
        self._saved: list[tuple[type, object]] = []

    def _own(self, kernel) -> bool:
        fn = getattr(kernel, "fn", None)
        code = getattr(fn, "__code__", None)
        return code is not None and code.co_filename == self.candidate_path

    def __enter__(self) -> LaunchMonitor:
        for cls in _launch_classes():
            original = cls.__dict__["run"]
            self._saved.append((cls, original))
            cls.run = self._wrap(original)
        return self

    def __exit__(self, *exc) -> None:
        for cls, original in self._saved:
            cls.run = original
        self._saved.clear()

    def _wrap(self, original):
        monitor = self

        def run(kernel, *args, **kwargs):
            if monitor._own(kernel):
                monitor.launches += 1
                if monitor.block:
                    raise LaunchBlocked("tritongym blocked this launch to check for fallbacks")
            if monitor.recorder is None:
                return original(kernel, *args, **kwargs)
            monitor.recorder.paused += 1
            try:
                return original(kernel, *args, **kwargs)
            finally:
                monitor.recorder.paused -= 1

        return run


def _storages(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _storages(v)]
    return []


def aliasing(output, inputs: list, module: torch.nn.Module) -> str | None:
    """Which input, parameter or buffer an output shares memory with, if any."""
    owners = {}
    for i, t in enumerate(_storages(inputs)):
        owners.setdefault(t.untyped_storage().data_ptr(), f"input argument {i}")
    for name, t in [*module.named_parameters(), *module.named_buffers()]:
        owners.setdefault(t.untyped_storage().data_ptr(), f"{name!r} of the module")
    for t in _storages(output):
        owner = owners.get(t.untyped_storage().data_ptr())
        if owner is not None and t.numel():
            return owner
    return None
