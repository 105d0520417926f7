"""What a candidate may have left behind in a reused sandbox process.

A snapshot taken after warm-up is compared with the process state after each evaluation. Any
difference (a replaced function, a changed global setting, a thread or child process still running,
a trace hook, a sticky CUDA error) taints the process: its result still stands, but the sandbox is
replaced before the next candidate runs in it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from importlib import import_module
from pathlib import Path

WATCHED_MODULES = (
    "builtins", "copy", "gc", "importlib", "inspect", "json", "math", "os", "random", "time", "traceback",
    "numpy", "torch", "torch.nn", "torch.nn.functional", "torch.cuda", "torch.testing", "torch.backends.cuda",
    "torch.backends.cudnn", "triton", "triton.language", "triton.runtime.jit",
    "statistics", "torch.profiler", "torch.autograd.profiler", "tritongym.evaluate.compare",
    "tritongym.evaluate.guards", "tritongym.evaluate.harness", "tritongym.evaluate.profiling",
    "tritongym.evaluate.taint", "tritongym.evaluate.timing",
)  # fmt: skip
WATCHED_CLASSES = ("torch.Tensor", "torch._C.TensorBase", "torch.nn.Module", "torch.cuda.Event", "threading.Thread")
"""Classes whose attributes are watched; unlike a module, a class must not even gain one (an added
``torch.Tensor.__sub__`` shadows the operator inherited from TensorBase)."""
WATCHED_SIGNALS = tuple(
    s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD, signal.SIGUSR1, signal.SIGPIPE)
)
_VOLATILE = {("sys", "last_type"), ("sys", "last_value"), ("sys", "last_traceback"), ("sys", "last_exc")}


def _resolve(dotted: str):
    module, _, attr = dotted.rpartition(".")
    return getattr(import_module(module), attr)


def _attribute_ids() -> dict[tuple[str, str], int]:
    ids: dict[tuple[str, str], int] = {}
    for name in WATCHED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            ids.update({(name, k): id(v) for k, v in list(vars(module).items())})
    for dotted in WATCHED_CLASSES:
        ids.update({(dotted, k): id(v) for k, v in list(vars(_resolve(dotted)).items())})
    return {k: v for k, v in ids.items() if k not in _VOLATILE}


def _torch_settings() -> dict[str, object]:
    import torch

    settings = {
        "default_dtype": torch.get_default_dtype(),
        "grad_enabled": torch.is_grad_enabled(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "num_threads": torch.get_num_threads(),
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "matmul.allow_fp16_reduced": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul.allow_bf16_reduced": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    }
    if hasattr(torch, "get_default_device"):
        settings["default_device"] = str(torch.get_default_device())
    settings["dispatch_modes"] = torch._C._len_torch_dispatch_stack()
    settings["function_modes"] = torch._C._len_torch_function_stack()
    if torch.cuda.is_initialized():
        settings["cuda.current_stream"] = torch.cuda.current_stream() == torch.cuda.default_stream()
    return settings


def child_processes() -> list[int]:
    children = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            children += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return children


def _class_keys() -> dict[str, frozenset[str]]:
    return {dotted: frozenset(vars(_resolve(dotted))) for dotted in WATCHED_CLASSES}


class ProcessState:
    """The baseline a sandbox returns to after each evaluation."""

    def __init__(self) -> None:
        self.attributes = _attribute_ids()
        self.class_keys = _class_keys()
        self.settings = _torch_settings()
        self.threads = set(threading.enumerate())
        self.signals = {s: signal.getsignal(s) for s in WATCHED_SIGNALS}
        self.modules = set(sys.modules)
        self.cuda_bytes = self._cuda_bytes()

    @staticmethod
    def _cuda_bytes() -> int:
        import torch

        return torch.cuda.memory_allocated() if torch.cuda.is_initialized() else 0

    def forget_candidate_modules(self, workdir: str) -> None:
        """Drop modules imported from the evaluation's directory (the candidate and the reference)."""
        for name in set(sys.modules) - self.modules:
            path = getattr(sys.modules[name], "__file__", None) or ""
            if path.startswith(workdir):
                del sys.modules[name]

    def accept_judge_changes(self) -> None:
        """Take the attributes, class keys and settings as they are now as the new baseline: only
        after the judge itself changed them (torch.compile patches torch.nn.Module), right after a
        tampering check found nothing."""
        self.attributes = _attribute_ids()
        self.class_keys = _class_keys()
        self.settings = _torch_settings()
        self.threads = set(threading.enumerate())

    def tampering(self) -> list[str]:
        """Functions and settings of torch, triton, builtins or the judge that differ from the baseline."""
        reasons = []
        now = _attribute_ids()
        changed = sorted(f"{m}.{a}" for (m, a), i in self.attributes.items() if now.get((m, a)) != i)
        for dotted, keys in _class_keys().items():
            changed += sorted(f"{dotted}.{k}" for k in keys - self.class_keys[dotted])
        if changed:
            reasons.append(
                f"replaced, added or removed: {', '.join(changed[:5])}" + (" ..." if len(changed) > 5 else "")
            )
        settings = _torch_settings()
        drift = sorted(k for k in self.settings if settings.get(k) != self.settings[k])
        if drift:
            reasons.append(f"changed torch settings: {', '.join(drift)}")
        return reasons

    def stray_workers(self) -> list[str]:
        """Threads and child processes started since the baseline and still running."""
        reasons = []
        threads = [t.name for t in threading.enumerate() if t not in self.threads and t.is_alive()]
        if threads:
            reasons.append(f"threads still running: {', '.join(threads[:5])}")
        if child_processes():
            reasons.append("child processes still running")
        return reasons

    def taint(self) -> list[str]:
        """Reasons this process must not run another candidate (empty: clean)."""
        import gc

        import torch

        reasons = self.tampering() + self.stray_workers()
        if any(signal.getsignal(s) != h for s, h in self.signals.items()):
            reasons.append("signal handlers changed")
        if sys.gettrace() is not None or sys.getprofile() is not None:
            reasons.append("a trace or profile hook is installed")
        if torch.cuda.is_initialized():
            try:
                torch.cuda.synchronize()
            except Exception as exc:  # a sticky CUDA error poisons the context
                reasons.append(f"CUDA context is broken: {str(exc)[:200]}")
                return reasons
            gc.collect()
            torch.cuda.empty_cache()
            leaked = self._cuda_bytes() - self.cuda_bytes
            if leaked > 64 << 20:
                reasons.append(f"{leaked >> 20} MiB of GPU memory still held")
        return reasons
