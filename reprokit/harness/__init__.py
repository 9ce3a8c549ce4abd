"""The code that runs inside a stack: standard library + the Triton under test only.

It must import nothing from the host side of reprokit, run on Python >= 3.9, and work
unchanged on every Triton from 3.0 to the newest release.
"""

FORMAT = 1
