"""The driver a traced program gets under Triton's interpreter on a host with no GPU.

`triton.runtime.driver.active` raises "0 active drivers" on a CPU even under TRITON_INTERPRET=1,
so programs that take their device, SM count or target from it (as Triton's tutorials do) stop
before their first kernel. The harness's stand-in (reprokit.harness.standin.Driver) answers
those questions from the GPU profile; here it puts tensors on the CPU and, where the harness's
refuses to time, gives an ordinal benchmarker: each call runs once and "takes" its order, so an
autotuner keeps the first config it tried (recorder.py says which config that was).
"""

from __future__ import annotations

import importlib
import time
import types

from reprokit.harness import standin as harness_standin


class OrdinalBench:
    """A benchmarker that runs each call once and returns its ordinal as the 'time'."""

    def __init__(self):
        self.calls = 0

    def __call__(self, fn, *args, quantiles=None, return_mode=None, **kwargs):
        fn()
        self.calls += 1
        t = float(self.calls)
        return [t, t, t] if quantiles else t


class _CpuEvent:
    """torch.cuda.Event's timing, on the CPU clock: what triton.testing.do_bench records."""

    def __init__(self, enable_timing: bool = False, **_):
        self.t: float | None = None

    def record(self, stream=None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "_CpuEvent") -> float:
        if self.t is None or end.t is None:
            raise RuntimeError("elapsed_time() of an event that was not recorded")  # as torch refuses
        return (end.t - self.t) * 1e3


class _CpuDeviceInterface:
    """The device interface a program gets from the stand-in: torch.cpu (synchronize and the
    rest do nothing, as on a CPU they should) with timing events, so triton.testing.do_bench
    times the interpreter instead of failing."""

    Event = _CpuEvent

    def __getattr__(self, name):
        import torch

        return getattr(torch.cpu, name)

    @staticmethod
    def synchronize(device=None) -> None:
        pass


class TraceDriver(harness_standin.Driver):
    """The harness's stand-in driver with CPU tensors, the CPU's device interface and the ordinal
    benchmarker: what a program running under the interpreter needs of a driver."""

    def __init__(self, profile: dict):
        super().__init__(profile, torch_device="cpu")
        self.bench = OrdinalBench()

    def get_device_interface(self):
        return _CpuDeviceInterface()

    def get_benchmarker(self):
        return self.bench

    def get_empty_cache_for_benchmark(self):
        import torch

        return torch.empty(0)

    def clear_cache(self, cache) -> None:
        pass


def install(profile: dict) -> TraceDriver | None:
    """Make the stand-in the active driver when no real one can be (returns it), else None."""
    drv = importlib.import_module("triton.runtime.driver")  # the module, not the `driver` it exports
    try:
        drv._create_driver()
        return None
    except RuntimeError:
        pass
    stand_in = TraceDriver(profile)
    drv.driver.set_active(stand_in)
    if hasattr(drv.driver, "_default"):  # 3.2+: `default` is a lazy property that would raise again
        drv.driver._default = stand_in
    _torch_cuda_facts(profile)
    return stand_in


def _torch_cuda_facts(profile: dict) -> None:
    """torch.cuda's device questions answered for the profile, as the stand-in driver answers
    Triton's. The stand-in says the target is CUDA, so programs take their CUDA branch, and
    Triton's tutorials there ask torch for the SM count and capability
    (`torch.cuda.get_device_properties("cuda").multi_processor_count`,
    `torch.cuda.get_device_capability()[0] >= 9`), which a CPU torch refuses. Only those two
    facts: `torch.cuda.is_available()` stays False, and CUDA tensors, streams and events still
    fail (docs/trace.md)."""
    try:
        import torch
    except ImportError:  # a program without torch asks torch nothing
        return
    if torch.cuda.is_available():
        return
    cap = int(profile.get("capability", 90))
    props = types.SimpleNamespace(name=str(profile.get("name", "")), major=cap // 10, minor=cap % 10,
                                  multi_processor_count=int(profile.get("sm_count", 1)),
                                  total_memory=int(float(profile.get("memory_gib") or 0) * 2**30),
                                  warp_size=32, shared_memory_per_block_optin=int(profile.get("smem_per_block", 0)))
    torch.cuda.get_device_properties = lambda device=None: props
    torch.cuda.get_device_capability = lambda device=None: (props.major, props.minor)
