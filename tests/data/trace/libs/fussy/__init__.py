"""A kernel package that refuses to import without its program's own setup (FlagGems raises "No
device were detected" unless the process was prepared): the program sets FUSSY_READY in its
own process; a capture's harness never has it."""

import os

if os.environ.get("FUSSY_READY") != "1":
    raise RuntimeError("No device were detected")
