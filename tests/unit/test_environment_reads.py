"""The environment is read once, at the edge: `cli.main` reads it into a HostEnv
(reprokit/options.py), and library code takes what it needs from there. The harness runs in a
process of its own inside a stack, so it reads its own environment; so does the recorder that
`reprokit trace` starts inside the user's program (reprokit/trace/inprogram/boot, recorder.py)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "reprokit"
READS = re.compile(r"os\.environ|os\.getenv|Path\.home|expanduser|tempfile\.gettempdir|tempfile\.tempdir")
ALLOWED = {"cli.py", "options.py", "trace/inprogram/recorder.py"}


def test_only_the_edge_reads_the_environment():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("harness/", "trace/inprogram/boot/")) or rel in ALLOWED:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if READS.search(line):
                found.append(f"reprokit/{rel}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)


def test_the_grep_sees_what_it_looks_for():
    """The pattern finds each form in the files that may read (so an empty answer above means something)."""
    edge = (PACKAGE / "cli.py").read_text() + (PACKAGE / "options.py").read_text()
    assert {m.group(0) for m in READS.finditer(edge)} >= {"os.environ", "Path.home", "tempfile.gettempdir"}
