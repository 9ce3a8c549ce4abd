"""What GPU this host has (through NVML), whether it is the profile's GPU, and so which mode a
run takes: compile-only without a GPU, on the GPU when it matches the profile by capability,
name and memory, and a stop otherwise (a bundle named h200 must not hold an H100's numbers)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

from reprokit.compare.boards import identity_of_uuid
from reprokit.config import GpuProfile
from reprokit.errors import GpuMismatchError, MissingDependency, UsageError
from reprokit.options import GpuOptions

# NVML's total memory is what the board has less what the driver keeps: an H100 "80GB" reports
# 79.6 GiB, an H200 "141GB" about 140.4. Boards of one name but another memory size differ more.
MEMORY_TOLERANCE = 0.04


@dataclass(frozen=True)
class HostGpu:
    index: int
    name: str
    capability: int
    memory_total: int | None = None  # bytes, as NVML reports it; None where it cannot tell
    uuid: str | None = None  # to resolve CUDA_VISIBLE_DEVICES=GPU-...; not recorded

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("uuid")
        return d

    def describe(self) -> str:
        mem = f", {self.memory_total / 2**30:.1f} GiB" if self.memory_total else ""
        return f"{self.name} (sm_{self.capability}{mem})"


# Why detect() found no GPU when NVML's bindings are missing (the `gpu` extra).
NO_NVML = "nvidia-ml-py is not installed (reprokit's 'gpu' extra)"


def detect() -> tuple[list[HostGpu], str | None]:
    """The host's NVIDIA GPUs, and why there are none when the list is empty."""
    try:
        import pynvml
    except ImportError:
        return [], NO_NVML
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
            try:
                memory = int(pynvml.nvmlDeviceGetMemoryInfo(h).total)
            except pynvml.NVMLError:  # unified memory (GB10) has no separate total
                memory = None
            try:
                uuid = pynvml.nvmlDeviceGetUUID(h)
            except pynvml.NVMLError:  # only CUDA_VISIBLE_DEVICES=GPU-... needs it
                uuid = None
            gpus.append(HostGpu(i, name.decode() if isinstance(name, bytes) else name, major * 10 + minor, memory,
                                uuid.decode() if isinstance(uuid, bytes) else uuid))
        return gpus, None if gpus else "NVML sees no device"
    finally:
        pynvml.nvmlShutdown()


def host_board(host: Mapping | None) -> str | None:
    """The board identity (sha256 of the UUID, reprokit.compare.boards) of the host GPU a run
    checked (GpuOptions.host, by NVML index); None where NVML cannot say."""
    if not host or not isinstance(host.get("index"), int):
        return None
    gpus, _ = detect()
    uuid = next((g.uuid for g in gpus if g.index == host["index"]), None)
    return identity_of_uuid(uuid)


def _norm(name: str) -> str:
    return " ".join(name.lower().split())


def mismatches(profile: GpuProfile, gpu: HostGpu) -> list[str]:
    """How `gpu` differs from the profile: capability, name, memory (empty when it is the profile's)."""
    out = []
    if gpu.capability != profile.capability:
        out.append(f"capability sm_{gpu.capability}, not {profile.arch}")
    if _norm(gpu.name) not in {_norm(n) for n in (profile.name, *profile.nvml_names)}:
        out.append(f"name {gpu.name!r}, not {profile.name!r}")
    if profile.memory_gib and gpu.memory_total:
        gib = gpu.memory_total / 2**30
        if abs(gib - profile.memory_gib) > MEMORY_TOLERANCE * profile.memory_gib:
            out.append(f"{gib:.1f} GiB of memory, not {profile.memory_gib:g}")
    return out


def visible(gpus: list[HostGpu], cuda_visible_devices: str | None) -> list[HostGpu]:
    """The GPUs a CUDA program sees, in its order, under CUDA_VISIBLE_DEVICES (indices or
    GPU-/MIG- UUID prefixes; NVML itself always sees every GPU). The run uses the first."""
    if cuda_visible_devices is None:
        return gpus
    out: list[HostGpu] = []
    for item in (x.strip() for x in cuda_visible_devices.split(",")):
        if item.isdigit():
            match = [g for g in gpus if g.index == int(item)]
        else:  # a UUID, or a unique prefix of one
            match = [g for g in gpus if g.uuid and g.uuid.startswith(item)]
            match = match if len(match) == 1 else []
        if not match:
            break  # CUDA stops at the first entry it cannot resolve
        out.extend(m for m in match if m not in out)
    return out


@dataclass(frozen=True)
class HostGpus:
    """The GPUs a CUDA program on this host sees (NVML's, under CUDA_VISIBLE_DEVICES), in its
    order, or why there are none: what gpu_options() judges a profile against. The verbs detect
    it; a test names the GPUs it stands for."""

    gpus: tuple[HostGpu, ...] = ()
    why_none: str | None = None

    @classmethod
    def detect(cls, cuda_visible_devices: str | None = None) -> HostGpus:
        gpus, why_none = detect()
        seen = visible(gpus, cuda_visible_devices)
        return cls(tuple(seen), why_none or ("CUDA_VISIBLE_DEVICES hides every GPU" if not seen else None))

    @classmethod
    def for_mode(cls, requested: str, cuda_visible_devices: str | None = None) -> HostGpus:
        """detect(), except that a run asked to be compile-only looks at no GPU (and says nothing)."""
        return cls() if requested == "compile-only" else cls.detect(cuda_visible_devices)


def gpu_options(profile: GpuProfile, requested: str, host: HostGpus, *, allow_mismatch: bool = False,
                lock_clocks: str | None = None) -> GpuOptions:
    """GpuOptions for a run: `compile-only` when asked, or without a GPU (notice() says so);
    `gpu` on the profile's GPU; GpuMismatchError on another GPU, unless allow_mismatch (and the
    same capability: code built for another architecture cannot run there), which is recorded."""
    if requested == "compile-only":
        return GpuOptions(profile, "compile-only", lock_clocks=lock_clocks)
    if not host.gpus:
        if requested == "gpu" and host.why_none == NO_NVML:
            raise MissingDependency("nvidia-ml-py", "checks the host's GPU against the profile (--mode gpu)", "gpu")
        if requested == "gpu":
            raise GpuMismatchError(f"--mode gpu asked for, but this host has no GPU: {host.why_none}")
        return GpuOptions(profile, "compile-only", lock_clocks=lock_clocks)
    gpu = host.gpus[0]
    problems = mismatches(profile, gpu)
    if problems and (not allow_mismatch or gpu.capability != profile.capability):
        hint = ("pick the matching --gpu profile, run with --mode compile-only, or pass --allow-gpu-mismatch"
                if gpu.capability == profile.capability else
                "pick the matching --gpu profile or run with --mode compile-only")
        raise GpuMismatchError(f"this host's GPU {gpu.index} is a {gpu.describe()}, not a {_want(profile)}: "
                               f"{'; '.join(problems)}; {hint}")
    return GpuOptions(profile, "gpu", host=gpu.to_dict(), mismatch=tuple(problems),
                      allow_mismatch=allow_mismatch, lock_clocks=lock_clocks)


def notice(gpu: GpuOptions, host: HostGpus) -> str | None:
    """The line a verb says about the GPU choice gpu_options() made on `host`, when there is one:
    no GPU, so compile-only; or another GPU than the profile's, allowed and recorded."""
    profile = gpu.profile
    if not gpu.on_gpu and host.why_none:
        return (f"No GPU on this host ({host.why_none}): compiling ahead of time for {profile.key} "
                f"({profile.arch}), compile-only.")
    if gpu.on_gpu and gpu.mismatch and host.gpus:
        used = host.gpus[0]
        return (f"warning: GPU {used.index} is a {used.describe()}, not a {_want(profile)} ({'; '.join(gpu.mismatch)}); "
                "running anyway (--allow-gpu-mismatch), and the bundle says so")
    return None


def choose_gpu(profile: GpuProfile, requested: str, environ: Mapping[str, str], *, allow_mismatch: bool = False,
               lock_clocks: str | None = None) -> tuple[GpuOptions, str | None]:
    """The one GPU choice every verb makes: this host's GPUs (those CUDA_VISIBLE_DEVICES in
    `environ` shows; none looked at when compile-only is asked) judged against the profile by
    gpu_options(), and the line that choice deserves (notice(); None when nothing is to be said),
    for the verb to say once its own checks have passed."""
    host = HostGpus.for_mode(requested, environ.get("CUDA_VISIBLE_DEVICES"))
    gpu = gpu_options(profile, requested, host, allow_mismatch=allow_mismatch, lock_clocks=lock_clocks)
    return gpu, notice(gpu, host)


def _want(profile: GpuProfile) -> str:
    return f"{profile.key} ({profile.name}, {profile.arch})"


def lock_clocks_value(text: str | None) -> str | None:
    """--lock-clocks: 'max' or a whole number of MHz."""
    if text is None:
        return None
    value = text.strip().lower()
    if value == "max" or (value.isdigit() and int(value) > 0):
        return value
    raise UsageError(f"--lock-clocks {text!r} is not 'max' or a number of MHz")
