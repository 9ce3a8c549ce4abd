"""The README's and the docs' shell examples run, so they cannot rot.

Every ```sh block of README.md and docs/*.md runs with bash -euo pipefail in a fresh folder that
sees the checkout's bundles/ (read-only use) and a `reprokit` command of this checkout, and must
exit 0. A block that cannot run here says why after its language: ```sh no-run: REASON; one
without a reason fails. The counts of both are printed at the end of the session.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import counts

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(\S*)(.*)$")


@dataclass(frozen=True)
class Block:
    where: str  # file:line of the opening fence
    info: str  # what follows the language on the fence line
    text: str

    @property
    def no_run(self) -> str | None:
        m = re.match(r"\s*no-run:\s*(.*)$", self.info)
        return m.group(1).strip() if m else None


def blocks() -> list[Block]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            start, lang, info = i, m.group(1), m.group(2)
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            i += 1
            if lang == "sh":
                found.append(Block(f"{path.relative_to(ROOT)}:{start + 1}", info, "\n".join(body) + "\n"))
    return found


BLOCKS = blocks()
RUNNABLE = [b for b in BLOCKS if b.no_run is None]
counts.record("doc examples", f"{len(RUNNABLE)} sh blocks run, "
                              f"{len(BLOCKS) - len(RUNNABLE)} marked no-run, in README.md and docs/")


def test_every_block_that_does_not_run_says_why():
    assert BLOCKS, "no sh block found: the parser is wrong"
    for b in BLOCKS:
        if "no-run" in b.info:
            assert b.no_run, f"{b.where}: no-run needs a reason (```sh no-run: why)"
        else:
            assert not b.info.strip(), f"{b.where}: unknown fence words {b.info!r} (only 'no-run: why')"


@pytest.mark.triton
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where for b in RUNNABLE])
def test_example_runs(block, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "bundles").symlink_to(ROOT / "bundles")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "reprokit"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m reprokit \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=work, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"{block.where} exited {p.returncode}:\n{block.text}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
