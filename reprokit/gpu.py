"""What GPU this host has (through NVML), and which mode a run takes for a profile."""

from __future__ import annotations

from dataclasses import dataclass

from reprokit.config import GpuProfile
from reprokit.errors import GpuMismatchError


@dataclass(frozen=True)
class HostGpu:
    index: int
    name: str
    capability: int


def detect() -> tuple[list[HostGpu], str | None]:
    """The host's NVIDIA GPUs, and why there are none when the list is empty."""
    try:
        import pynvml
    except ImportError:
        return [], "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return [], f"NVML is not available ({e})"
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            gpus.append(HostGpu(i, name.decode() if isinstance(name, bytes) else name, major * 10 + minor))
        return gpus, None if gpus else "NVML sees no device"
    finally:
        pynvml.nvmlShutdown()


def choose_mode(profile: GpuProfile, requested: str = "auto", gpus: list[HostGpu] | None = None,
                why_none: str | None = None, say=None) -> str:
    """`compile-only` without a GPU (said once); `gpu` on a GPU of the profile's capability;
    an error on a GPU of another one, since its results would be mislabelled."""
    if requested == "compile-only":
        return requested
    if gpus is None:
        gpus, why_none = detect()
    if not gpus:
        if requested == "gpu":
            raise GpuMismatchError(f"--mode gpu asked for, but this host has no GPU: {why_none}")
        if say:
            say(f"No GPU on this host ({why_none}): compiling ahead of time for {profile.key} ({profile.arch}), "
                "compile-only.")
        return "compile-only"
    match = [g for g in gpus if g.capability == profile.capability]
    if not match:
        have = ", ".join(f"{g.name} (sm_{g.capability})" for g in gpus)
        raise GpuMismatchError(f"this host has {have}, not a {profile.key} ({profile.arch}); "
                               f"pick the matching --gpu profile or run with --mode compile-only")
    return "gpu"
