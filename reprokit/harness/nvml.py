"""NVML, decoded: one GPU's state as plain JSON values, and a sampler around a measurement.

    snapshot(index) -> dict           the state of one GPU (driver, identity, modes, PCIe link,
                                      clocks, power, temperature, throttle reasons by name)
    snapshot_all() -> dict            every GPU, for env.json
    with Sampler(index, interval_s) as summary:
        run_the_benchmark()           `summary` is filled in when the block ends: snapshots
                                      before and after, min/max SM clock, max temperature and
                                      power, every throttle reason seen, `throttled` when the GPU
                                      held its clocks back for power or heat
    with lock_clocks(index, "max") as record:   only when the user asked for it (--lock-clocks)

Everything here reads, except lock_clocks(), which sets the SM clock and resets it on the way
out. Without pynvml or a driver, every entry point says so in its dict ("available": false)
instead of raising: a benchmark still runs, it just carries no NVML facts. Standard library
and nvidia-ml-py only, Python >= 3.9 (it runs inside the stacks).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from typing import Any

# Throttle ("clocks event") reasons that mean the GPU ran below the clocks it could have, for
# power or heat: a timing taken under one of them is not the hardware's speed. (gpu_idle,
# applications clocks, sync boost, display clock and the board limit say nothing of that.)
POWER_OR_HEAT = frozenset({"sw_power_cap", "hw_slowdown", "hw_power_brake_slowdown",
                           "sw_thermal_slowdown", "hw_thermal_slowdown"})
_REASON_PREFIXES = ("nvmlClocksThrottleReason", "nvmlClocksEventReason")
_NOT_A_REASON = ("All", "None")


def _pynvml():
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


# -- decoding plain values ---------------------------------------------------------------------

def _snake(camel: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", camel).lower()


def throttle_bits(pynvml=None) -> dict:
    """bit -> name, from pynvml's own nvmlClocksThrottleReason* / nvmlClocksEventReason* constants
    (`sw_power_cap`, `hw_thermal_slowdown`, ...). A bit with two names (0x2 is both
    ApplicationsClocksSetting and UserDefinedClocks) gets the first in sorted order."""
    pynvml = pynvml or _pynvml()
    if pynvml is None:
        return {}
    names: dict = {}
    for attr in dir(pynvml):
        for prefix in _REASON_PREFIXES:
            rest = attr[len(prefix):]
            if attr.startswith(prefix) and rest and rest not in _NOT_A_REASON:
                value = getattr(pynvml, attr)
                if isinstance(value, int) and value and value & (value - 1) == 0:  # one bit
                    names.setdefault(value, set()).add(_snake(rest))
    return {bit: sorted(n)[0] for bit, n in sorted(names.items())}


def decode_throttle(mask, bits: dict | None = None) -> list:
    """The names of the bits set in a throttle-reason mask, lowest bit first; a bit pynvml does
    not name reads `unknown_0x...`."""
    if not isinstance(mask, int):
        return []
    bits = throttle_bits() if bits is None else bits
    out, bit = [], 1
    while bit <= mask:
        if mask & bit:
            out.append(bits.get(bit, f"unknown_{bit:#x}"))
        bit <<= 1
    return out


def power_or_heat(names) -> list:
    """The reasons among `names` that flag a measurement (see POWER_OR_HEAT)."""
    return sorted(n for n in set(names) if n in POWER_OR_HEAT)


def decode_cuda_driver(version) -> str | None:
    """nvmlSystemGetCudaDriverVersion's integer as CUDA spells it: 13000 -> '13.0', 12040 -> '12.4'."""
    if not isinstance(version, int) or version <= 0:
        return None
    return f"{version // 1000}.{(version % 1000) // 10}"


def decode_compute_mode(mode, pynvml=None) -> str | None:
    """NVML_COMPUTEMODE_* as a name: 'default', 'exclusive_process', 'prohibited'."""
    pynvml = pynvml or _pynvml()
    if not isinstance(mode, int) or pynvml is None:
        return None
    for attr in dir(pynvml):
        if attr.startswith("NVML_COMPUTEMODE_") and attr != "NVML_COMPUTEMODE_COUNT" and getattr(pynvml, attr) == mode:
            return attr[len("NVML_COMPUTEMODE_"):].lower()
    return f"unknown_{mode}"


def decode_enabled(value) -> bool | None:
    """NVML's feature states (persistence, ECC, MIG: 0 disabled, 1 enabled) as a bool."""
    return bool(value) if isinstance(value, int) else None


def decode_pair(pair) -> dict | None:
    """(current, pending) feature states, as ECC and MIG modes are read."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return None
    return {"current": decode_enabled(pair[0]), "pending": decode_enabled(pair[1])}


def _text(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else v


def _watts(milliwatts):
    return round(milliwatts / 1000, 3) if isinstance(milliwatts, (int, float)) else None


# -- reading one device ------------------------------------------------------------------------

class _Reads:
    """Calls NVML for one device, turning each unreadable field into None plus a note (a
    datacenter GPU has no display clock, a GB10 no separate memory, a container no serial)."""

    def __init__(self, pynvml, handle):
        self.nv = pynvml
        self.handle = handle
        self.unreadable: dict = {}

    def __call__(self, field: str, fn_name: str, *args):
        fn = getattr(self.nv, fn_name, None)
        if fn is None:
            self.unreadable[field] = f"{fn_name} is not in this nvidia-ml-py"
            return None
        try:
            return fn(self.handle, *args)
        except self.nv.NVMLError as e:
            self.unreadable[field] = str(e)
            return None


def _throttle_mask(r: _Reads):
    # nvidia-ml-py 12.535+ names them clocks event reasons; older releases only throttle reasons.
    fn = "nvmlDeviceGetCurrentClocksEventReasons"
    return r("throttle_reasons", fn if hasattr(r.nv, fn) else "nvmlDeviceGetCurrentClocksThrottleReasons")


def _violation_ns(r: _Reads) -> dict:
    """Cumulative nanoseconds the GPU spent held back by its power and thermal policies: their
    difference across a measurement catches throttling that samples between reads may miss."""
    out = {}
    for name, policy in (("power", "NVML_PERF_POLICY_POWER"), ("thermal", "NVML_PERF_POLICY_THERMAL")):
        value = r(f"violation_{name}", "nvmlDeviceGetViolationStatus", getattr(r.nv, policy, -1))
        out[name] = getattr(value, "violationTime", None)
    return out


def read_device(pynvml, handle, index: int) -> dict:
    """Every fact NVML gives about one device, decoded."""
    nv = pynvml
    r = _Reads(nv, handle)
    cc = r("capability", "nvmlDeviceGetCudaComputeCapability")
    mem = r("memory", "nvmlDeviceGetMemoryInfo")
    pci = r("pci_bus_id", "nvmlDeviceGetPciInfo")
    mask = _throttle_mask(r)
    names = decode_throttle(mask, throttle_bits(nv))
    clocks = {}
    for key, clock in (("sm", "NVML_CLOCK_SM"), ("mem", "NVML_CLOCK_MEM"), ("graphics", "NVML_CLOCK_GRAPHICS")):
        clocks[key] = r(f"clock_{key}", "nvmlDeviceGetClockInfo", getattr(nv, clock))
        clocks[f"{key}_max"] = r(f"clock_{key}_max", "nvmlDeviceGetMaxClockInfo", getattr(nv, clock))
    pstate = r("pstate", "nvmlDeviceGetPerformanceState")
    dev = {
        "index": index,
        "name": _text(r("name", "nvmlDeviceGetName")),
        "uuid": _text(r("uuid", "nvmlDeviceGetUUID")),
        "serial": _text(r("serial", "nvmlDeviceGetSerial")),
        "pci_bus_id": _text(getattr(pci, "busId", None)),
        "capability": cc[0] * 10 + cc[1] if isinstance(cc, tuple) else None,
        "memory_total": getattr(mem, "total", None),
        "memory_used": getattr(mem, "used", None),
        "ecc_mode": decode_pair(r("ecc_mode", "nvmlDeviceGetEccMode")),
        "persistence_mode": decode_enabled(r("persistence_mode", "nvmlDeviceGetPersistenceMode")),
        "compute_mode": decode_compute_mode(r("compute_mode", "nvmlDeviceGetComputeMode"), nv),
        "mig_mode": decode_pair(r("mig_mode", "nvmlDeviceGetMigMode")),
        "pcie": {"gen": r("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
                 "gen_max": r("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
                 "width": r("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth"),
                 "width_max": r("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth")},
        "clocks_mhz": clocks,
        "pstate": f"P{pstate}" if isinstance(pstate, int) and pstate < 32 else None,
        "temperature_c": r("temperature_c", "nvmlDeviceGetTemperature", getattr(nv, "NVML_TEMPERATURE_GPU", 0)),
        "power_w": _watts(r("power_w", "nvmlDeviceGetPowerUsage")),
        "power_limit_w": _watts(r("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit")),
        "power_default_limit_w": _watts(r("power_default_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit")),
        "throttle_reasons": {"mask": mask, "names": names, "power_or_heat": power_or_heat(names)},
        "violation_ns": _violation_ns(r),
    }
    dev["unreadable"] = dict(sorted(r.unreadable.items()))
    return dev


@contextlib.contextmanager
def _session():
    """pynvml, initialised for the block (NVML counts its inits), or (None, why not)."""
    nv = _pynvml()
    if nv is None:
        yield None, "nvidia-ml-py (pynvml) is not installed in this stack"
        return
    try:
        nv.nvmlInit()
    except nv.NVMLError as e:
        yield None, f"NVML init failed: {e}"
        return
    try:
        yield nv, None
    finally:
        nv.nvmlShutdown()


def _system(nv) -> dict:
    def q(fn):
        try:
            return getattr(nv, fn)()
        except (nv.NVMLError, AttributeError):
            return None

    cuda = q("nvmlSystemGetCudaDriverVersion")
    return {"driver": _text(q("nvmlSystemGetDriverVersion")), "nvml_version": _text(q("nvmlSystemGetNVMLVersion")),
            "cuda_driver": cuda, "cuda_driver_version": decode_cuda_driver(cuda)}


def snapshot(index: int = 0) -> dict:
    """One GPU by NVML index: {"available": true, driver facts, ...device facts} or
    {"available": false, "reason": ...}."""
    with _session() as (nv, why):
        if nv is None:
            return {"available": False, "reason": why}
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
        except nv.NVMLError as e:
            return {"available": False, "reason": f"NVML has no device {index}: {e}"}
        return {"available": True, **_system(nv), "taken": _now(), **read_device(nv, handle, index)}


def snapshot_all() -> dict:
    """Every GPU NVML sees, with the driver facts once: env.json's `gpu`."""
    with _session() as (nv, why):
        if nv is None:
            return {"available": False, "reason": why}
        devices = []
        for i in range(nv.nvmlDeviceGetCount()):
            try:
                devices.append(read_device(nv, nv.nvmlDeviceGetHandleByIndex(i), i))
            except nv.NVMLError as e:  # a GPU fallen off the bus still has its place in the list
                devices.append({"index": i, "unreadable": {"handle": str(e)}})
        return {"available": True, **_system(nv), "devices": devices}


def board_records(gpus: dict | None, index: int = 0) -> dict | None:
    """env.json's `board`, from snapshot_all()'s document for the GPU the run used (NVML index):
    two records, because they answer two questions. `identity` (which board: the sha256 of its
    UUID, never the UUID; --share leaves it out) and `state` (how it was set up and how warm it
    was when the run began: driver, power limit, ECC, clocks, temperature). None without NVML."""
    if not isinstance(gpus, dict) or not gpus.get("available"):
        return None
    dev = next((d for d in gpus.get("devices") or [] if d.get("index") == index), None)
    if dev is None:
        return None
    uuid = dev.get("uuid")
    clocks = dev.get("clocks_mhz") or {}
    return {
        "identity": {"uuid_sha256": hashlib.sha256(uuid.encode()).hexdigest()} if isinstance(uuid, str) and uuid else None,
        "state": {
            "index": index, "name": dev.get("name"), "driver": gpus.get("driver"),
            "cuda_driver_version": gpus.get("cuda_driver_version"),
            "power_limit_w": dev.get("power_limit_w"), "power_default_limit_w": dev.get("power_default_limit_w"),
            "ecc": (dev.get("ecc_mode") or {}).get("current"), "persistence_mode": dev.get("persistence_mode"),
            "pstate": dev.get("pstate"), "temperature_c": dev.get("temperature_c"),
            "clocks_mhz": {k: clocks.get(k) for k in ("sm", "sm_max", "mem", "mem_max")},
        },
    }


def index_for_cuda_device(cuda_index: int = 0) -> int:
    """The NVML index of torch's CUDA device `cuda_index`. They differ when CUDA_VISIBLE_DEVICES
    reorders or hides GPUs (NVML always sees them all), so they are matched by PCI address; the
    CUDA index itself when that cannot be done."""
    import torch

    props = torch.cuda.get_device_properties(cuda_index)
    want = tuple(getattr(props, f, None) for f in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
    if None in want:  # torch too old to say
        return cuda_index
    with _session() as (nv, _):
        if nv is not None:
            for i in range(nv.nvmlDeviceGetCount()):
                info = nv.nvmlDeviceGetPciInfo(nv.nvmlDeviceGetHandleByIndex(i))
                if (info.domain, info.bus, info.device) == want:
                    return i
    return cuda_index


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- sampling around a measurement -------------------------------------------------------------

class NvmlError(RuntimeError):
    """NVML refused what the user asked for (lock_clocks without the rights)."""


class _Device:
    """The NVML reads the sampler makes: a full state, and a quick sample of what moves."""

    def __init__(self, nv, index: int):
        self.nv = nv
        self.index = index
        self.handle = nv.nvmlDeviceGetHandleByIndex(index)
        self.bits = throttle_bits(nv)

    def state(self) -> dict:
        return {"taken": _now(), **read_device(self.nv, self.handle, self.index)}

    def sample(self) -> tuple:
        """(sm MHz, mem MHz, temperature C, power W, throttle mask); None for what is unreadable."""
        r = _Reads(self.nv, self.handle)
        return (r("sm", "nvmlDeviceGetClockInfo", self.nv.NVML_CLOCK_SM),
                r("mem", "nvmlDeviceGetClockInfo", self.nv.NVML_CLOCK_MEM),
                r("temperature", "nvmlDeviceGetTemperature", getattr(self.nv, "NVML_TEMPERATURE_GPU", 0)),
                _watts(r("power", "nvmlDeviceGetPowerUsage")), _throttle_mask(r))


def summarise(samples: list, before: dict, after: dict, bits: dict) -> dict:
    """The summary of a measurement from its samples ((t, sm, mem, temp, power, mask) rows) and
    the device states read before and after it. Pure: tested over plain values."""

    def column(i):
        return [s[i] for s in samples if isinstance(s[i], (int, float))]

    def span(values, *keys):
        return {k: (min(values) if k == "min" else max(values)) if values else None for k in keys}

    masks = column(5)
    seen = sorted({n for m in masks for n in decode_throttle(m, bits)})
    violation = {}
    for k in ("power", "thermal"):
        b, a = ((before.get("violation_ns") or {}).get(k), (after.get("violation_ns") or {}).get(k))
        violation[k] = a - b if isinstance(a, int) and isinstance(b, int) else None
    flagged = power_or_heat(seen)
    for k, delta in violation.items():
        if delta and f"violation_{k}" not in flagged:
            flagged.append(f"violation_{k}")
    return {
        "samples": len(samples),
        "duration_s": round(samples[-1][0] - samples[0][0], 6) if samples else 0.0,
        "sm_clock_mhz": span(column(1), "min", "max"),
        "mem_clock_mhz": span(column(2), "min", "max"),
        "temperature_c": span(column(3), "max"),
        "power_w": span(column(4), "max"),
        "throttle_reasons_seen": seen,
        "violation_ns": violation,
        # True when any sample saw a power or heat reason, or the driver's own power/thermal
        # violation counters moved across the measurement.
        "throttled": bool(flagged),
        "throttled_for": flagged,
    }


class Sampler:
    """Reads the GPU before a measurement, samples it from a thread every `interval_s` during
    it, reads it again after; the dict that `with` gives is filled in when the block ends.

    The thread spends its time in NVML calls, which release the GIL, so the measured code is
    not held up. A sample is also taken as the block starts and as it ends, so even a
    measurement shorter than the interval has two. `keep_samples` adds the raw rows (`trace`:
    t, sm MHz, mem MHz, temperature, power W, throttle mask).
    """

    def __init__(self, index: int = 0, interval_s: float = 0.02, *, keep_samples: bool = False, device=None):
        self.index = index
        self.interval_s = float(interval_s)
        self.keep_samples = keep_samples
        self.summary: dict = {}
        self._device = device  # a stand-in for NVML in tests; else opened on entry
        self._session: Any = None  # _session()'s context, entered here and left in __exit__
        self._samples: list = []
        self._failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._before: dict = {}

    def __enter__(self) -> dict:
        if self._device is None:
            self._session = _session()
            nv, why = self._session.__enter__()
            if nv is None:
                self.summary.update(available=False, reason=why)
                return self.summary
            try:
                self._device = _Device(nv, self.index)
            except nv.NVMLError as e:
                self.summary.update(available=False, reason=f"NVML has no device {self.index}: {e}")
                return self.summary
        self._before = self._device.state()
        self._t0 = time.perf_counter()
        self._take()
        self._thread = threading.Thread(target=self._loop, name="reprokit-nvml-sampler", daemon=True)
        self._thread.start()
        return self.summary

    def _take(self) -> None:
        # Each field NVML cannot read is already None (see _Reads): a sample never raises for it.
        self._samples.append((round(time.perf_counter() - self._t0, 6), *self._device.sample()))

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                self._take()
        except BaseException as e:  # noqa: BLE001 - handed to the measuring thread in __exit__
            self._failure = e

    def __exit__(self, *exc) -> None:
        try:
            if self._thread is None:
                return
            self._stop.set()
            self._thread.join()
            if self._failure is not None:
                raise self._failure
            self._take()
            after = self._device.state()
            bits = getattr(self._device, "bits", None) or throttle_bits()
            self.summary.update(available=True, index=self.index, interval_s=self.interval_s,
                                **summarise(self._samples, self._before, after, bits),
                                before=self._before, after=after)
            if self.keep_samples:
                self.summary["trace"] = [list(s) for s in self._samples]
        finally:
            if self._session is not None:
                self._session.__exit__(None, None, None)


@contextlib.contextmanager
def lock_clocks(index: int, mhz):
    """Lock the SM clock of GPU `index` at `mhz` (an integer, or "max" for its maximum) for the
    block, and reset it after. Only for a user who asked (--lock-clocks): it needs root or the
    admin's permission, and NvmlError says so when NVML refuses. The dict it gives is recorded.

    NVML is open only to set and to reset: the lock is the device's state, and the harness forks
    its cases in between, which must not inherit an open NVML session.
    """
    with _session() as (nv, why):
        if nv is None:
            raise NvmlError(f"cannot lock clocks: {why}")
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            target = nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_SM) if mhz == "max" else int(mhz)
            nv.nvmlDeviceSetGpuLockedClocks(handle, target, target)
        except nv.NVMLError as e:
            raise NvmlError(f"cannot lock GPU {index}'s SM clock at {mhz} MHz: {e} "
                            "(locking clocks needs root or the administrator's permission)") from None
    record = {"requested": mhz, "locked_mhz": target, "taken": _now(), "reset": False}
    try:
        yield record
    finally:
        with _session() as (nv, why):
            if nv is not None:
                nv.nvmlDeviceResetGpuLockedClocks(nv.nvmlDeviceGetHandleByIndex(index))
                record["reset"] = True
