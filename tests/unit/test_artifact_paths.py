"""Artifact paths in results.json: inside the case's folder, subfolders allowed (the torch.compile
cases keep each Inductor kernel in its own), never a '.' or '..' segment."""

from __future__ import annotations

import pytest

from reprokit.bundle.schemas import problems


def _results(path: str) -> dict:
    case = {"id": "inductor.max-autotune", "family": "inductor", "control": "gemm", "status": "ok",
            "artifacts": {"x": path}, "verdict": "tma", "expect": "tma", "met": True, "reason": "r"}
    return {"format": 1, "harness": "0.1.0", "triton": "3.6.0", "target": {"backend": "cuda", "arch": 90},
            "started": "2026-11-23T12:00:00Z", "finished": "2026-11-23T12:01:00Z", "wall_s": 1.0,
            "workers": 1, "mode": "gpu", "cases": [case]}


@pytest.mark.parametrize("path", ["cases/inductor.max-autotune/kernel.ttgir",
                                  "cases/inductor.max-autotune/inductor/output_code.py",
                                  "cases/inductor.max-autotune/inductor/00-triton_tem_fused_mm_0/kernel.sass"])
def test_paths_inside_the_case_folder_pass(path):
    assert problems("results.json", _results(path)) == []


@pytest.mark.parametrize("path", ["cases/inductor.max-autotune/../x/kernel.ttgir", "cases/a/./kernel.ttgir",
                                  "cases/a/b/../../../etc/passwd", "cases/a/..", "cases/a/", "cases/a//b",
                                  "cases/a/b\\c", "kernels/x.py"])
def test_paths_that_leave_or_blur_the_case_folder_fail(path):
    assert problems("results.json", _results(path))
