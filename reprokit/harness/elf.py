"""Reading the section table of a little-endian ELF64 (libtriton.so, cubins) with the stdlib only."""

from __future__ import annotations

import hashlib
import struct
from typing import NamedTuple

SHT_PROGBITS = 1
SHT_NOBITS = 8


class Section(NamedTuple):
    name: bytes
    kind: int
    offset: int
    size: int


def sections(data) -> list:
    """The sections of `data` (bytes or mmap), or [] when it is not an ELF64 LE we can read whole."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize < 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
        return []
    raw = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    str_off, str_size = raw[shstrndx][4], raw[shstrndx][5]
    if str_off + str_size > len(data):
        return []
    out = []
    for name_at, kind, _flags, _addr, offset, size in raw:
        end = data.find(b"\0", str_off + name_at, str_off + str_size)
        name = bytes(data[str_off + name_at:end]) if name_at < str_size and end >= 0 else b""
        if kind != SHT_NOBITS and offset + size > len(data):
            return []
        out.append(Section(name, kind, offset, size))
    return out


def digest_without(data: bytes, names: tuple) -> str:
    """sha256 of `data` with the bytes of the sections called `names` left out (their sizes kept);
    of all of `data` when it is not an ELF we can read."""
    h = hashlib.sha256()
    at = 0
    for s in sorted((s for s in sections(data) if s.name in names and s.kind != SHT_NOBITS), key=lambda s: s.offset):
        if s.offset < at:  # overlapping sections: not a layout any linker writes; hash it all
            return hashlib.sha256(data).hexdigest()
        h.update(data[at:s.offset])
        h.update(b"<%s %d>" % (s.name, s.size))
        at = s.offset + s.size
    h.update(data[at:])
    return h.hexdigest()
