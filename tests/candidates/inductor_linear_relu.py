# KernelBook-style solution of linear_relu, in the shape of torch.compile's (Inductor's) generated
# code: the matmul stays a library call (extern_kernels.mm, cuBLAS), bias + ReLU run in a Triton
# kernel that Inductor's pointwise launcher compiles and launches on the current raw stream.
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch._C import _cuda_getCurrentRawStream as get_raw_stream
from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.select_algorithm import extern_kernels

assert_size_stride = torch._C._dynamo.guards.assert_size_stride
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor


@triton_heuristics.pointwise(
    size_hints={"x": 8388608},
    filename=__file__,
    triton_meta={
        "signature": {"in_out_ptr0": "*fp32", "in_ptr0": "*fp32", "ks0": "i32", "xnumel": "i32", "XBLOCK": "constexpr"},
        "device": DeviceProperties(
            type="cuda",
            index=0,
            multi_processor_count=132,
            cc=90,
            major=9,
            regs_per_multiprocessor=65536,
            max_threads_per_multi_processor=2048,
            warp_size=32,
        ),
        "constants": {},
        "configs": [{(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}],
    },
    inductor_meta={
        "grid_type": "Grid1D",
        "autotune_hints": set(),
        "kernel_name": "triton_poi_fused_addmm_relu_0",
        "mutated_arg_names": ["in_out_ptr0"],
        "optimize_mem": False,
        "no_x_dim": False,
        "num_load": 2,
        "num_reduction": 0,
        "are_deterministic_algorithms_enabled": False,
        "assert_indirect_indexing": True,
        "autotune_local_cache": True,
        "autotune_pointwise": True,
        "autotune_remote_cache": None,
        "force_disable_caches": False,
        "dynamic_scale_rblock": True,
        "max_autotune": False,
        "max_autotune_pointwise": False,
        "min_split_scan_rblock": 256,
        "spill_threshold": 16,
        "store_cubin": False,
    },
    min_elem_per_thread=0,
)
@triton.jit
def triton_poi_fused_addmm_relu_0(in_out_ptr0, in_ptr0, ks0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x0 = xindex % ks0
    tmp0 = tl.load(in_out_ptr0 + (x2), xmask)
    tmp1 = tl.load(in_ptr0 + (x0), xmask, eviction_policy="evict_last")
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0, tl.int32)
    tmp4 = triton_helpers.maximum(tmp3, tmp2)
    tl.store(in_out_ptr0 + (x2), tmp4, xmask)


def call(args):
    primals_1, primals_2, primals_3 = args
    args.clear()
    ks0, ks1 = primals_1.shape
    s0 = primals_3.shape[0]
    assert_size_stride(primals_1, (ks0, ks1), (ks1, 1))
    assert_size_stride(primals_2, (ks0,), (1,))
    assert_size_stride(primals_3, (s0, ks1), (ks1, 1))
    with torch.cuda._DeviceGuard(primals_3.device.index):
        buf0 = empty_strided_cuda((s0, ks0), (ks0, 1), torch.float32)
        extern_kernels.mm(primals_3, reinterpret_tensor(primals_1, (ks1, ks0), (1, ks1), 0), out=buf0)
        del primals_1
        buf1 = buf0
        del buf0
        stream0 = get_raw_stream(primals_3.device.index)
        triton_poi_fused_addmm_relu_0.run(buf1, primals_2, ks0, s0 * ks0, stream=stream0)
        del primals_2
    return (buf1, primals_3)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, input_0):
        primals_1 = self.linear.weight
        primals_2 = self.linear.bias
        primals_3 = input_0
        output = call([primals_1, primals_2, primals_3])
        return output[0]
