"""NVML decoding and the sampler (reprokit.harness.nvml): names come from nvidia-ml-py's real
constants; the GPU itself, which this machine lacks, is a stand-in that answers like the lab
H100 did (idle 345 MHz and 70 W, after a benchmark 1980 MHz, 278 W, reasons 0x4)."""

from __future__ import annotations

import time
import types

import pynvml
import pytest

from reprokit.harness import nvml

H100 = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-8f3e2d1c-aaaa-bbbb-cccc-0123456789ab",
        "serial": "1652823049871", "total": 85520809984}


def fake_pynvml(state: dict, *, permission: bool = True, calls: list | None = None):
    """A pynvml module whose constants and error classes are the real ones and whose one device
    answers from `state` (keys: sm, mem, temp, power_mw, mask, viol_power, viol_thermal)."""
    nv = types.ModuleType("pynvml")
    for k in dir(pynvml):
        v = getattr(pynvml, k)
        if k.startswith(("NVML_", "nvmlClocks")) and isinstance(v, int) or isinstance(v, type) and issubclass(
                v, pynvml.NVMLError):
            setattr(nv, k, v)
    calls = calls if calls is not None else []

    def err(code):
        return pynvml.NVMLError(code)

    def not_supported(*_):
        raise err(pynvml.NVML_ERROR_NOT_SUPPORTED)

    clocks = {pynvml.NVML_CLOCK_SM: "sm", pynvml.NVML_CLOCK_MEM: "mem", pynvml.NVML_CLOCK_GRAPHICS: "sm"}
    maxima = {pynvml.NVML_CLOCK_SM: 1980, pynvml.NVML_CLOCK_MEM: 2619, pynvml.NVML_CLOCK_GRAPHICS: 1980}

    def locked(h, lo, hi):
        if not permission:
            raise err(pynvml.NVML_ERROR_NO_PERMISSION)
        calls.append(("lock", lo, hi))

    fns = dict(
        nvmlInit=lambda: calls.append("init"), nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: ("h", i),
        nvmlSystemGetDriverVersion=lambda: "580.159.04", nvmlSystemGetCudaDriverVersion=lambda: 13000,
        nvmlSystemGetNVMLVersion=lambda: "13.580.159.04",
        nvmlDeviceGetName=lambda h: H100["name"].encode(), nvmlDeviceGetUUID=lambda h: H100["uuid"],
        nvmlDeviceGetSerial=lambda h: H100["serial"],
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=b"00000000:18:00.0", domain=0, bus=0x18, device=0),
        nvmlDeviceGetCudaComputeCapability=lambda h: (9, 0),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=H100["total"], used=1 << 20),
        nvmlDeviceGetEccMode=lambda h: [1, 1], nvmlDeviceGetPersistenceMode=lambda h: 1,
        nvmlDeviceGetComputeMode=lambda h: pynvml.NVML_COMPUTEMODE_DEFAULT, nvmlDeviceGetMigMode=lambda h: [0, 0],
        nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 5, nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16, nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16,
        nvmlDeviceGetClockInfo=lambda h, c: state[clocks[c]], nvmlDeviceGetMaxClockInfo=lambda h, c: maxima[c],
        nvmlDeviceGetPerformanceState=lambda h: 0,
        nvmlDeviceGetTemperature=lambda h, s: state["temp"], nvmlDeviceGetPowerUsage=lambda h: state["power_mw"],
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700000,
        nvmlDeviceGetPowerManagementDefaultLimit=not_supported,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: state["mask"],
        nvmlDeviceGetViolationStatus=lambda h, p: types.SimpleNamespace(
            referenceTime=0, violationTime=state["viol_power" if p == pynvml.NVML_PERF_POLICY_POWER else "viol_thermal"]),
        nvmlDeviceSetGpuLockedClocks=locked, nvmlDeviceResetGpuLockedClocks=lambda h: calls.append("reset"),
    )
    for k, f in fns.items():
        setattr(nv, k, f)
    return nv


IDLE = {"sm": 345, "mem": 2619, "temp": 31, "power_mw": 70193, "mask": 0x1, "viol_power": 5_000, "viol_thermal": 0}


@pytest.fixture
def gpu(monkeypatch):
    state = dict(IDLE)
    calls = []
    monkeypatch.setattr(nvml, "_pynvml", lambda: fake_pynvml(state, calls=calls))
    return state, calls


def test_throttle_reasons_are_named_by_pynvml_constants():
    bits = nvml.throttle_bits()
    assert bits[pynvml.nvmlClocksThrottleReasonSwPowerCap] == "sw_power_cap"
    assert bits[pynvml.nvmlClocksThrottleReasonHwThermalSlowdown] == "hw_thermal_slowdown"
    assert bits[pynvml.nvmlClocksThrottleReasonGpuIdle] == "gpu_idle"
    assert nvml.decode_throttle(0x4) == ["sw_power_cap"]  # the lab H100 after a benchmark
    assert nvml.decode_throttle(0x1 | 0x40 | (1 << 30)) == ["gpu_idle", "hw_thermal_slowdown", "unknown_0x40000000"]
    assert nvml.decode_throttle(0) == [] and nvml.decode_throttle(None) == []
    assert nvml.power_or_heat(["gpu_idle", "sw_power_cap", "hw_slowdown", "sync_boost"]) == ["hw_slowdown", "sw_power_cap"]


def test_plain_values_decode():
    assert nvml.decode_cuda_driver(13000) == "13.0" and nvml.decode_cuda_driver(12040) == "12.4"
    assert nvml.decode_cuda_driver(None) is None and nvml.decode_cuda_driver(0) is None
    assert nvml.decode_compute_mode(pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) == "exclusive_process"
    assert nvml.decode_compute_mode(pynvml.NVML_COMPUTEMODE_DEFAULT) == "default"
    assert nvml.decode_pair([1, 0]) == {"current": True, "pending": False} and nvml.decode_pair(None) is None


def test_without_a_driver_every_entry_point_says_why():
    # This machine has nvidia-ml-py but no NVIDIA driver: the real library answers.
    for doc in (nvml.snapshot(0), nvml.snapshot_all()):
        assert doc["available"] is False and "NVML" in doc["reason"]
    with nvml.Sampler(0, 0.001) as summary:
        pass
    assert summary == {"available": False, "reason": nvml.snapshot(0)["reason"]}
    with pytest.raises(nvml.NvmlError, match="cannot lock clocks"):
        with nvml.lock_clocks(0, 1500):
            pass


def test_snapshot_decodes_every_fact(gpu):
    snap = nvml.snapshot(0)
    assert snap["available"] and snap["driver"] == "580.159.04" and snap["cuda_driver_version"] == "13.0"
    assert snap["name"] == H100["name"] and snap["uuid"] == H100["uuid"] and snap["serial"] == H100["serial"]
    assert snap["capability"] == 90 and snap["memory_total"] == H100["total"]
    assert snap["ecc_mode"] == {"current": True, "pending": True} and snap["mig_mode"]["current"] is False
    assert snap["persistence_mode"] is True and snap["compute_mode"] == "default" and snap["pstate"] == "P0"
    assert snap["pcie"] == {"gen": 5, "gen_max": 5, "width": 16, "width_max": 16}
    assert snap["clocks_mhz"]["sm"] == 345 and snap["clocks_mhz"]["sm_max"] == 1980
    assert snap["power_w"] == 70.193 and snap["power_limit_w"] == 700.0 and snap["temperature_c"] == 31
    assert snap["throttle_reasons"] == {"mask": 1, "names": ["gpu_idle"], "power_or_heat": []}
    # What this GPU cannot tell is None, and says why.
    assert snap["power_default_limit_w"] is None and "Not Supported" in snap["unreadable"]["power_default_limit_w"]
    doc = nvml.snapshot_all()
    assert doc["devices"][0]["uuid"] == H100["uuid"] and doc["cuda_driver"] == 13000


def test_summarise_flags_power_and_heat_only():
    idle = {"violation_ns": {"power": 100, "thermal": 0}}
    rows = [(0.0, 1980, 2619, 40, 250.0, 0x0), (0.01, 1755, 2619, 52, 690.5, 0x4), (0.02, 1980, 2619, 49, 400.0, 0x10)]
    s = nvml.summarise(rows, idle, {"violation_ns": {"power": 100, "thermal": 0}}, nvml.throttle_bits())
    assert s["sm_clock_mhz"] == {"min": 1755, "max": 1980} and s["temperature_c"] == {"max": 52}
    assert s["power_w"] == {"max": 690.5} and s["samples"] == 3 and s["duration_s"] == 0.02
    assert s["throttle_reasons_seen"] == ["sw_power_cap", "sync_boost"]
    assert s["throttled"] is True and s["throttled_for"] == ["sw_power_cap"]
    calm = nvml.summarise([(0.0, 1980, 2619, 40, 250.0, 0x0), (0.5, 1980, 2619, 41, 260.0, 0x1)],
                          idle, idle, nvml.throttle_bits())
    assert calm["throttled"] is False and calm["throttle_reasons_seen"] == ["gpu_idle"]
    # The driver's violation counter moved although no sample caught a reason: flagged.
    hot = nvml.summarise(rows[:1], idle, {"violation_ns": {"power": 100, "thermal": 7_000}}, nvml.throttle_bits())
    assert hot["throttled"] is True and hot["throttled_for"] == ["violation_thermal"]
    assert hot["violation_ns"] == {"power": 0, "thermal": 7000}
    assert nvml.summarise([], {}, {}, {})["sm_clock_mhz"] == {"min": None, "max": None}


def test_sampler_reads_before_during_and_after(gpu):
    state, calls = gpu
    with nvml.Sampler(0, 0.002, keep_samples=True) as summary:
        assert summary == {}  # filled in when the block ends
        state.update(sm=1980, temp=47, power_mw=278000, mask=0x4, viol_power=9_000)
        time.sleep(0.08)
        state.update(sm=1755, temp=52, power_mw=600000, mask=0x0)
        time.sleep(0.08)
    assert summary["available"] and summary["samples"] >= 10 and len(summary["trace"]) == summary["samples"]
    assert summary["before"]["clocks_mhz"]["sm"] == 345 and summary["after"]["clocks_mhz"]["sm"] == 1755
    assert summary["sm_clock_mhz"] == {"min": 345, "max": 1980}  # the first sample is taken as it starts
    assert summary["temperature_c"]["max"] == 52 and summary["power_w"]["max"] == 600.0
    assert "sw_power_cap" in summary["throttle_reasons_seen"] and summary["throttled"] is True
    assert summary["violation_ns"]["power"] == 4000
    assert calls.count("init") == calls.count("shutdown") == 1


def test_sampler_gives_a_failure_of_its_thread_back():
    class Broken:
        bits = {}

        def __init__(self):
            self.n = 0

        def state(self):
            return {}

        def sample(self):
            self.n += 1
            if self.n > 1:
                raise KeyError("a bug in a read")
            return (1980, 2619, 40, 250.0, 0)

    with pytest.raises(KeyError, match="a bug in a read"):
        with nvml.Sampler(0, 0.001, device=Broken()):
            time.sleep(0.05)


def test_lock_clocks_sets_and_resets_and_needs_the_rights(gpu, monkeypatch):
    state, calls = gpu
    with nvml.lock_clocks(0, "max") as rec:
        # Locked, and NVML closed again while the run forks its cases.
        assert calls[-3:] == ["init", ("lock", 1980, 1980), "shutdown"]
        assert rec["locked_mhz"] == 1980 and rec["reset"] is False
    assert calls[-3:] == ["init", "reset", "shutdown"] and rec["reset"] is True
    monkeypatch.setattr(nvml, "_pynvml", lambda: fake_pynvml(state, permission=False))
    with pytest.raises(nvml.NvmlError, match="Insufficient Permissions.*root"):
        with nvml.lock_clocks(0, 1500):
            pass


def test_share_mode_scrubs_the_gpu_identity_nvml_reports(gpu):
    """UUID and serial as snapshot_all puts them in env.json, and as the sampler's before/after
    snapshots put them in results.json (even where env.json has no GPU), leave under --share."""
    from reprokit.bundle.redact import HostFacts, Scrubber

    env_doc = {"gpu": nvml.snapshot_all()}
    with nvml.Sampler(0, 0.001) as summary:
        time.sleep(0.005)
    results = {"cases": [{"id": "block_ptr.p0", "benchmark": {"nvml": summary}}]}
    for env, also in ((env_doc, ()), ({"gpu": None}, (results,))):
        facts = HostFacts.gather(env, {}, also)
        assert facts.gpu_serials == {H100["serial"]} and facts.gpu_uuids == {H100["uuid"]}
        scrubbed, outcome = Scrubber.for_capture(env, share=True, environ={}, also=also).scrub_json(results)
        text = repr(scrubbed)
        assert H100["serial"] not in text and H100["uuid"] not in text and "<gpu-serial>" in text
        assert outcome.classes == {"gpu-uuid", "gpu-serial"}
