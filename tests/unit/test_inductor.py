"""The torch.compile case's parsing (reprokit.harness.kinds.inductor): TMA in Inductor's own GEMM
template sources (copied from torch 2.13.0's wheel), the kernels a wrapper defines and runs, the
kernels Triton compiled into a cache, and which one the verdict is about. Compiling needs a GPU
(tests/gpu/test_inductor_case.py); the settings read needs torch (skipped without it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reprokit.common import oracle
from reprokit.harness.kinds import inductor

DATA = Path(__file__).parent / "data"


def test_tma_in_inductors_own_template_sources():
    tma = inductor.tma_in_source((DATA / "inductor" / "triton_persistent_tma_mm.py.jinja").read_text())
    assert tma["make_tensor_descriptor"] == 2 and tma["_experimental_descriptor_load"] == 2
    assert tma["load_tensor_descriptor"] == 2
    assert inductor.tma_in_source((DATA / "inductor" / "triton_mm.py.jinja").read_text()) == {}


def test_the_wrapper_names_its_kernels_and_what_call_runs():
    code = (DATA / "inductor" / "output_code_extern.py").read_text()
    (k,) = inductor.wrapper_kernels(code)
    assert k["name"] == "triton_poi_fused_add_relu_0" and k["path"].endswith("/cq7x2n5vrbwq3x4p6ltvyzt3iyv5yk2m6bbm6hkxbyq6pdlhw3ky.py")
    assert k["source"].startswith("import triton\n") and "tl.store(in_out_ptr0" in k["source"]
    assert inductor.chosen(code) == ["extern_kernels.mm", "triton_poi_fused_add_relu_0"]
    # A template chosen instead of cuBLAS: its .run( in call() names it.
    templ = code.replace("extern_kernels.mm(arg0_1, arg1_1, out=buf0)", "triton_tem_fused_mm_1.run(arg0_1, arg1_1, buf0)")
    templ = templ.replace("\n\nasync_compile.wait", "\ntriton_tem_fused_mm_1 = async_compile.triton('triton_tem_fused_mm_1', "
                          "'''\nimport triton\n''', device_str='cuda')\n\nasync_compile.wait")
    assert inductor.chosen(templ) == ["triton_tem_fused_mm_1", "triton_poi_fused_add_relu_0"]


def test_torch_2_11s_wrapper_runs_its_kernels_from_partitions():
    """Real output code of torch 2.11's Inductor on the lab H100 (max-autotune, 4096^3 fp16):
    cuBLAS won, called from partition_0, which `call` reaches through a Runner."""
    code = (DATA / "inductor" / "output_code_h100_torch2.11.py").read_text()
    assert "def partition_0(" in code and inductor.wrapper_kernels(code) == []
    assert inductor.chosen(code) == ["extern_kernels.mm"]


def test_the_autotune_table_as_inductor_prints_it():
    log = """E1123 noise before
Autotune Choices Stats:
{"num_choices": 28}
AUTOTUNE mm(4096x4096, 4096x4096)
strides: [4096, 1], [4096, 1]
dtypes: torch.float16, torch.float16
  mm 0.1774 ms 100.0% 
  triton_mm_persistent_tma_26 0.1973 ms 89.9% ACC_TYPE='tl.float32', BLOCK_M=256, BLOCK_N=128, num_stages=4, num_warps=8
  triton_mm_17 0.2094 ms 84.7% ACC_TYPE='tl.float32', BLOCK_K=64, num_stages=3, num_warps=4
SingleProcess AUTOTUNE benchmarking takes 1.8590 seconds and 1.7571 seconds precompiling for 28 choices
  unrelated 1.0 ms 5.0% after the table
"""
    rows = inductor.autotune_table(log)
    assert [r["choice"] for r in rows] == ["mm", "triton_mm_persistent_tma_26", "triton_mm_17"]
    assert rows[0] == {"choice": "mm", "ms": 0.1774, "percent": 100.0, "config": ""}
    assert rows[1]["percent"] == 89.9 and "BLOCK_M=256" in rows[1]["config"]
    assert inductor.autotune_table("no table here") == []


def _cache(root: Path, key: str, name: str, source: str, ttgir: str) -> None:
    d = root / key
    d.mkdir(parents=True)
    (d / f"{name}.ttir").write_text(f'module {{\n}}\n#loc = loc("{source}":12:0)\n')
    (d / f"{name}.ttgir").write_text(ttgir)
    (d / f"{name}.cubin").write_bytes(b"\x7fELF")
    (d / f"__grp__{name}.json").write_text("{}")


def test_compiled_kernels_and_the_one_judged(tmp_path):
    tma_ttgir = (DATA / "tensor_descriptor_p0-3.6.ttgir").read_text()
    _cache(tmp_path, "B2", "triton_tem_fused_mm_0", "/tmp/ind/ab/cab.py", tma_ttgir)
    _cache(tmp_path, "A1", "triton_mm", "/tmp/ind/cd/ccd.py", "module {\n  tt.return\n}\n")
    (tmp_path / "C3").mkdir()  # a kernel whose compile failed: no cubin, not listed
    # Inductor with its caches off compiles into a fresh cache inside its own cache dir.
    _cache(tmp_path / "inductor" / "tmpdm4ruaal" / "triton", "D4", "triton_mm_18", "/tmp/ind/ef/cef.py", tma_ttgir)
    kernels = inductor.compiled_kernels(str(tmp_path), str(tmp_path / "inductor"))
    assert [(k["key"], k["name"], k["source_path"]) for k in kernels] == [
        ("A1", "triton_mm", "/tmp/ind/cd/ccd.py"), ("B2", "triton_tem_fused_mm_0", "/tmp/ind/ab/cab.py"),
        ("D4", "triton_mm_18", "/tmp/ind/ef/cef.py")]  # each once, though both roots reach it
    kernels = kernels[:2]
    assert set(kernels[1]["files"]) == {"ttir", "ttgir", "cubin"}
    judged = [{"key": k["key"], "chosen": False, "tma": oracle.scan_all({"ttgir": Path(k["files"]["ttgir"]).read_text()})[0]}
              for k in kernels]
    assert judged[1]["tma"]["ttgir"] > 0 and judged[0]["tma"]["ttgir"] == 0
    k, why = inductor.pick_judged(judged)
    assert k["key"] == "B2" and "shows TMA" in why  # cuBLAS chosen: the candidate with TMA is judged
    judged[0]["chosen"] = True
    k, why = inductor.pick_judged(judged)
    assert k["key"] == "A1" and why == "the Triton kernel Inductor chose"
    assert inductor.pick_judged([]) == (None, "Inductor compiled no Triton kernel")
    assert inductor.compiled_kernels(str(tmp_path / "none")) == []


def test_settings_name_the_tma_knobs():
    torch = pytest.importorskip("torch", reason="Inductor's settings are read from torch itself")
    from torch._inductor import list_mode_options

    s = inductor.settings(torch, {**list_mode_options("max-autotune"), "triton.enable_persistent_tma_matmul": True})
    assert s["max_autotune"] is True and s["triton.enable_persistent_tma_matmul"] is True
    assert "online_softmax" not in s  # "tma" inside a word is not a TMA knob
    default = inductor.settings(torch, list_mode_options("max-autotune"))
    assert default["triton.enable_persistent_tma_matmul"] is False  # off unless asked for
