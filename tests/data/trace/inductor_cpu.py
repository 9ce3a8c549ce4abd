"""Real Inductor output without a GPU: torch.compile of a small model with Inductor's Triton
backend for the CPU (`cpu_backend = "triton"`), each kernel it generates compiled for sm_90
instead (no Triton backend compiles for the CPU here; the kernels are the same Python). Inductor
writes its module (triton_helpers, libdevice, its heuristics decorators and hints) and calls
`triton.compile(ASTSource(...))` from its own autotuner, as on a GPU; then it cannot launch
them, which this program expects and says. A trace must record every kernel it compiled.
"""

import os
import sys

os.environ["TRITON_INTERPRET"] = "0"  # Inductor compiles with the real JIT
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

import torch  # noqa: E402
import torch._inductor.config as config  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from reprokit.harness import standin  # noqa: E402

standin.install_driver({"capability": 90, "key": "h100", "name": "H100", "arch": "sm_90", "sm_count": 132,
                        "smem_per_block": 232448})
config.cpu_backend = "triton"
config.compile_threads = 1
_compile = triton.compile


def compile_for_h100(src, target=None, options=None, **kwargs):
    if target is not None and target.backend == "cpu":
        target = GPUTarget("cuda", 90, 32)
    return _compile(src, target=target, options=options, **kwargs)


triton.compile = compile_for_h100


def model(x, w, b):
    h = torch.nn.functional.gelu(x @ w + b)
    return torch.softmax(torch.nn.functional.layer_norm(h, h.shape[-1:]), dim=-1)


def main() -> int:
    torch.manual_seed(0)
    x, w, b = torch.randn(64, 128), torch.randn(128, 128), torch.randn(128)
    try:
        torch.compile(model)(x, w, b)
    except Exception as e:  # noqa: BLE001 - launching is what a CPU cannot do; the compiles are done
        print(f"compiled; not launched on this CPU ({type(e).__name__})")
        return 0
    print("ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
