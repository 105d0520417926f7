"""Coverage attribution over profiler records (pure): by launch identity, never by name."""

import pytest

from tritongym.evaluate.profiling import Record, activity_kind, attribute, side_stream_work

OWN, MARKER = "tritongym.own.secret", "tritongym.marker.secret"
THREAD, STREAM = 11, 7


# Kineto's activity types; correlation ids of annotations and ops are PyTorch's, those of launch
# calls and GPU records CUPTI's: two counters, so equal numbers across them mean nothing.
KINDS = {"aten::": "cpu_op", "cuLaunchKernel": "cuda_driver", "cudaLaunchKernel": "cuda_runtime"}


def host(name, corr, start, end, thread=THREAD, kind=None, linked=0):
    kind = kind or next((k for prefix, k in KINDS.items() if name.startswith(prefix)), "user_annotation")
    return Record(name, False, corr, thread, start, end, 0, kind, linked)


def gpu(name, corr, start, end, stream=STREAM, kind="kernel"):
    return Record(name, True, corr, 0, start, end, stream, kind)


def marker():
    return [
        host(MARKER, 1, 0, 10),
        host("aten::fill_", 2, 1, 9),
        host("cudaLaunchKernel", 3, 2, 8),
        gpu("fill", 3, 20, 21),
    ]


def own_launch(corr_span, corr_call, start, kernel_name, duration):
    return [
        host(OWN, corr_span, start, start + 10),
        host("cuLaunchKernelEx", corr_call, start + 2, start + 8),
        gpu(kernel_name, corr_call, start + 100, start + 100 + duration),
        gpu(OWN, corr_span, start + 100, start + 100 + duration, kind="gpu_user_annotation"),
    ]


def torch_op(corr_op, corr_call, start, kernel_name, duration, stream=STREAM):
    return [
        host("aten::mm", corr_op, start, start + 10),
        host("cudaLaunchKernel", corr_call, start + 2, start + 8),
        gpu(kernel_name, corr_call, start + 100, start + 100 + duration, stream),
    ]


def test_pure_triton_forward_has_full_coverage_and_the_marker_is_not_counted():
    records = marker() + own_launch(10, 11, 100, "softmax_kernel", 900)
    result = attribute(records, OWN, MARKER)
    assert result.coverage == 1.0 and not result.foreign_streams
    assert result.kernels == [{"name": "softmax_kernel", "launches": 1, "time_us": 0.9, "share": 1.0, "own": True}]


def test_lazy_forward_gets_its_true_share():
    records = marker() + torch_op(20, 21, 100, "sm90_xmma_gemm", 900) + own_launch(30, 31, 300, "bias_relu", 100)
    result = attribute(records, OWN, MARKER)
    assert result.coverage == 0.1
    assert [(k["name"], k["own"], k["share"]) for k in result.kernels] == [
        ("sm90_xmma_gemm", False, 0.9),
        ("bias_relu", True, 0.1),
    ]


def test_a_kernel_named_like_pytorchs_gets_no_credit_and_renaming_changes_nothing():
    lazy = torch_op(20, 21, 100, "sm90_xmma_gemm", 900)
    renamed = attribute(marker() + lazy + own_launch(30, 31, 300, "sm90_xmma_gemm", 100), OWN, MARKER)
    plain = attribute(marker() + lazy + own_launch(30, 31, 300, "kernel", 100), OWN, MARKER)
    assert renamed.coverage == plain.coverage == 0.1


GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cublas"


def test_a_borrowed_name_buys_nothing_and_stays_apart_from_the_library_kernel():
    # The lazy solution renames its kernel after cuBLAS's. A launcher's annotation named after the
    # kernel (a host record, PyTorch's id 21) shares its number with the GEMM's CUPTI id: a name
    # and an id from two counters, which must not remove the GEMM from the forward's time.
    lazy = marker() + torch_op(20, 21, 100, GEMM, 900)
    plain = attribute(lazy + own_launch(30, 31, 300, "bias_relu_kernel", 100), OWN, MARKER)
    renamed_records = lazy + own_launch(30, 31, 300, GEMM, 100) + [host(GEMM, 21, 301, 309, kind="cpu_op")]
    renamed = attribute(renamed_records, OWN, MARKER)
    assert plain.coverage == renamed.coverage == 0.1
    assert sorted((k["name"], k["own"], k["share"]) for k in renamed.kernels) == [(GEMM, False, 0.9), (GEMM, True, 0.1)]


def test_only_cuda_launch_calls_count_as_launches():
    # A host annotation named like a driver call, with the GEMM's number, is not a launch.
    records = [
        *marker(),
        *torch_op(20, 21, 100, GEMM, 900),
        host(OWN, 30, 300, 310),
        host("cuLaunchKernel_lookalike", 21, 302, 308, kind="cpu_op"),
        host("cuLaunchKernelEx", 31, 303, 307),
        gpu("bias_relu", 31, 400, 500),
    ]
    assert attribute(records, OWN, MARKER).coverage == 0.1


def test_only_kernels_copies_and_fills_are_gpu_time():
    records = marker() + own_launch(10, 11, 100, "k", 100) + [gpu("span", 99, 0, 5000, kind="gpu_user_annotation")]
    assert attribute(records, OWN, MARKER).coverage == 1.0


def test_a_library_launch_linked_to_its_aten_op_is_not_the_candidates_wherever_the_clocks_put_it():
    # CUPTI's clock puts cuBLAS's launch (made inside aten::mm, PyTorch's id 20) inside the
    # candidate's span; the link to aten::mm says whose it is.
    records = [
        *marker(),
        host("aten::mm", 20, 100, 290),
        host(OWN, 30, 280, 320),
        host("cuLaunchKernelEx", 21, 285, 288, linked=20),
        gpu(GEMM, 21, 400, 1300),
        host("cuLaunchKernelEx", 31, 300, 310),  # the candidate's: no op of PyTorch was open
        gpu("bias_relu", 31, 1400, 1500),
    ]
    result = attribute(records, OWN, MARKER)
    assert result.coverage == 0.1
    assert [(k["name"], k["own"]) for k in result.kernels] == [(GEMM, False), ("bias_relu", True)]


def test_a_launch_linked_to_a_launchers_record_inside_the_span_is_the_candidates():
    # Inductor's launcher opens a record named after the kernel (a cpu_op, not aten) around its launch.
    records = [
        *marker(),
        host(OWN, 30, 300, 400),
        host("triton_poi_fused_relu_0", 32, 305, 395, kind="cpu_op"),
        host("cuLaunchKernelEx", 31, 310, 320, linked=32),
        gpu("triton_poi_fused_relu_0", 31, 500, 600),
    ]
    assert attribute(records, OWN, MARKER).coverage == 1.0


def test_a_launch_linked_to_an_autograd_functions_record_around_the_span_is_the_candidates():
    # torch.autograd.Function.apply opens a record named after the Function (a cpu_op, not aten) around
    # its forward; the span pushes no link, so the launch inside it is linked to that record
    # (autograd_function.py: "ran none of them on the GPU (its GPU time went to silu_fwd_kernel)").
    records = [
        *marker(),
        host("SiLU", 29, 290, 410, kind="cpu_op"),
        host(OWN, 30, 300, 400),
        host("cuLaunchKernelEx", 31, 310, 320, linked=29),
        gpu("silu_fwd_kernel", 31, 500, 600),
    ]
    assert attribute(records, OWN, MARKER).coverage == 1.0


def test_a_launch_linked_to_an_aten_op_or_a_record_elsewhere_is_not_the_candidates():
    for enclosing, linked_to in (("aten::add", 29), ("SiLU", 28)):
        records = [
            *marker(),
            host("Other", 28, 100, 200, kind="cpu_op"),  # a record that does not enclose the span
            host(enclosing, 29, 290, 410, kind="cpu_op"),
            host(OWN, 30, 300, 400),
            host("cuLaunchKernelEx", 31, 310, 320, linked=linked_to),
            gpu("kernel", 31, 500, 600),
        ]
        assert attribute(records, OWN, MARKER).coverage == 0.0, enclosing


def test_pytorch_work_launched_inside_the_candidates_launch_is_not_the_candidates():
    # A launch hook that runs torch.mm while the candidate's kernel launches: same span, but inside
    # an aten op and through the runtime API.
    records = [
        *marker(),
        host(OWN, 40, 100, 200),
        host("aten::mm", 41, 110, 150),
        host("cuLaunchKernelEx", 42, 120, 130),
        host("cuLaunchKernelEx", 43, 160, 170),
        gpu("hidden_gemm", 42, 300, 1200),
        gpu("token", 43, 1300, 1400),
    ]
    assert attribute(records, OWN, MARKER).coverage == 0.1


def test_launches_on_another_thread_or_outside_the_span_are_not_the_candidates():
    records = [
        *marker(),
        host(OWN, 50, 100, 200),
        host("cuLaunchKernelEx", 51, 120, 130, thread=99),
        host("cuLaunchKernelEx", 52, 300, 310),
        gpu("a", 51, 400, 500),
        gpu("b", 52, 600, 700),
    ]
    assert attribute(records, OWN, MARKER).coverage == 0.0


LIBRARY_STREAM = 9


def library_op(corr_op, corr_call, start, kernel_name, linked=True, op="aten::cudnn_convolution_transpose"):
    """A PyTorch op whose library (cuDNN, cuBLAS, the RNN kernels) runs a kernel on a stream of its own."""
    return [
        host(op, corr_op, start, start + 10),
        host("cudaLaunchKernel", corr_call, start + 2, start + 8, linked=corr_op if linked else 0),
        gpu(kernel_name, corr_call, start + 100, start + 150, LIBRARY_STREAM),
    ]


@pytest.mark.parametrize("linked", [True, False], ids=["linked-to-the-op", "within-the-ops-span"])
def test_a_library_kernel_on_its_own_stream_inside_a_torch_op_is_not_side_stream_work(linked):
    records = (
        marker()
        + own_launch(10, 11, 100, "add_kernel", 100)
        + library_op(20, 21, 300, "xmma_dgrad_cudnn", linked)
        + library_op(30, 31, 500, "RNN_blockPersist_fp_LSTM", linked, op="aten::_cudnn_rnn")
    )
    result = attribute(records, OWN, MARKER)
    assert result.foreign_streams == []
    assert {k["name"] for k in result.kernels if not k["own"]} == {"xmma_dgrad_cudnn", "RNN_blockPersist_fp_LSTM"}


def test_the_candidates_own_triton_kernel_on_another_stream_is_side_stream_work():
    records = [
        *marker(),
        host(OWN, 10, 100, 110),
        host("cuLaunchKernelEx", 11, 102, 108),
        gpu("add_kernel", 11, 200, 300, 9),
    ]
    assert attribute(records, OWN, MARKER).foreign_streams == ["add_kernel"]


def test_own_launch_inside_a_torch_op_on_another_stream_is_still_the_candidates():
    # A tensor subclass's __torch_dispatch__ launching the candidate's kernel inside aten::add.
    records = [
        *marker(),
        host("aten::add", 20, 100, 300),
        host(OWN, 21, 120, 200),
        host("cuLaunchKernelEx", 22, 130, 140, linked=20),
        gpu("add_kernel", 22, 400, 500, stream=9),
    ]
    assert attribute(records, OWN, MARKER).foreign_streams == ["add_kernel"]


def test_a_launch_outside_any_torch_op_on_another_stream_is_side_stream_work():
    # A kernel started through a lower-level launcher than Triton's run: no annotation, no op.
    records = (
        marker()
        + own_launch(10, 11, 100, "add_kernel", 100)
        + [
            host("cuLaunchKernelEx", 40, 300, 310),
            gpu("hidden_kernel", 40, 400, 500, stream=9),
        ]
    )
    assert attribute(records, OWN, MARKER).foreign_streams == ["hidden_kernel"]


def test_a_launch_linked_to_an_annotation_is_not_the_librarys_even_within_an_ops_span():
    # Kineto linked the call to a user annotation (not an aten op): identity wins over timestamps.
    records = [
        *marker(),
        host("aten::mm", 20, 100, 300),
        host("my_range", 21, 110, 290),
        host("cuLaunchKernelEx", 22, 130, 140, linked=21),
        gpu("hidden_kernel", 22, 400, 500, stream=9),
    ]
    assert attribute(records, OWN, MARKER).foreign_streams == ["hidden_kernel"]


def test_device_work_with_no_launch_call_on_another_stream_is_side_stream_work():
    records = marker() + own_launch(10, 11, 100, "add_kernel", 100) + [gpu("orphan", 77, 400, 500, stream=9)]
    assert attribute(records, OWN, MARKER).foreign_streams == ["orphan"]


def test_side_stream_work_adds_what_the_guards_saw_run_while_another_stream_was_current():
    records = marker() + own_launch(10, 11, 100, "add_kernel", 100) + library_op(20, 21, 300, "relu_kernel")
    result = attribute(records, OWN, MARKER)
    assert side_stream_work(result, [], 0) == []
    assert side_stream_work(result, {"relu": 1}, 2) == [
        "aten::relu called on another stream",
        "2 launch(es) of the solution's Triton kernels on another stream",
    ]


def test_memcpy_and_memset_count_as_gpu_time():
    records = marker() + own_launch(10, 11, 100, "k", 100) + [gpu("Memset (Device)", 60, 900, 1200, kind="gpu_memset")]
    assert attribute(records, OWN, MARKER).coverage == 0.25


def test_a_forward_with_no_gpu_work_has_no_coverage():
    assert attribute(marker(), OWN, MARKER).coverage is None


class _OldKinetoEvent:
    """A profiler event as torch before 2.13 gives it: no ``activity_type``."""

    def __init__(self, name: str, annotation: bool = False):
        self._name, self._annotation = name, annotation

    def name(self) -> str:
        return self._name

    def is_user_annotation(self) -> bool:
        return self._annotation


@pytest.mark.parametrize(
    ("name", "annotation", "on_device", "kind"),
    [
        ("triton_softmax_kernel", False, True, "kernel"),
        ("Memcpy DtoD (Device -> Device)", False, True, "gpu_memcpy"),
        ("Memset (Device)", False, True, "gpu_memset"),
        ("tag", True, True, "gpu_user_annotation"),
        ("cuLaunchKernelEx", False, False, "cuda_driver"),
        ("cudaLaunchKernel", False, False, "cuda_runtime"),
        ("aten::mm", False, False, "cpu_op"),
        ("cuLaunchKernel", True, False, "user_annotation"),
    ],
)
def test_activity_kind_without_kinetos_activity_type(name, annotation, on_device, kind):
    assert activity_kind(_OldKinetoEvent(name, annotation), on_device=on_device) == kind
