"""What torch.compile's default mode does with its kernels, without a GPU: Inductor's own compile
worker pool (torch._inductor.compile_worker.subproc_pool.SubprocPool: a sidecar process started
with the program's environment, which forks the workers) compiles each config of
generated_kernels.py's module with `triton.compile(ASTSource(...))`, and the program only waits
for the results. Every compile happens in a worker; none in the program."""

import os
import sys

os.environ["TRITON_INTERPRET"] = "0"  # as generated_kernels.py: the real JIT, for triton.compile

import generated_kernels  # noqa: E402 - beside this file: the workers import it by that name
from torch._inductor.compile_worker.subproc_pool import SubprocPool  # noqa: E402


def main() -> int:
    pool = SubprocPool(2)
    try:
        jobs = [pool.submit(generated_kernels.compile_config, name, *config)
                for name, _, configs in generated_kernels.KERNELS for config in configs]
        names = [job.result(timeout=600) for job in jobs]
    finally:
        pool.shutdown()
    print(f"compiled {len(names)} kernels in the worker pool: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
