"""The code that runs inside a stack: standard library + the Triton under test only.

It must import nothing from the host side of reprokit, run on Python >= 3.9, and work
unchanged on every Triton from 3.0 to the newest release.
"""

import json
import os

FORMAT = 1
# The plan.json format the harness reads: the host writes only this one (reprokit.plan.FORMAT;
# it migrates older plans before staging them), so an older harness never guesses at a newer plan.
PLAN_FORMAT = 2


def write_json(path: str, data) -> None:
    """Write a JSON document whole or not at all: a reader (the runner, the host) never sees half."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
