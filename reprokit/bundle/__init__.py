"""Bundles: writing a capture into a checksummed, reproducible .tgz, and the one safe reader.

The writer (writer.write_bundle) is reached through the spine's door, reprokit.run.publish;
verify() / check() / open_bundle() / extract() read, and nothing else in reprokit opens a
bundle's tar stream.
"""

from reprokit.bundle.reader import Bundle, Limits, Report, check, extract, open_bundle, verify

__all__ = ["Bundle", "Limits", "Report", "check", "extract", "open_bundle", "verify"]
