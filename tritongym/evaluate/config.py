"""EvalConfig: how one candidate is evaluated. Every field is documented; CLI flags map onto them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tritongym.config_doc import documented as _doc
from tritongym.config_doc import field_help
from tritongym.errors import ConfigError


@dataclass(frozen=True)
class EvalConfig:
    """Settings of one evaluation. ``EvalConfig.help(name)`` returns a field's documentation."""

    trials: int = _doc(
        "Correctness trials, each on fresh inputs from a fresh secret seed; at least 2 always run (on the CPU, "
        "a shrunk problem runs one more at a second size).",
        default=5,
    )
    tolerance: Literal["float64", "fixed"] = _doc(
        "'float64': the candidate's error against a float64 run of the reference may be at most "
        "error_factor x PyTorch's own error at the problem's dtype. 'fixed': KernelBench's "
        "atol/rtol against the reference at its own dtype.",
        default="float64",
    )
    error_factor: float = _doc(
        "How many times PyTorch's own error (vs float64) a candidate may have (float64 policy).",
        default=32.0,
    )
    scale_floor: float = _doc(
        "Error always allowed, as a fraction of the RMS of the reference output, for elements near zero "
        "(float64 policy).",
        default=1e-5,
    )
    atol: float | None = _doc(
        "Absolute tolerance of the fixed policy; default 1e-4 for fp32, 1e-2 for fp16/bf16.", default=None
    )
    rtol: float | None = _doc(
        "Relative tolerance of the fixed policy; default 1e-4 for fp32, 1e-2 for fp16/bf16.", default=None
    )
    timeout_s: float = _doc(
        "Wall-clock limit of the whole evaluation in its sandbox (on the CPU, a shrunk problem's trial at a "
        "second size may add up to as much again; on a GPU, the judge's own compilation of a torch.compile "
        "baseline and its waits for other jobs' holds of the GPU are given back, up to as much again).",
        default=180.0,
    )
    memory_limit_mb: int = _doc(
        "Memory the sandbox may use beyond the problem's own: host memory (resident set), and on a GPU device "
        "memory besides a base for CUDA and its libraries (judge/gpu_memory.py).",
        default=8192,
    )
    output_limit_bytes: int = _doc(
        "Bytes of the candidate's stdout and of its stderr kept in the result (the rest is dropped).",
        default=16384,
    )
    max_source_bytes: int = _doc("Largest candidate source accepted.", default=262144)
    torch_compute: Literal["forbid", "penalize", "allow"] = _doc(
        "PyTorch compute ops (matmul, conv, reductions, activations, arithmetic) inside forward: "
        "'forbid' makes them a hack_torch_compute verdict, 'penalize' reports them as a finding "
        "(rewards may discount it), 'allow' ignores them. Forward's copies of device memory "
        "to the host (an eighth of its inputs' bytes or more) are hack_no_triton under 'forbid' and a "
        "host_read finding otherwise.",
        default="penalize",
    )
    static_checks: bool = _doc(
        "Refuse, before running it, source that uses constructs a kernel has no use for (gc, ctypes, "
        "frames, threads, os.fork, file access, patching modules): verdict hack_forbidden_api.",
        default=True,
    )
    timing: bool = _doc(
        "Time the candidate against the reference (CUDA events, interleaved, L2 flushed, inputs rotated). "
        "GPU only: on the CPU the speedup is reported as unavailable, never as a number.",
        default=True,
    )
    baseline: Literal["eager", "compile"] = _doc(
        "What the speedup is measured against: the reference in eager PyTorch, or torch.compile of it.",
        default="eager",
    )
    timing_target: float = _doc(
        "Timing stops once the 95% confidence interval of the speedup is within this fraction of it.",
        default=0.01,
    )
    timing_budget_s: float = _doc(
        "Most wall time spent timing one candidate (the target may not be met).", default=10.0
    )
    profile: bool = _doc(
        "Profile one forward on the GPU: coverage (share of GPU time in the candidate's own Triton kernels), "
        "the per-kernel breakdown and the side-stream check.",
        default=True,
    )
    device: str = _doc(
        "'auto' (a CUDA GPU if there is one, else the CPU with Triton's interpreter), 'cpu', 'cuda' or 'cuda:N'.",
        default="auto",
    )

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ConfigError(f"trials must be at least 1, not {self.trials}")
        if self.tolerance not in ("float64", "fixed"):
            raise ConfigError(f"tolerance must be 'float64' or 'fixed', not {self.tolerance!r}")
        for name in (
            "error_factor",
            "timeout_s",
            "memory_limit_mb",
            "output_limit_bytes",
            "max_source_bytes",
            "timing_target",
            "timing_budget_s",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, not {getattr(self, name)}")
        for name in ("scale_floor", "atol", "rtol"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"{name} must not be negative, not {value}")
        if self.torch_compute not in ("forbid", "penalize", "allow"):
            raise ConfigError(f"torch_compute must be 'forbid', 'penalize' or 'allow', not {self.torch_compute!r}")
        if self.baseline not in ("eager", "compile"):
            raise ConfigError(f"baseline must be 'eager' or 'compile', not {self.baseline!r}")
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise ConfigError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', not {self.device!r}")

    @classmethod
    def help(cls, name: str) -> str:
        return field_help(cls, name)
