"""Reports over bundles: a GitHub issue body for triton-lang/triton (markdown.py) and one
self-contained html page with plots (html.py), both built from model.py's content: the bundles,
the comparison grid over them (reprokit.compare) and the cases worth a look (findings.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from reprokit import locks
from reprokit.errors import FileSystemError, OutputExists, UsageError
from reprokit.report import html, markdown
from reprokit.report.model import build
from reprokit.report.plots import matplotlib_pyplot

FORMATS = ("md", "html")


def render(paths: Sequence[Path], fmt: str, *, mixed_profiles: bool = False, timing_options=None,
           newest: Path | None = None) -> str:
    """The report over `paths` (bundle files, in column order) as text; `newest`: a replay of the
    first bundle on the newest release, which says which findings it no longer shows."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    if fmt == "html":
        matplotlib_pyplot()   # a host without the html extra hears so before any bundle is read

    report = build(paths, mixed_profiles=mixed_profiles, timing_options=timing_options, newest=newest)
    if fmt == "md":
        return markdown.render(report)

    return html.render(report)


def check_out(out: Path, inputs: Sequence[Path]) -> Path:
    """Refuse an --out that is a folder, sits in no folder, would overwrite an input, or holds
    anything but a report reprokit wrote."""
    out = Path(out)
    if out.is_dir():
        raise UsageError(f"--out {out}: is a folder; name a file")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: the folder {out.parent} does not exist")
    for p in inputs:
        if Path(p).exists() and out.exists() and os.path.samefile(p, out):
            raise UsageError(f"--out {out}: is one of the input bundles")
    if out.is_symlink() or (out.exists() and not is_report(out)):
        raise OutputExists(f"--out {out}: exists and is not a report reprokit wrote; it was left as it is "
                           "(choose another --out)")
    return out


# How a report says it is one (the first bytes of each format), so that --out replaces only a
# report reprokit wrote, never a user's file of that name.
_SIGNS = (b"<!-- Made by `reprokit report`", b'<meta name="generator" content="reprokit report">')


def is_report(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return head.startswith(_SIGNS[0]) or (head.startswith(b"<!DOCTYPE html>") and _SIGNS[1] in head)


def write(text: str, out: Path) -> None:
    """Write aside in out's folder and rename into place: a reader never sees half a report, and
    a failure leaves nothing behind."""
    data = text.encode("utf-8")
    with locks.temp(out.parent, out.name, "partial", is_dir=False) as t:
        try:
            with open(t.path, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise FileSystemError.of(out, e, "cannot write the report") from None
        t.finish(out)
