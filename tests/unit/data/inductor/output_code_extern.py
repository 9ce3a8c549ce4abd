# Wrapper code in the shape torch 2.13's Inductor writes (codegen/wrapper.py and
# codegen/triton.py: "# kernel path:", async_compile.triton(name, '''src''', device_str=...),
# and a call() that runs the chosen kernels): here autotuning chose cuBLAS for the matmul and
# a Triton kernel for the epilogue.
from ctypes import c_void_p, c_long, c_int
import torch
from torch._inductor.select_algorithm import extern_kernels
from torch._inductor.async_compile import AsyncCompile

aten = torch.ops.aten
async_compile = AsyncCompile()


# kernel path: /tmp/torchinductor_root/q7/cq7x2n5vrbwq3x4p6ltvyzt3iyv5yk2m6bbm6hkxbyq6pdlhw3ky.py
# Topologically Sorted Source Nodes: [relu, add], Original ATen: [aten.relu, aten.add]
# Source node to ATen node mapping:
#   add => add
#   relu => relu
triton_poi_fused_add_relu_0 = async_compile.triton('triton_poi_fused_add_relu_0', '''
import triton
import triton.language as tl

@triton.jit
def triton_poi_fused_add_relu_0(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_out_ptr0 + (xindex), xmask).to(tl.float32)
    tmp2 = triton_helpers.maximum(0, tmp0)
    tmp4 = tmp2 + 1.0
    tl.store(in_out_ptr0 + (xindex), tmp4, xmask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((4096, 4096), (4096, 1), torch.float16)
        extern_kernels.mm(arg0_1, arg1_1, out=buf0)
        del arg0_1
        del arg1_1
        buf1 = buf0; del buf0  # reuse
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_relu_0.run(buf1, 16777216, stream=stream0)
    return (buf1, )
