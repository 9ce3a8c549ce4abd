"""A driver for Triton's interpreter on a host with no GPU.

`triton.runtime.driver.active` raises "0 active drivers" on a CPU even under TRITON_INTERPRET=1,
so programs that take their device, SM count or target from it (as Triton's tutorials do) stop
before their first kernel. The stand-in answers those questions from the GPU profile being traced
for, puts tensors on the CPU, and times nothing: its benchmarker runs the call once and reports
the order it was called in, so an autotuner keeps the first config it tried (recorder.py says
which config that was).
"""

from __future__ import annotations

import types


class OrdinalBench:
    """A benchmarker that runs each call once and returns its ordinal as the 'time'."""

    def __init__(self):
        self.calls = 0

    def __call__(self, fn, *args, quantiles=None, return_mode=None, **kwargs):
        fn()
        self.calls += 1
        t = float(self.calls)
        return [t, t, t] if quantiles else t


class StandInDriver:
    """Answers what programs ask the active driver, for the profile `profile` (a stacks.toml GPU
    profile as a dict); used only under the interpreter, only where no real driver is active."""

    def __init__(self, profile: dict):
        from reprokit.harness.compat import gpu_target

        self.profile = profile
        self.target = gpu_target(int(profile.get("capability", 90)))
        props = {"multiprocessor_count": int(profile.get("sm_count", 132)),
                 "max_shared_mem": int(profile.get("smem_per_block", 232448)),
                 "max_num_regs": 65536, "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000,
                 "mem_bus_width": 5120}
        self.utils = types.SimpleNamespace(get_device_properties=lambda *_a, **_k: dict(props))
        self.bench = OrdinalBench()

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device) -> None:
        pass

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_device_capability(self, device=None):
        cap = int(self.profile.get("capability", 90))
        return (cap // 10, cap % 10)

    def get_device_interface(self):
        import torch

        return torch.cpu

    def get_benchmarker(self):
        return self.bench

    def get_empty_cache_for_benchmark(self):
        import torch

        return torch.empty(0)

    def clear_cache(self, cache) -> None:
        pass

    def __repr__(self) -> str:
        return f"<reprokit stand-in driver for {self.profile.get('key', 'a GPU')} under the interpreter>"


def install(profile: dict) -> StandInDriver | None:
    """Make the stand-in the active driver when no real one can be (returns it), else None."""
    import importlib

    drv = importlib.import_module("triton.runtime.driver")  # the module, not the `driver` it exports
    try:
        drv._create_driver()
        return None
    except RuntimeError:
        pass
    standin = StandInDriver(profile)
    drv.driver.set_active(standin)
    if hasattr(drv.driver, "_default"):  # 3.4+: `default` is a lazy property that would raise again
        drv.driver._default = standin
    return standin
