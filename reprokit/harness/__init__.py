"""The code that runs inside a stack: standard library + the Triton under test only.

It must import nothing from the host side of reprokit (only reprokit.common, the standard-library
pieces both sides share), run on Python >= 3.9, and work unchanged on every Triton from 3.0 to the
newest release.
"""

FORMAT = 1
# The plan.json format the harness reads: the host writes only this one (reprokit.plan.FORMAT;
# it migrates older plans before staging them), so an older harness never guesses at a newer plan.
PLAN_FORMAT = 2

