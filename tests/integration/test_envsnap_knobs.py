"""Unread-knob detection searches only libtriton's .rodata, and finds what a whole-file search finds."""

from __future__ import annotations

import json
import subprocess

import pytest

from reprokit.executors import harness_env
from tests.helpers.runs import host

pytestmark = pytest.mark.triton

SCRIPT = """
import json, mmap, os, triton
from reprokit.harness import envsnap
names = {"TRITON_TMA_ENABLE", "MLIR_ENABLE_DUMP", "TRITON_LLVM_DEBUG_ONLY", "LLVM_IR_ENABLE_DUMP",
         "MLIR_ENABLE_TIMING", "TRITON_NOT_A_KNOB_AT_ALL"}
lib = os.path.join(os.path.dirname(triton.__file__), "_C", "libtriton.so")
with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
    whole = sorted(n for n in names if m.find(n.encode() + b"\\0") >= 0)
    spans = envsnap._rodata_spans(m)
    size = len(m)
print(json.dumps({"rodata": sorted(envsnap._read_by_library(names)), "whole": whole,
                  "searched": sum(e - s for s, e in spans), "size": size}))
"""


@pytest.mark.parametrize("name", ["triton-3.0-cu129", "triton-3.6-cu130"])
def test_rodata_search_equals_whole_file_search(name, stack_ready, venv_executor):
    python = venv_executor.prepare(stack_ready(name))["python"]
    p = subprocess.run([python, "-c", SCRIPT], capture_output=True, text=True, env=harness_env(host()))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["rodata"] == r["whole"]
    assert "MLIR_ENABLE_DUMP" in r["rodata"] and "TRITON_TMA_ENABLE" not in r["rodata"]
    assert 0 < r["searched"] < r["size"] / 4  # a tenth or so of a 400 MB library
