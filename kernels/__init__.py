"""The control suite's Triton sources. Loaded by file path inside a stack, never imported as a package there."""
