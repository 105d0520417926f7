"""Coverage attribution over profiler records (pure): by launch identity, never by name."""

from tritongym.evaluate.profiling import Record, attribute

OWN, MARKER = "tritongym.own.secret", "tritongym.marker.secret"
THREAD, STREAM = 11, 7


def host(name, corr, start, end, thread=THREAD):
    return Record(name, False, corr, thread, start, end, 0)


def gpu(name, corr, start, end, stream=STREAM):
    return Record(name, True, corr, 0, start, end, stream)


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
    ]


def torch_op(corr_op, corr_call, start, kernel_name, duration, stream=STREAM):
    return [
        host("aten::mm", corr_op, start, start + 10),
        host("cudaLaunchKernel", corr_call, start + 2, start + 8),
        gpu(kernel_name, corr_call, start + 100, start + 100 + duration, stream),
    ]


def test_pure_triton_forward_has_full_coverage_and_the_marker_is_not_counted():
    records = marker() + own_launch(10, 11, 100, "softmax_kernel", 900) + [gpu(OWN, 10, 200, 1100)]
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


def test_work_on_another_stream_is_reported():
    records = marker() + own_launch(10, 11, 100, "add_kernel", 100) + torch_op(20, 21, 300, "copy", 50, stream=9)
    assert attribute(records, OWN, MARKER).foreign_streams == ["copy"]


def test_memcpy_and_memset_count_as_gpu_time():
    records = marker() + own_launch(10, 11, 100, "k", 100) + [gpu("Memset (Device)", 60, 900, 1200)]
    assert attribute(records, OWN, MARKER).coverage == 0.25


def test_a_forward_with_no_gpu_work_has_no_coverage():
    assert attribute(marker(), OWN, MARKER).coverage is None
