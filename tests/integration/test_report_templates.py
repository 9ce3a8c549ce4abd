"""A report over several bundles is ready to file with triton-lang/triton: one body per template
its findings need, each a valid submission of that issue form (tests/helpers/issue_forms.py),
each under 60000 characters, and with --newest each finding says whether the newest release
still shows it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import issue_forms

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "bundles" / "examples"
GOLDEN = ROOT / "bundles" / "golden"


def reprokit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def test_a_report_of_three_bundles_fills_the_templates_it_needs(tmp_path):
    out = tmp_path / "issue.md"
    bundles = [EX / "triton-3.0-cu129-h100.tgz", EX / "triton-3.4-cu129-h100.tgz", EX / "triton-3.5-cu130-h100.tgz"]
    p = reprokit("report", *bundles, "--newest", EX / "triton-3.9-cu132-h100.tgz", "--out", out, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    found = issue_forms.bodies(text)
    # the 3.0 crash is a bug; block pointers without TMA are bad codegen
    assert [issue_forms.template_of(b) for b in found] == ["bug_report.yml", "bad_codegen.yml"]
    for body in found:
        assert issue_forms.problems(body) == [], body[:400]
        assert len(body) < 60000
    bug, codegen = found
    # the crash: gone from 3.9, whose release lacks the API; the title does not lead with it
    assert "`experimental_descriptor.p1` (crash)" in bug and "**no longer reproducible in 3.9.0**" in bug
    assert "Suggested title: [h100, sm_90a] Triton 3.0.0, 3.4.0, 3.5.0: no finding reproduces in 3.9.0" in bug
    # block pointers: no TMA on every release that has them; 3.9 removed them
    assert "`block_ptr.p0` (not met)" in codegen and "**no longer reproducible in 3.9.0**: its API is gone" in codegen
    # against a newest release that still has the problem, the title leads with it
    p = reprokit("report", *bundles[:2], "--newest", EX / "triton-3.5-cu130-h100.tgz", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    codegen = issue_forms.bodies(p.stdout)[1]
    assert "still there in the newest release, Triton 3.5.0" in codegen
    assert "block_ptr.p0 gives no-tma, expected tma" in codegen.split("\n", 2)[1]
    # exact facts: the PTX's target, and torch as the snapshot saw it
    assert "profile h100, sm_90a" in bug and "torch: not installed" in bug
    # expected rejections (the P1s refused as their cases say) are no findings
    assert "#### `tensor_descriptor.p1`" not in text and "#### `host_descriptor.p1`" not in text


def test_the_checker_refuses_what_the_form_would_not_take():
    good = ("<!-- Made by `reprokit report` ... the bad_codegen.yml template: x\n -->\n\n### Describe the issue\n\ntext\n\n"
            "### Environment details\n\n```\nTriton: 3.6.0\nGPU: H100\n```\n")
    assert issue_forms.problems(good) == []
    assert issue_forms.problems(good.replace("### Describe the issue", "### Describe the bug"))
    assert issue_forms.problems(good.replace("text\n", ""))
    assert issue_forms.problems(good.replace("GPU: H100", "Device: H100"))
    assert issue_forms.problems(good.replace("bad_codegen.yml", "question.yml"))


def test_a_long_report_stays_under_the_limit_and_lists_what_it_left_out(tmp_path):
    from reprokit.report.markdown import render
    from reprokit.report.model import build

    (v30,) = sorted((GOLDEN / "h100-triton-3.0.0").glob("*.tgz"))
    (v36,) = sorted((GOLDEN / "h100-triton-3.6.0").glob("*.tgz"))
    text = render(build([v30, v36]), limit=6000)
    for body in issue_forms.bodies(text):
        assert issue_forms.problems(body) == []
    assert "left out here, and attached in the bundles" in text
    assert "sha256 `" in text and "`cases/" in text
