"""Which traced calls a GPU replay can launch again, read from the committed H100 trace bundles'
own TTIR: 3.0's experimental descriptors are host-filled bytes that no replay can rebuild."""

from __future__ import annotations

import tarfile
from pathlib import Path

from reprokit.harness.callgpu import host_filled_descriptors

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


def test_tensor_descriptor_cases_launch(tmp_path):
    cases = _cases(tmp_path, "h100-trace-triton-3.6.0.tgz")
    assert len(cases) == 3
    assert all(host_filled_descriptors(d) is None for d in cases.values())
    assert host_filled_descriptors(str(tmp_path / "no-such-case")) is None


def test_tensors_kept_by_older_traces_under_positional_names_bind_by_parameter():
    from reprokit.harness.callgpu import _by_name

    kept = {"arg0": "x-tensor", "arg2": "out-tensor", "n": "by-name", "arg9": "past the parameters"}
    assert _by_name(kept, ["x_ptr", "y_ptr", "out_ptr"]) == {
        "x_ptr": "x-tensor", "out_ptr": "out-tensor", "n": "by-name", "arg9": "past the parameters"}
