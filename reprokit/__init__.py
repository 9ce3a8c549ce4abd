"""reprokit: reproducibility bundles for GPU compiler investigations.

This module stays import-free so that the in-stack harness (reprokit.harness) can run with
nothing but the standard library and the Triton under test.
"""

__version__ = "0.1.0"
