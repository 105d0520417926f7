"""Profiling coverage: which share of one forward's GPU time ran in the candidate's own kernels.

One forward runs under torch.profiler (CPU and CUDA activities). Every launch of a kernel compiled
from the candidate's ``@triton.jit`` functions is wrapped by the LaunchMonitor in a user annotation
whose name carries a secret tag. A GPU record is the candidate's when its correlation id is that of
a driver launch call (``cuLaunchKernel*``, what Triton's launcher calls) made inside such an
annotation on the same thread, and not inside a PyTorch op nested in it; where Kineto links the call
to the PyTorch op innermost when it was made, that op must lie in the annotation too, or enclose it
and not be an aten op (the record ``torch.autograd.Function.apply`` opens around its forward): a
library launch inside ``aten::mm`` never counts, wherever the two clocks place it. So attribution is by
launch identity: a kernel's name, whatever the candidate calls it, plays no part.

Records are told apart by their Kineto activity type, never by name: GPU work is a ``kernel``,
``gpu_memcpy`` or ``gpu_memset`` record (a ``gpu_user_annotation`` is a span, not work), and a launch
call is a ``cuda_driver`` or ``cuda_runtime`` record. This matters because correlation ids come from
two counters: CUPTI numbers launch calls and GPU records, PyTorch numbers its ops and annotations.
Matching a GPU record against host records of every kind by (name, correlation id), as this once
did, let a host record named like a library kernel (say, a launcher's record named after a kernel
the candidate had named after cuBLAS's) whose PyTorch id happened to equal that kernel's CUPTI id
remove the library kernel from the forward's time, inflating coverage.

Before the forward a one-element fill runs on the current stream inside a marker annotation; its
record names the stream the forward was called on. A GPU record of the forward on another stream is
work outside the timed window, unless a PyTorch op launched it: cuDNN, cuBLAS/CUTLASS and the RNN
kernels run parts of an op on streams of their own and join them back into the op's stream before
it returns, so a forward that leaves such an op to PyTorch is honest. The record is then the
library's when its launch call was made inside an ``aten::`` op (linked to it by Kineto's external
correlation, or, where the profiler linked nothing, within its span on its thread) and neither is
one of the candidate's own launches nor lies within one of their annotations. Whether the op itself
was called on the forward's stream is not in the profile: the OpRecorder that runs with the
profiler (guards.py) says which ops were called while another stream was current, and the
LaunchMonitor which of the candidate's launches were; either is side-stream work
(``side_stream_work``). So a candidate's Triton kernel on another stream, its own torch op under
``torch.cuda.stream(s)``, and a launch made outside any PyTorch op (a kernel started through a
lower-level launcher than Triton's ``run``) on another stream are all side-stream work;
a library's internal stream inside an op called on the current stream is not.

``attribute`` is a pure function over plain records (tested on the CPU); ``profile_forward``
collects them from torch's Kineto results. Per-kernel rows are keyed by (name, own), so a kernel of
the candidate and a library kernel of the same name stay two rows.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Record:
    """The fields of a Kineto event that attribution needs (times in nanoseconds)."""

    name: str
    on_device: bool
    correlation: int
    thread: int
    start_ns: int
    end_ns: int
    stream: int
    kind: str = ""
    """Kineto's activity type: ``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``gpu_user_annotation`` on
    the device; ``cuda_driver``, ``cuda_runtime``, ``cpu_op``, ``user_annotation`` on the host."""
    linked: int = 0
    """For a launch call: the correlation id of the PyTorch op or annotation that was innermost when
    it was made (Kineto's external correlation); 0 where the profiler gave none."""


def activity_kind(event: Any, on_device: bool) -> str:
    """Kineto's activity type of a profiler event. torch before 2.13 has no ``activity_type`` on its
    events; there it is derived from what they do have: CUPTI names its API records after the call
    (``cuLaunchKernel``: driver, ``cudaLaunchKernel``: runtime) and its copies ``Memcpy``/``Memset``."""
    if hasattr(event, "activity_type"):
        return event.activity_type()
    name = event.name()
    annotation = bool(getattr(event, "is_user_annotation", lambda: False)())
    if on_device:
        if annotation:
            return "gpu_user_annotation"
        return "gpu_memcpy" if name.startswith("Memcpy") else "gpu_memset" if name.startswith("Memset") else "kernel"
    if annotation:
        return "user_annotation"
    if re.match(r"cu[A-Z]", name):
        return "cuda_driver"
    return "cuda_runtime" if re.match(r"cuda[A-Z]", name) else "cpu_op"


def _linked(event: Any) -> int:
    linked = getattr(event, "linked_correlation_id", None)
    return linked() if linked is not None else 0


WORK_KINDS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
"""Device records that are GPU time of the forward."""
LAUNCH_KINDS = frozenset({"cuda_driver", "cuda_runtime"})
"""Host records of CUDA API calls, numbered by CUPTI like the GPU records they launch."""


@dataclass(frozen=True)
class Attribution:
    kernels: list[dict]
    """name, launches, time_us, share, own; largest first."""
    coverage: float | None
    """Own GPU time / all GPU time of the forward; None if the forward ran nothing on the GPU."""
    foreign_streams: list[str]
    """Records of the forward that ran on another stream than the marker's and that no PyTorch op
    launched (or that are the candidate's own launches)."""


def _inside(inner: Record, outer: Record) -> bool:
    return inner.thread == outer.thread and outer.start_ns <= inner.start_ns and inner.end_ns <= outer.end_ns


def _launches_in(
    spans: list[Record], host: list[Record], prefix: str, ops: list[Record], linked: bool = True
) -> set[int]:
    """Correlation ids of launch calls named ``prefix...`` inside one of ``spans`` and not inside
    a PyTorch op that is itself inside that span.

    With ``linked``, where the profiler linked a call to the PyTorch op innermost when it was made
    (Kineto's external correlation; a ``record_function`` annotation pushes none of that kind, so a
    launch made directly inside one has none), that op must be nested in the span and not an aten op
    (a launcher's own record, say): identity rather than timestamps, which come from two clocks
    (CUPTI's for the call, PyTorch's for the span). A library launch made inside ``aten::mm`` is
    linked to it, so it is never the candidate's, wherever the clocks place it. The op may also be
    one that encloses the span and is not an aten op: the record ``torch.autograd.Function.apply``
    opens (named after the Function's class) around a forward that launches the candidate's kernel,
    innermost when the launch was made since the span pushes no link of its own; a launch linked to
    it was made by Python outside every aten op, as an unlinked one."""
    found = set()
    for span in spans:
        nested_ops = [op for op in ops if _inside(op, span)]
        within = {span.correlation} | {
            r.correlation
            for r in host
            if r.kind in ("user_annotation", "cpu_op")
            and not r.name.startswith("aten::")
            and (_inside(r, span) or _inside(span, r))
        }
        for call in host:
            launch = call.kind in LAUNCH_KINDS and call.name.startswith(prefix)
            if not launch or not _inside(call, span) or any(_inside(call, op) for op in nested_ops):
                continue
            if linked and call.linked and call.linked not in within:
                continue
            found.add(call.correlation)
    return found


def _library_launches(host: list[Record], ops: list[Record]) -> set[int]:
    """Correlation ids of launch calls made inside an ``aten::`` op: linked to one (Kineto's external
    correlation), or, where the profiler linked the call to nothing, within an op's span on its thread."""
    op_ids = {op.correlation for op in ops}
    found = set()
    for call in host:
        if call.kind not in LAUNCH_KINDS:
            continue
        inside = call.linked in op_ids if call.linked else any(_inside(call, op) for op in ops)
        if inside:
            found.add(call.correlation)
    return found


def attribute(records: Iterable[Record], own_tag: str, marker_tag: str) -> Attribution:
    """Split the profiled forward's GPU records into the candidate's own and everything else."""
    records = list(records)
    host = [r for r in records if not r.on_device]
    own_spans = [r for r in host if r.kind == "user_annotation" and r.name == own_tag]
    marker_spans = [r for r in host if r.kind == "user_annotation" and r.name == marker_tag]
    ops = [r for r in host if r.kind == "cpu_op" and r.name.startswith("aten::")]
    own = _launches_in(own_spans, host, "cuLaunchKernel", ops)
    marker = _launches_in(marker_spans, host, "cudaLaunchKernel", [], linked=False)
    device = [r for r in records if r.on_device and r.kind in WORK_KINDS]
    marker_records = [r for r in device if r.correlation in marker]
    work = [r for r in device if r.correlation not in marker]
    stream = marker_records[0].stream if marker_records else None
    # A launch within one of the candidate's own launch annotations (which wrap Triton's run and no
    # PyTorch op) is never the library's, whatever op encloses the annotation.
    in_own = {c.correlation for c in host if c.kind in LAUNCH_KINDS and any(_inside(c, s) for s in own_spans)}
    library = _library_launches(host, ops) - own - in_own
    foreign = sorted(
        {r.name for r in work if stream is not None and r.stream != stream and r.correlation not in library}
    )

    total_ns = sum(r.end_ns - r.start_ns for r in work)
    groups: dict[tuple[str, bool], list[int]] = collections.defaultdict(list)
    for r in work:
        groups[(r.name, r.correlation in own)].append(r.end_ns - r.start_ns)
    kernels = [
        {
            "name": name,
            "launches": len(durations),
            "time_us": round(sum(durations) / 1e3, 3),
            "share": round(sum(durations) / total_ns, 4) if total_ns else 0.0,
            "own": is_own,
        }
        for (name, is_own), durations in groups.items()
    ]
    kernels.sort(key=lambda k: -k["time_us"])
    own_ns = sum(r.end_ns - r.start_ns for r in work if r.correlation in own)
    coverage = round(own_ns / total_ns, 4) if total_ns else None
    return Attribution(kernels, coverage, foreign)


def side_stream_work(attribution: Attribution, off_stream_ops: Iterable[str], off_stream_launches: int) -> list[str]:
    """Everything the profiled forward ran outside its stream: the attributed records on another
    stream, the PyTorch ops called while another stream was current and the candidate's own launches
    made then."""
    found = list(attribution.foreign_streams)
    found += [f"aten::{name} called on another stream" for name in sorted(off_stream_ops)]
    if off_stream_launches:
        found.append(f"{off_stream_launches} launch(es) of the solution's Triton kernels on another stream")
    return found


def profile_forward(model, inputs: list, candidate_path: str, device, text=None) -> Attribution:
    """Profile one forward of ``model`` on ``inputs`` (CUDA only) and attribute its GPU time; its
    ``foreign_streams`` include what the guards saw run off the forward's stream. ``text``: the
    candidate's (``guards.CandidateText``), which its own kernels must come from."""
    import secrets

    import torch
    from torch.autograd.profiler import record_function

    from tritongym.evaluate.guards import LaunchMonitor, OpRecorder

    own_tag = f"tritongym.own.{secrets.token_hex(8)}"
    marker_tag = f"tritongym.marker.{secrets.token_hex(8)}"
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.no_grad(), torch.profiler.profile(activities=activities) as profiler:
        with record_function(marker_tag):
            torch.ones(1, device=device)
        torch.cuda.synchronize(device)
        recorder = OpRecorder()
        with LaunchMonitor(candidate_path, annotate=own_tag, text=text) as monitor, recorder:
            model(*inputs)
        torch.cuda.synchronize(device)
    cuda = torch.autograd.DeviceType.CUDA
    records = [
        Record(
            name=event.name(),
            on_device=event.device_type() == cuda,
            correlation=event.correlation_id(),
            thread=event.start_thread_id(),
            start_ns=event.start_ns(),
            end_ns=event.end_ns(),
            stream=event.device_resource_id(),
            kind=activity_kind(event, on_device=event.device_type() == cuda),
            linked=_linked(event) if event.device_type() != cuda else 0,
        )
        for event in profiler.profiler.kineto_results.events()
    ]
    attribution = attribute(records, own_tag, marker_tag)
    foreign = side_stream_work(attribution, recorder.off_stream, monitor.off_stream)
    return Attribution(attribution.kernels, attribution.coverage, foreign)
