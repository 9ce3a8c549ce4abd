"""Publishing a finished work folder as a bundle: the one door to reprokit.bundle.writer.

Every verb that makes a bundle reaches the writer (and its atomic publish: a bundle is written
under a temporary name and renamed into place, never over a different file) through here, so
that what holds for one holds for all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from reprokit import locks
from reprokit.bundle.writer import link_into_place, write_bundle
from reprokit.options import BundleOptions, Origin


def publish(capture_dir: Path, origin: Origin, options: BundleOptions) -> Path:
    """Pack `capture_dir` (a capture, a condensed sweep, a trace) into a bundle under
    options.out_dir and return its path."""
    return write_bundle(capture_dir, origin, options)


def keep(bundles: list[Path], out: Path) -> tuple[Path, ...]:
    """Copy finished bundles (made in a scratch folder) into `out`, each written aside and renamed
    into place: never over a different file under the same name."""
    out.mkdir(parents=True, exist_ok=True)
    kept = []
    for src in bundles:
        with locks.hold(out / src.name, "bundle"), locks.temp(out, f".{src.name}", "partial", is_dir=False) as t:
            shutil.copyfile(src, t.path)
            link_into_place(t.path, out / src.name)
        kept.append(out / src.name)
    return tuple(kept)
