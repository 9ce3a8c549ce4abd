"""The markdown report is copy-paste ready: the minimal reproducers it embeds, cut out of the
issue body as a reader would, show the recorded behaviour in a bare pinned-Triton venv (no
reprokit, a clean environment, outside the checkout). The golden H100 bundles predate reproducer
files, so these are the ones the report makes from each bundle's own plan and kernels."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest

from reprokit.report import render

pytestmark = pytest.mark.triton

GOLDEN = Path(__file__).resolve().parents[2] / "bundles" / "golden"


def _one(folder: str) -> Path:
    (path,) = sorted((GOLDEN / folder).glob("*.tgz"))
    return path


def _embedded(md: str, case: str) -> tuple[str, str]:
    """(Triton version, script) of the minimal reproducer in the section of `case`."""
    start = md.index(f"#### `{case}`")
    section = md[start:md.find("\n#### ", start + 1)]
    m = re.search(r"<summary>Minimal reproducer \(triton ([\d.]+)\).*?\n(`{3,})python\n(.*?)\n\2\n", section, re.S)
    assert m, f"no minimal reproducer in the section of {case}"
    return m.group(1), m.group(3) + "\n"


@pytest.mark.parametrize("case,stack,shows", [
    ("experimental_descriptor.p1", "triton-3.0-cu129", "SIGABRT"),   # 3.0's compiler aborts
    ("block_ptr.p0", "triton-3.6-cu130", "ptx: cp.async.bulk.tensor x 0"),  # block pointers, no TMA
])
def test_the_reproducers_in_the_issue_body_reproduce_with_only_triton(case, stack, shows, stack_ready,
                                                                      venv_executor, tmp_path):
    md = render([_one("h100-triton-3.0.0"), _one("h100-triton-3.6.0")], "md")
    version, text = _embedded(md, case)
    st = stack_ready(stack)
    assert st.triton == version
    assert len(text.splitlines()) <= 80
    script = tmp_path / "minimal.py"
    script.write_text(text)
    python = str(venv_executor.venv_dir(st) / "bin" / "python")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    p = subprocess.run([python, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    if shows == "SIGABRT":
        assert p.returncode == -signal.SIGABRT, p.stderr[-2000:]
    else:
        assert p.returncode == 0 and shows in p.stdout, p.stderr[-2000:]


def test_a_bundle_that_carries_its_reproducers_is_reported_with_them(captured, tmp_path):
    from reprokit.bundle.reader import open_bundle
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions

    cap = captured("triton-3.6-cu130", "h100", None)     # the capture the reproducer tests share
    bundle = write_bundle(cap.out_dir, cap.origin(), BundleOptions(tmp_path))
    md = render([bundle], "md")
    version, text = _embedded(md, "block_ptr.p0")
    arts = next(c for c in cap.results.to_json()["cases"] if c["id"] == "block_ptr.p0")["artifacts"]
    assert version == "3.6.0" and text == open_bundle(bundle).read_text(arts["minimal_py"])
    assert f"is `{arts['reproducer_py']}` (the bundle carries it)" in md
