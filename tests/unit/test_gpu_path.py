"""The GPU path's serial part (reprokit.harness.kinds.launch.run_on_gpu): a suite case compiles its
kernel through the JIT (and builds its launcher stub) before it waits for the GPU, not while it
holds the GPU lock and every other case waits. The kernel module, its compile and the launch are
real code paths; only what needs a GPU (torch.cuda, the lock's holder, the launch) is stood in
for, recording the order in which they are reached."""

from __future__ import annotations

import sys
import types

import pytest

from reprokit.config import load_config
from reprokit.harness import bench
from reprokit.harness.kinds import launch
from reprokit.suite import build_plan, kernels_dir


class _Lock:
    def __init__(self, order):
        self.order = order

    def __call__(self):
        return self

    def __enter__(self):
        self.order.append("gpu lock")

    def __exit__(self, *exc):
        self.order.append("gpu unlock")


def _fake_torch(order):
    cuda = types.SimpleNamespace(init=lambda: order.append("cuda init"),
                                 current_blas_handle=lambda: order.append("cublas handle"),
                                 get_device_name=lambda i: "NVIDIA H100 80GB HBM3 (stand-in)")
    return types.SimpleNamespace(cuda=cuda)


@pytest.mark.parametrize("case_id", ["tensor_descriptor.p0", "tensor_descriptor.gemm-128x256x64-w8-s3"])
def test_a_suite_case_compiles_before_it_waits_for_the_gpu(monkeypatch, tmp_path, case_id):
    plan = build_plan(load_config().gpu("h100"), {"name": "triton-3.6-cu130", "triton": "3.6.0"}, mode="gpu").to_json()
    case = next(c for c in plan["cases"] if c["id"] == case_id)
    order: list = []
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(order))
    monkeypatch.setitem(sys.modules, "triton", types.SimpleNamespace())
    monkeypatch.setattr(launch, "load_kernel", lambda *a: "kernel")
    monkeypatch.setattr(bench, "warm_profiler", lambda torch: order.append("profiler"))
    monkeypatch.setattr(launch, "warm_jit", lambda *a: order.append("jit compile"))
    monkeypatch.setattr(launch, "GpuLock", _Lock(order))

    class Launch(Exception):
        pass

    def bound(*a, **kw):  # the launch itself needs the GPU: it stops here, inside the lock
        order.append("launch")
        raise Launch("stand-in: no GPU")

    monkeypatch.setattr(launch, "Bound", bound)
    out = launch.run_on_gpu(case, plan, str(kernels_dir()), str(tmp_path), None)
    assert (out["status"], out["exception"]) == ("launch_error", "Launch")  # the stand-in's failure, as the launch's
    assert order.index("jit compile") < order.index("gpu lock") < order.index("launch")
    assert order.index("cublas handle") < order.index("gpu lock")
