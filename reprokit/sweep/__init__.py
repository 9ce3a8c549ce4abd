"""Sweeps: a parametrised kernel, axes and values, stacks and GPU profiles, expanded into a plan
whose points are cases like any other (spec), run resumably point by point (run), condensed into
a byte-reproducible bundle (condense) and read for answers, not only cells (answers)."""
