"""Files written whole or not at all (both sides: the host's records, the harness's results)."""

from __future__ import annotations

import json
import os
from typing import Any


def write_json(path: str, data: Any) -> None:
    """Write a JSON document whole or not at all: a reader (the runner, the host) never sees half."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
