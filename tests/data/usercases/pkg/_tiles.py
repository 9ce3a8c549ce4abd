"""Helpers a kernel file imports from beside it, as kernel repositories split them."""

import triton
import triton.language as tl

BLOCK_DEFAULT = 128


@triton.jit
def swizzle(pid, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    width = GROUP_M * num_pid_n
    group_id = pid // width
    group_size = min(num_pid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    return pid_m, pid_n
