"""Judging results: the grid of result sets (grid.py), IR normalisation (normalise.py), what a
column is made from (sources.py), per-case IR diffs (irdiff.py), robust time labels
(timing.py), bisection metrics (metric.py) and the terminal table (render.py).

Pure judging over typed records (reprokit.records): nothing here runs a stack. The verbs that
run stacks and then judge (replay, bisect) live with the spine, in reprokit.run.
"""
