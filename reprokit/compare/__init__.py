"""Comparison across versions: the grid of result sets (grid.py), IR normalisation
(normalise.py), what a column is made from (sources.py), per-case IR diffs (irdiff.py), the
terminal table (render.py), replaying a bundle's own plan on stacks (replay.py) and bisecting
over the releases on the package index (bisect.py).

Verbs (replay, diff, bisect, report) only parse arguments and print what these return.
"""
