"""The sizes a bundle may reach: one set, read by the bundle reader (verify, show, replay) and by
the trace recorder, so that what `trace` writes is always something reprokit can read back.

Standard library only: the recorder loads it inside the traced program, whose environment holds
the same REPROKIT_MAX_* a reader on this host would use.
"""

from __future__ import annotations

import re

# What a reader accepts by default (REPROKIT_MAX_* and --max-bytes may raise or lower it there).
MAX_BUNDLE_BYTES = 2 << 30      # all members together, uncompressed
MAX_MEMBER_BYTES = 512 << 20    # one member, uncompressed
MAX_MEMBERS = 100_000

# A kept-tensors file is one member holding a zip of a pickle and the tensors' storages: room for
# the zip's headers and the pickle beside the data.
TENSOR_FILE_SLACK = 1 << 20
# Room in a bundle for what is not a kept tensor (IR, SASS, cubins, logs, the documents).
BUNDLE_SLACK = 256 << 20

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
# --tensors small: at most 1 MiB a tensor, 16 MiB a launch, 256 MiB a trace.
_SMALL = (1 << 20, 16 << 20, 256 << 20)


def parse_size(text: str) -> int:
    """Bytes from '1048576', '512M', '2G', '2GiB' (powers of 1024); ValueError otherwise."""
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size (examples: 1048576, 512M, 2G)")
    return int(m.group(1)) << (10 * " kmgt".index(m.group(2).lower() or " "))


def reader_limits(environ) -> tuple[int, int]:
    """(bytes a member, bytes a bundle) a reader accepts under `environ`'s REPROKIT_MAX_MEMBER_BYTES
    and REPROKIT_MAX_BUNDLE_BYTES (the defaults where unset or unreadable: the reader says why)."""
    out = []
    for var, default in (("REPROKIT_MAX_MEMBER_BYTES", MAX_MEMBER_BYTES), ("REPROKIT_MAX_BUNDLE_BYTES", MAX_BUNDLE_BYTES)):
        try:
            value = parse_size(environ.get(var, "").strip() or str(default))
        except ValueError:
            value = default
        out.append(value if value > 0 else default)
    return out[0], out[1]


def tensor_caps(mode: str, environ) -> tuple[int, int, int]:
    """(bytes one tensor may have, bytes one launch's file may hold, bytes all kept tensors of a
    trace may hold) for --tensors `mode`: never more than a reader with the same environment
    reads back, room left for the file's own headers and for the rest of the bundle."""
    member, bundle = reader_limits(environ)
    file_cap = member - min(TENSOR_FILE_SLACK, member // 8)
    whole = bundle - min(BUNDLE_SLACK, bundle // 2)
    caps = (file_cap, file_cap, whole)
    return caps if mode == "all" else (min(caps[0], _SMALL[0]), min(caps[1], _SMALL[1]), min(caps[2], _SMALL[2]))


def mib(n: int) -> str:
    """A size as messages print it."""
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"
