"""Bundles: writing a capture into a checksummed, reproducible .tgz, and the one safe reader.

Callers use write_bundle() to pack, and verify() / check() / open_bundle() / extract() to read;
nothing else in reprokit opens a bundle's tar stream.
"""

from reprokit.bundle.reader import Bundle, Limits, Report, check, extract, open_bundle, verify
from reprokit.bundle.writer import write_bundle

__all__ = ["Bundle", "Limits", "Report", "check", "extract", "open_bundle", "verify", "write_bundle"]
