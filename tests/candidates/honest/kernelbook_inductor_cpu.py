# problem: kernelbook_tanh_gate
"""KernelBook's triton_code shape: one Inductor-named pointwise @triton.jit kernel
(xoffset/xindex/xmask, tmpN temporaries, sizes baked in as xnumel = 256, the channel index from
xindex // 16 % 4), Inductor's device helpers (triton_helpers.maximum, libdevice.tanh,
tl_math.exp, tl.sigmoid), two outputs in one kernel, a call(args) that clears its argument list,
checks sizes with assert_size_stride and allocates with empty_strided_cuda (a GPU row's buffers: on the
CPU judge its device memory; a CPU row's empty_strided_cpu is host memory, which a GPU's launch
refuses), a module whose forward passes its parameter and inputs as primals and returns call(...)[0]
and [1]."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math

assert_size_stride = torch._C._dynamo.guards.assert_size_stride
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda


@triton.jit
def triton_poi_fused_abs_exp_maximum_mul_neg_sigmoid_tanh_0(
    in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, XBLOCK: tl.constexpr
):
    xnumel = 256
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x1 = xindex // 16 % 4
    tmp0 = tl.load(in_ptr0 + x2, xmask)
    tmp2 = tl.load(in_ptr1 + x2, xmask)
    tmp5 = tl.load(in_ptr2 + x1, xmask, eviction_policy="evict_last")
    tmp1 = libdevice.tanh(tmp0)
    tmp3 = tl.sigmoid(tmp2)
    tmp4 = tmp1 * tmp3
    tmp6 = triton_helpers.maximum(tmp4, tmp5)
    tmp7 = tl_math.abs(tmp4)
    tmp8 = -tmp7
    tmp9 = tl_math.exp(tmp8)
    tl.store(out_ptr0 + x2, tmp6, xmask)
    tl.store(out_ptr1 + x2, tmp9, xmask)


def call(args):
    primals_1, primals_2, primals_3 = args
    args.clear()
    assert_size_stride(primals_1, (4, 4, 4, 4), (64, 16, 4, 1))
    assert_size_stride(primals_2, (4, 4, 4, 4), (64, 16, 4, 1))
    assert_size_stride(primals_3, (4,), (1,))
    buf0 = empty_strided_cuda((4, 4, 4, 4), (64, 16, 4, 1), torch.float32)
    buf1 = empty_strided_cuda((4, 4, 4, 4), (64, 16, 4, 1), torch.float32)
    triton_poi_fused_abs_exp_maximum_mul_neg_sigmoid_tanh_0[(2,)](
        primals_1, primals_2, primals_3, buf0, buf1, 256, XBLOCK=128, num_warps=4, num_stages=1
    )
    return buf0, buf1


class TanhGateNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.floor = nn.Parameter(torch.randn(channels))

    def forward(self, input_0, input_1):
        primals_3 = self.floor
        output = call([input_0, input_1, primals_3])
        return output[0], output[1]
