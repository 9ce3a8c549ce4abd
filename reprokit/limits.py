"""The sizes a bundle may reach: one set, read by the bundle reader (verify, show, replay) and by
the trace recorder, so that what `trace` writes is always something reprokit can read back.

Standard library only and import-free: the recorder loads it inside the traced program.
"""

from __future__ import annotations

# What a reader accepts by default (REPROKIT_MAX_* and --max-bytes may raise or lower it there).
MAX_BUNDLE_BYTES = 2 << 30      # all members together, uncompressed
MAX_MEMBER_BYTES = 512 << 20    # one member, uncompressed
MAX_MEMBERS = 100_000

# A kept-tensors file is one member holding a zip of a pickle and the tensors' storages: room for
# the zip's headers and the pickle beside the data.
TENSOR_FILE_SLACK = 1 << 20
# Room in a bundle for what is not a kept tensor (IR, SASS, cubins, logs, the documents).
BUNDLE_SLACK = 256 << 20

# --tensors modes: (bytes one tensor may have, bytes one launch's file may hold, bytes all kept
# tensors of a trace may hold). `all` keeps what a reader reads back at its default limits.
TENSOR_CAPS = {
    "small": (1 << 20, 16 << 20, 256 << 20),
    "all": (MAX_MEMBER_BYTES - TENSOR_FILE_SLACK, MAX_MEMBER_BYTES - TENSOR_FILE_SLACK,
            MAX_BUNDLE_BYTES - BUNDLE_SLACK),
}


def mib(n: int) -> str:
    """A size as messages print it."""
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} bytes"
