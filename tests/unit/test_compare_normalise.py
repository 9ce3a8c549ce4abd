"""IR normalisation: what it removes (locations, paths, hashes, SSA names, addresses, dialect
spelling) and what it must keep (every real op)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reprokit.compare.normalise import ir_hash, normalise, ops

DATA = Path(__file__).resolve().parent / "data"


def test_mlir_locations_and_dialect_spelling_are_gone_but_every_op_stays():
    raw = (DATA / "experimental_descriptor_p0-3.0.ttgir").read_text()
    n = normalise("ttgir", raw)
    assert "loc(" not in n and "#loc" not in n and "triton_gpu." not in n and "triton_nvidia_gpu." not in n
    assert "ttng.async_tma_copy_global_to_local" in n
    counted = ops("ttgir", n)
    assert counted["ttng.async_tma_copy_global_to_local"] == 1 and counted["ttng.async_tma_copy_local_to_global"] == 1
    kept = [ln for ln in raw.splitlines() if ln.strip() and not ln.startswith("#loc")]
    assert len(n.splitlines()) == len(kept)   # nothing but locations dropped


def test_ssa_names_given_by_a_release_do_not_count_as_a_change():
    old = '''tt.func public @k(%arg0: !tt.ptr<f16> loc("a.py":1:0)) {
    %0 = tt.get_program_id x : i32 loc(#loc1)
    %c128_i32 = arith.constant 128 : i32 loc(#loc1)
    %1 = arith.muli %0, %c128_i32 : i32 loc(callsite(#loc2 at #loc3))
  } loc(#loc)
#loc1 = loc("a.py":2:4)
'''
    new = '''tt.func public @k(%src: !tt.ptr<f16> loc("src"(#loc))) {
    %pid = tt.get_program_id x : i32 loc(#loc1)
    %c128_i32_0 = arith.constant 128 : i32 loc(#loc2)
    %pm = arith.muli %pid, %c128_i32_0 : i32 loc(fused[#loc4, "x"(#loc5)])
  } loc(#loc)
#loc4 = loc("pm"(#loc2))
'''
    assert normalise("ttir", old) == normalise("ttir", new)
    changed = new.replace("arith.muli", "arith.addi")
    assert ir_hash("ttir", changed) != ir_hash("ttir", old)
    delta = ops("ttir", normalise("ttir", changed)) - ops("ttir", normalise("ttir", old))
    assert dict(delta) == {"arith.addi": 1}


def test_local_alloc_is_not_mistaken_for_a_location():
    n = normalise("ttgir", "    %4 = ttg.local_alloc  : () -> !tt.memdesc<1xi64> loc(#loc6)\n")
    assert re.fullmatch(r"    %v[0-9a-f]{6} = ttg.local_alloc  : \(\) -> !tt.memdesc<1xi64>\n", n)


def test_an_op_removed_renames_only_what_depends_on_it():
    old = """  tt.func @k(%arg0: i64) {
    %0 = arith.muli %arg0, %arg0 : i64
    %1 = arith.muli %arg0, %arg0 : i64
    %2 = arith.addi %0, %1 : i64
    %3 = arith.subi %arg0, %arg0 : i64
    %4:2 = scf.if %true -> (i64, i64) {
    tt.return %3, %4#1 : i64, i64
"""
    new = old.replace("    %1 = arith.muli %arg0, %arg0 : i64\n", "").replace("%0, %1", "%0, %0") \
        .replace("%2", "%1").replace("%3", "%2").replace("%4", "%3")
    a, b = normalise("ttgir", old).splitlines(), normalise("ttgir", new).splitlines()
    import difflib
    changed = [ln for ln in difflib.ndiff(a, b) if ln[:1] in "+-"]
    # the CSE'd muli, and the addi that used it: nothing after them moves
    assert len(changed) == 3 and sum(ln.startswith("-") for ln in changed) == 2
    assert a[-1] == b[-1] and "%v" in a[-1] and "#1" in a[-1]


def test_ptx_debug_info_is_gone_and_tma_ops_stay():
    raw = (DATA / "tensor_descriptor_p0-3.6.ptx").read_text()
    n = normalise("ptx", raw)
    assert ".loc" not in n and ".file" not in n and ".debug_" not in n and "$L__tmp" not in n
    assert ".b8 " not in n  # DWARF bytes
    counted = ops("ptx", n)
    assert any(op.startswith("cp.async.bulk.tensor") for op in counted)
    full = ".version 8.4\n.target sm_90a\n\t.section\t.debug_abbrev\n\t{\n.b8 1\n\t}\n\t.section\t.debug_loc\t{\t}\n"
    assert normalise("ptx", full) == ".version 8.4\n.target sm_90a\n"   # the PTX ISA version is a real fact


def test_sass_addresses_and_encodings_are_gone():
    raw = (DATA / "tensor_descriptor_p0-3.6.sass").read_text()
    n = normalise("sass", raw)
    assert "/*" not in n and "0x0000000004" not in n
    shifted = raw.replace("/*0640*/", "/*0650*/")
    assert ir_hash("sass", shifted) == ir_hash("sass", raw)
    assert ops("sass", n)["UTMACCTL.IV"] == 2


def test_llir_debug_metadata_and_temp_paths_are_gone():
    a = '''; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"
define void @k(ptr addrspace(1) %0) local_unnamed_addr !dbg !7 {
  %3 = tail call i32 asm "mov.u32 $0, %ctaid.x;", "=r"() #3, !dbg !10
  tail call void asm sideeffect "@$0 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$4];", "b"(i1 true) #3, !dbg !11
  ret void, !dbg !12
}
attributes #3 = { nounwind }
!0 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !DIFile(filename: "copy.py", directory: "/tmp/tmpab12cd/kernels")
!4 = !{ptr @k, !"kernel", i32 1}
'''
    b = a.replace("#3", "#0").replace("!dbg !1", "!dbg !2").replace("tmpab12cd", "tmpzz99") \
        .replace("!4 = ", "!9 = ")
    assert normalise("llir", a) == normalise("llir", b)
    n = normalise("llir", a)
    assert "!dbg" not in n and "DIFile" not in n and "ModuleID" not in n
    counted = ops("llir", n)
    assert counted["asm cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"] == 1
    assert counted["asm mov.u32"] == 1 and counted["ret"] == 1


@pytest.mark.parametrize("text", ["/tmp/tmp1x2y3z/a.ptx", "cache/" + "a" * 64 + "/k.json",
                                  "cache/" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST" + "/x"])
def test_temp_paths_and_cache_hashes_are_neutral(text):
    line = f'    %0 = tt.call "{text}"\n'
    other = line.replace("tmp1x2y3z", "tmpq").replace("a" * 64, "b" * 64).replace("ABCDEFGH", "HGFEDCBA")
    assert normalise("ttir", line) == normalise("ttir", other)


def test_unknown_level_is_a_value_error():
    with pytest.raises(ValueError, match="unknown IR level"):
        normalise("cubin", "")
