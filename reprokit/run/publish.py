"""Publishing a finished work folder as a bundle: the one door to reprokit.bundle.writer.

Every verb that makes a bundle reaches the writer (and its atomic publish: a bundle is written
under a temporary name and renamed into place, never over a different file) through here, so
that what holds for one holds for all.
"""

from __future__ import annotations

from pathlib import Path

from reprokit.bundle.writer import write_bundle
from reprokit.options import BundleOptions, Origin


def publish(capture_dir: Path, origin: Origin, options: BundleOptions) -> Path:
    """Pack `capture_dir` (a capture, a condensed sweep, a trace) into a bundle under
    options.out_dir and return its path."""
    return write_bundle(capture_dir, origin, options)
