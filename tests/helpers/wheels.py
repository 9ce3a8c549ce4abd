"""A stand-in wheel of a pinned Triton release: what pip needs to build a stack's venv in seconds,
without a package index and without Triton itself (for tests and benchmarks of `prepare`)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def stand_in_wheel(folder: Path, version: str) -> Path:
    """A minimal pure-Python wheel called triton==version: what pip needs, nothing of Triton."""
    name = f"triton-{version}-py3-none-any.whl"
    files = {"triton/__init__.py": f'__version__ = "{version}"\n'.encode(),
             f"triton-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: triton\nVersion: {version}\n".encode(),
             f"triton-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\n"
                                                   b"Tag: py3-none-any\n"}
    record = "".join(f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},"
                     f"{len(d)}\n" for p, d in files.items()) + f"triton-{version}.dist-info/RECORD,,\n"
    files[f"triton-{version}.dist-info/RECORD"] = record.encode()
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / name, "w") as z:
        for p, d in files.items():
            z.writestr(p, d)
    return folder / name
