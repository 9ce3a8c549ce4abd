"""Which traced calls a GPU replay can launch again, read from the committed H100 trace bundles'
own TTIR: 3.0's experimental descriptors are host-filled bytes that a replay can fill again only
where the trace recorded every fill (`trace.tma_fills`); older bundles stay not launched."""

from __future__ import annotations

import tarfile
from pathlib import Path

from reprokit.harness.kinds.callgpu import host_filled_descriptors

EXAMPLES = Path(__file__).resolve().parents[2] / "bundles" / "examples"


def _cases(tmp_path: Path, name: str) -> dict:
    with tarfile.open(EXAMPLES / name) as tar:
        tar.extractall(tmp_path, filter="data")
    (root,) = tmp_path.iterdir()
    return {p.name: str(p) for p in (root / "cases").iterdir()}


def test_experimental_descriptor_cases_are_not_launched_again(tmp_path):
    cases = _cases(tmp_path, "h100-trace-triton-3.0.0.tgz")
    assert sorted(cases) == ["matmul_kernel_tma_persistent.1", "tma_copy.1"]
    for case_dir in cases.values():
        why = host_filled_descriptors(case_dir)
        assert why and "host-filled" in why and "\n" not in why


def _plan_case(tmp_path: Path, name: str, case_id: str) -> dict:
    import json

    (root,) = tmp_path.iterdir()
    return next(c for c in json.loads((root / "plan.json").read_text())["cases"] if c["id"] == case_id)


def test_recorded_fills_make_experimental_descriptor_cases_launchable(tmp_path):
    cases = _cases(tmp_path, "h100-trace-triton-3.0.0.tgz")
    case = _plan_case(tmp_path, "h100-trace-triton-3.0.0.tgz", "tma_copy.1")
    assert "tma_fills" not in case["trace"]  # an older bundle: no fill records, the reason stays
    assert "host-filled" in host_filled_descriptors(cases["tma_copy.1"], case)
    fill = {"api": "driver.active.utils.fill_2d_tma_descriptor", "rank": 2, "dims": [4096, 4096],
            "block": [128, 128], "element_size": 2, "offset": 0, "base_found": True,
            "base": {"tensor": [4096, 4096], "dtype": "float16", "strides": [4096, 1], "align": 16}}
    case["trace"]["tma_fills"] = {"in_desc_ptr": fill}
    why = host_filled_descriptors(cases["tma_copy.1"], case)
    assert why.startswith("no recorded fill for the host-filled TMA descriptor argument(s) out_desc_ptr ")
    case["trace"]["tma_fills"]["out_desc_ptr"] = fill
    assert host_filled_descriptors(cases["tma_copy.1"], case) is None


def test_tensor_descriptor_cases_launch(tmp_path):
    cases = _cases(tmp_path, "h100-trace-triton-3.6.0.tgz")
    assert len(cases) == 3
    assert all(host_filled_descriptors(d) is None for d in cases.values())
    assert host_filled_descriptors(str(tmp_path / "no-such-case")) is None


def test_tensors_kept_by_older_traces_under_positional_names_bind_by_parameter():
    from reprokit.harness.kinds.callgpu import _by_name

    kept = {"arg0": "x-tensor", "arg2": "out-tensor", "n": "by-name", "arg9": "past the parameters"}
    assert _by_name(kept, ["x_ptr", "y_ptr", "out_ptr"]) == {
        "x_ptr": "x-tensor", "out_ptr": "out-tensor", "n": "by-name", "arg9": "past the parameters"}
