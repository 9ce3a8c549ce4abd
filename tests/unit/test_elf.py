"""The stdlib ELF reader the harness uses for libtriton's strings and the SASS cache's cubin keys."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reprokit.harness import elf

DATA = Path(__file__).parent / "data"
# One kernel compiled twice by Triton 3.6.0 for sm_90: the bytes differ only in .debug_line.
RUN1 = (DATA / "block_ptr_p0-3.6-run1.cubin").read_bytes()
RUN2 = (DATA / "block_ptr_p0-3.6-run2.cubin").read_bytes()


def test_sections_of_a_real_cubin():
    names = {s.name for s in elf.sections(RUN1)}
    assert {b".text.copy_p0", b".debug_line", b".nv.info", b".symtab"} <= names
    text = next(s for s in elf.sections(RUN1) if s.name == b".text.copy_p0")
    assert text.kind == elf.SHT_PROGBITS and text.size > 0 and text.offset + text.size <= len(RUN1)


def test_two_compiles_differ_only_in_debug_line():
    assert RUN1 != RUN2
    a = {s.name: RUN1[s.offset:s.offset + s.size] for s in elf.sections(RUN1)}
    b = {s.name: RUN2[s.offset:s.offset + s.size] for s in elf.sections(RUN2)}
    assert [n for n in a if a[n] != b[n]] == [b".debug_line"]
    assert elf.digest_without(RUN1, (b".debug_line",)) == elf.digest_without(RUN2, (b".debug_line",))
    assert elf.digest_without(RUN1, ()) == hashlib.sha256(RUN1).hexdigest()


def test_a_changed_instruction_changes_the_digest():
    text = next(s for s in elf.sections(RUN1) if s.name == b".text.copy_p0")
    patched = bytearray(RUN1)
    patched[text.offset] ^= 0xFF
    assert elf.digest_without(bytes(patched), (b".debug_line",)) != elf.digest_without(RUN1, (b".debug_line",))


@pytest.mark.parametrize("data", [
    b"", b"not an elf at all" * 8,
    RUN1[:64],  # the header alone: its section table lies past the end
    RUN1[:len(RUN1) // 2],
    b"\x7fELF\x01\x01" + RUN1[6:],  # claims ELF32
    b"\x7fELF\x02\x02" + RUN1[6:],  # claims big-endian
], ids=["empty", "text", "header-only", "truncated", "elf32", "big-endian"])
def test_unreadable_files_have_no_sections_and_hash_whole(data):
    assert elf.sections(data) == []
    assert elf.digest_without(data, (b".debug_line",)) == hashlib.sha256(data).hexdigest()


def test_the_host_interpreter():
    import sys

    sections = elf.sections(Path(sys.executable).resolve().read_bytes())
    assert any(s.name == b".text" for s in sections)
