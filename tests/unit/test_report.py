"""`reprokit report` over the real H100 bundles (Triton 3.0.0 and 3.6.0): the issue body's
content and determinism, IR excerpts, the html page's self-containment, and bad input."""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.cli import main
from reprokit.report import render
from reprokit.report.excerpts import excerpt
from reprokit.report.markdown import BODY_LIMIT
from reprokit.report.markdown import render as render_md
from reprokit.report.model import build

GOLDEN = Path(__file__).resolve().parents[2] / "bundles" / "golden"


def _one(folder: str) -> Path:
    (path,) = sorted((GOLDEN / folder).glob("*.tgz"))
    return path


V30, V36 = _one("h100-triton-3.0.0"), _one("h100-triton-3.6.0")


@pytest.fixture(scope="module")
def report():
    return build([V30, V36])


@pytest.fixture(scope="module")
def md(report):
    return render_md(report)


def _section(md: str, case: str) -> str:
    start = md.index(f"#### `{case}`")
    end = md.find("\n#### ", start + 1)
    return md[start:end if end > 0 else md.index("### Environment details", start)]


def test_markdown_follows_the_bug_template_with_the_environment_that_ran(md):
    # the crash is a bug (bug_report.yml); block pointers without TMA and a register change are bad
    # codegen, a body of their own (bad_codegen.yml)
    assert "Suggested title: [h100, sm_90a] Triton 3.0.0: compiler crashes (SIGABRT) on " \
           "experimental_descriptor.p1 -->" in md.splitlines()[1]
    assert "the bug_report.yml template" in md.splitlines()[0] and "Issue 1 of 2" in md.splitlines()[0]
    assert "the bad_codegen.yml template" in md and "### Describe the issue" in md
    assert md.index("### Describe the bug") < md.index("### Environment details")
    env = md[md.index("### Environment details"):]
    assert "Triton: 3.0.0, 3.6.0\n" in env and "GPU: NVIDIA H100 80GB HBM3; profile h100, sm_90" in env
    assert "Driver: 580.159.04, CUDA 13.0" in env
    # the ptxas each Triton really ran (its own), not the container's CUDA 13.0
    assert "ptxas that ran: 12.4.99 (triton 3.0.0); 12.8.93 (triton 3.6.0)" in env
    for path in (V30, V36):
        assert f"`{path.name}` | `{hashlib.sha256(path.read_bytes()).hexdigest()}` |" in env
    assert len(md) < BODY_LIMIT


def test_markdown_grid_marks_moved_and_unmet_cells(md):
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", md, re.M)}
    assert len(rows) == 22
    assert rows["block_ptr.p0"] == "| `block_ptr.p0` | tma | no-tma 0/0/0/0/0 ✗ | no-tma 0/0/0/0/0 ✗ |"
    assert rows["experimental_descriptor.p1"].endswith("| crashed ✗ | **unsupported** |")
    assert rows["host_descriptor.p0"].endswith("| unsupported | **tma** 2/2/2/2/2 |")
    assert "tma 3/9/9/9/9 (no launch)" in rows["experimental_descriptor.gemm-256x128x128-w16-s4"]


def test_markdown_dwells_on_crash_unmet_and_rejections_and_lists_api_changes(md, report):
    # Expected rejections (the P1s refused as their cases say) are not findings; a register change is.
    assert [f.case for f in report.findings] == ["experimental_descriptor.p1", "block_ptr.p0", "block_ptr.p2"]
    assert "  - moved against triton 3.0.0: `regs 96 -> 74`, `-33 mov.u32 (ptx)`" in _section(md, "block_ptr.p2")
    crash = _section(md, "experimental_descriptor.p1")
    assert "signal SIGABRT" in crash and "unsupported shared memory layout for MMAv3" in crash
    assert "<summary>MLIR reproducer of the failing pass (triton 3.0.0" in crash
    assert "tt.experimental_descriptor_load %arg0" in crash and "triton-nvidia-tma-lowering" in crash
    # its standalone reproducer, made from the bundle's own plan and kernels: Triton only
    m = re.search(r"<summary>Minimal reproducer \(triton 3\.0\.0\).*?```python\n(.*?)\n```\n", crash, re.S)
    assert m and "pip install triton==3.0.0 && python minimal.py" in crash
    assert "`cases/experimental_descriptor.p1/reproducer.py`" in crash
    script = m.group(1)
    compile(script, "reproducer.py", "exec")
    assert "def copy_p1_narrow(" in script and not re.search(r"^\s*(?:import|from) reprokit", script, re.M)
    assert "#### `host_descriptor.p1`" not in md and "#### `tensor_descriptor.p1`" not in md
    unmet = _section(md, "block_ptr.p0")
    # no TMA: the excerpt centres on the loads/stores a TMA would replace, at each level shown
    assert re.search(r"^\d+> +%\d+ = tt\.load ", unmet, re.M)
    assert re.search(r"^\d+> +/\*[0-9a-f]{4}\*/ +LDG\.E\.128 ", unmet, re.M)
    assert re.search(r"^\d+> +/\*[0-9a-f]{4}\*/ +STG\.E\.128 ", unmet, re.M)
    assert "/* 0x" not in unmet   # SASS encodings are dropped
    api = md[md.index("API families"):md.index("#### Verdicts")]
    assert "`experimental_descriptor`: compiles with triton 3.0.0; unsupported with triton 3.6.0 " \
           "(triton 3.6.0 lacks tl._experimental_descriptor_load)" in api
    assert "`host_descriptor`: compiles with triton 3.6.0" in api


def test_markdown_is_deterministic_and_independent_of_the_folder_given(tmp_path, md):
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    a = copy / V30.name
    b = copy / V36.name
    a.write_bytes(V30.read_bytes())
    b.write_bytes(V36.read_bytes())
    assert render([a, b], "md") == md


def test_a_body_over_githubs_limit_is_shortened_least_telling_first(report):
    full = render_md(report)
    short = render_md(report, limit=9000)
    bodies = short.split("\n---\n\n")
    assert max(len(b) for b in bodies) <= 9000 < max(len(b) for b in full.split("\n---\n\n"))
    assert "Shortened to fit under" in short
    # the grid and the environment always stay; the crash keeps its evidence longest
    assert "| `block_ptr.p0` |" in short and "### Environment details" in short
    assert "signal SIGABRT" in short
    assert "<summary>IR of triton 3.0.0" not in short


def test_compiler_words_survive_githubs_markdown():
    from reprokit.report.markdown import _esc

    assert _esc("op <i8> -> tensor<128x4xf16> | a & b\nnext") == \
        "op &lt;i8&gt; -&gt; tensor&lt;128x4xf16&gt; \\| a &amp; b next"


def test_excerpts_centre_on_tma_ops_and_skip_comments():
    text = "\n".join(["// tt.load in a comment", "%0 = arith.constant 0 : i32",
                      "ttng.async_tma_copy_global_to_local %a[%0] %b, %c loc(#loc3)", "ttng.wait_barrier %c",
                      *[f"%{i} = arith.addi %0, %0 : i32" for i in range(1, 10)],
                      "ttng.async_tma_copy_local_to_global %d[%0] %b"])
    e = excerpt("ttgir", "cases/x/kernel.ttgir", text)
    assert e.kind == "tma" and e.anchors == 2 and e.marks == (3, 14)
    out = e.text()
    assert " 3> ttng.async_tma_copy_global_to_local %a[%0] %b, %c\n" in out   # loc() suffix dropped
    assert "..." in out and "%4 = " not in out and "%8 = " in out   # two windows, the middle left out
    plain = excerpt("ttgir", "k.ttgir", "// tt.load x\n%1 = tt.load %0\n")
    assert plain.kind == "stand-in" and plain.marks == (2,)
    assert excerpt("sass", "k.sass", "MOV R1, R2 ;\n").kind == "none"


def test_html_is_self_contained_and_deterministic(report):
    pytest.importorskip("matplotlib")
    from PIL import Image

    from reprokit.report.html import render as render_html

    page = render_html(report)
    assert render_html(report) == page
    refs, tags = [], set()

    class Refs(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.add(tag)
            refs.extend(v for k, v in attrs if k in ("src", "href", "srcset", "data", "action", "poster"))

    Refs().feed(page)
    assert refs, "no images"
    assert all(r.startswith("data:image/png;base64,") or r.startswith("#case-") for r in refs), refs
    assert not tags & {"script", "link", "iframe", "object", "embed", "base"}
    assert "url(" not in page.split("</style>")[0]
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(imgs) == 3   # TMA counts, shared memory, registers: each differs across 3.0.0 and 3.6.0
    for data in imgs:
        im = Image.open(io.BytesIO(base64.b64decode(data)))
        assert im.format == "PNG" and im.width > 300 and len(im.convert("RGB").getcolors(1 << 24)) > 20
    assert 'data-case="experimental_descriptor.p1"' in page


def _run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["report", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_bad_input_gets_one_line_and_an_exit_code(tmp_path, capsys):
    out = tmp_path / "r.md"
    not_bundle = tmp_path / "notes.tgz"
    not_bundle.write_text("hello")
    cases = [
        ((not_bundle, "--out", out), 2, "not a gzip file"),
        ((V30, V30, "--out", out), 2, "is given twice"),
        ((V30, "--out", tmp_path), 2, "is a folder"),
        ((V30, "--out", tmp_path / "no" / "r.md"), 2, "does not exist"),
        ((V30, "--out", V30), 2, "is one of the input bundles"),
        ((V30, "--out", "/proc/r.md"), 5, "/proc"),
        ((V30, tmp_path / "missing.tgz", "--out", out), 2, "no such file"),
    ]
    for argv, code, words in cases:
        rc, stdout, err = _run(capsys, *argv)
        assert (rc, stdout) == (code, ""), (argv, err)
        assert len(err.strip().splitlines()) == 1 and words in err, (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no", "notes.tgz"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["notes.tgz"]
    assert not out.exists()


def test_an_invalid_bundle_is_exit_1_and_writes_nothing(tmp_path, capsys):
    from tests.helpers.bundle_tools import repack

    bad = repack(V30, tmp_path / "bad.tgz", lambda f: {**f, "results.json": f["results.json"].replace(b'"ok"', b'"ko"', 1)})
    out = tmp_path / "r.md"
    rc, stdout, err = _run(capsys, V36, bad, "--out", out)
    assert rc == 1 and "results.json" in err and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tgz"]


def test_bundles_of_different_gpu_profiles_need_a_flag(tmp_path, capsys):
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions, Origin
    from tests.helpers.fake_capture import EXECUTOR, PROFILE_H100, STACK, make_capture

    b200 = {**PROFILE_H100, "key": "b200", "name": "NVIDIA B200", "capability": 100, "arch": "sm_100"}
    cap = make_capture(tmp_path / "cap")
    plan = json.loads((cap / "plan.json").read_text())
    (cap / "plan.json").write_text(json.dumps({**plan, "profile": b200}))
    other = write_bundle(cap, Origin(stack=STACK, profile=b200, executor=EXECUTOR, mode="compile-only"),
                         BundleOptions(tmp_path))
    rc, stdout, err = _run(capsys, V30, other)
    assert rc == 2 and stdout == "" and len(err.strip().splitlines()) == 1
    assert "different GPU profiles" in err and "h100" in err and "b200" in err and "--mixed-profiles" in err
    rc, stdout, err = _run(capsys, V30, other, "--mixed-profiles")
    # the target is the one the PTX names (this fake b200 bundle carries h100's PTX: sm_90a)
    assert rc == 0 and "GPU: " in stdout and "h100, sm_90a" in stdout and "b200, sm_90a" in stdout


def test_out_is_written_whole_and_replaces_an_older_report(tmp_path, capsys):
    out = tmp_path / "r.md"
    out.write_text(render([V30], "md"))  # an older report of reprokit's
    rc, stdout, err = _run(capsys, V30, V36, "--out", out)
    assert rc == 0 and stdout == "" and out.read_text() == render([V30, V36], "md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]
    html = tmp_path / "r.html"
    html.write_text(render([V30], "html"))
    rc, stdout, err = _run(capsys, V30, V36, "--format", "html", "--out", html)
    assert rc == 0 and html.read_text() == render([V30, V36], "html")


@pytest.mark.parametrize("text", ["my notes\n", "", "<!DOCTYPE html><p>mine</p>"])
def test_out_never_replaces_a_file_that_is_not_a_report(tmp_path, capsys, text):
    out = tmp_path / "r.md"
    out.write_text(text)
    rc, stdout, err = _run(capsys, V30, V36, "--out", out)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "not a report reprokit wrote" in err
    assert out.read_text() == text and sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]


def _gpu_bundle(tmp: Path, name: str, times_ms: dict, **capture) -> Path:
    """A bundle whose ok cases carry a GPU benchmark (median per launch), as a GPU run records it."""
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions, Origin
    from tests.helpers.fake_capture import EXECUTOR, PROFILE_H100, STACK, make_capture

    cap = make_capture(tmp / name, **capture)
    res = json.loads((cap / "results.json").read_text())
    # A real GPU run's record (the H100 example), with the kernel's median set to each time.
    real = open_bundle(GOLDEN.parent / "examples" / "h100-gpu-triton-3.6.0.tgz", keep=lambda rel: False)
    gpu = next(c["gpu"] for c in real.results["cases"] if c["id"] == "tensor_descriptor.p0")
    for c in res["cases"]:
        if c["id"] in times_ms:
            c["gpu"] = copy.deepcopy(gpu)
            c["gpu"]["bench"][0]["kernel"]["median_ms"] = times_ms[c["id"]]
    (cap / "results.json").write_text(json.dumps(res))
    return write_bundle(cap, Origin(stack=STACK, profile=PROFILE_H100, executor=EXECUTOR, mode="compile-only"),
                        BundleOptions(tmp / f"{name}-out"))


def test_gpu_times_show_in_the_grid_and_as_a_plot(tmp_path):
    pytest.importorskip("matplotlib")
    a = _gpu_bundle(tmp_path, "a", {"tensor_descriptor.p0": 0.0125})
    b = _gpu_bundle(tmp_path, "b", {"tensor_descriptor.p0": 0.0150})
    md = render([a, b], "md")
    row = next(line for line in md.splitlines() if line.startswith("| `tensor_descriptor.p0` |"))
    assert "12.5 us |" in row and "15.0 us x1.20 |" in row
    page = render([a, b], "html")
    assert 'id="plot-time"' in page and "15.0 us x1.20" in page
    # the same bundles with equal times: nothing to plot for time
    assert 'id="plot-time"' not in render([a, _gpu_bundle(tmp_path, "c", {"tensor_descriptor.p0": 0.0125}, hostname="other")],
                                              "html")


def test_reports_on_the_example_bundles(tmp_path, capsys):
    examples = sorted((GOLDEN.parent / "examples").glob("triton-*.tgz"))  # the compile-only ones
    assert [p.name for p in examples] == ["triton-3.0-cu129-h100.tgz", "triton-3.4-cu129-h100.tgz",
                                          "triton-3.5-cu130-h100.tgz", "triton-3.9-cu132-h100.tgz"]
    md = render(examples, "md")
    assert "| case | expect | triton 3.0.0 | triton 3.4.0 | triton 3.5.0 | triton 3.9.0 |" in md
    assert ("| `experimental_descriptor.p1` | no-tma | crashed ✗ | **unsupported** | **unsupported** "
            "| **unsupported** |") in md
    assert "| `block_ptr.p0` | tma | no-tma 0/0/0/0/0 ✗ | no-tma 0/0/0/0/0 ✗ | no-tma 0/0/0/0/0 ✗ | **unsupported** |" in md
    assert "Mode: compile-only" in md and "Driver: none (compile-only, no GPU)" in md
    assert "GPU: none (compile-only for NVIDIA H100 80GB HBM3)" in md
    if pytest.importorskip("matplotlib"):
        out = tmp_path / "examples.html"
        assert main(["report", *map(str, examples), "--format", "html", "--out", str(out)]) == 0
        assert out.read_text().count('<img src="data:image/png;base64,') >= 1
    capsys.readouterr()


def test_markdown_needs_no_matplotlib_and_html_says_how_to_get_it(tmp_path):
    import subprocess
    import sys

    # matplotlib made unimportable in a fresh interpreter, as on a host without the html extra
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from reprokit.cli import main\n"
            f"assert main(['report', {str(V30)!r}, '--out', {str(tmp_path / 'r.md')!r}]) == 0\n"
            f"sys.exit(main(['report', {str(V30)!r}, '--format', 'html', '--out', {str(tmp_path / 'r.html')!r}]))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[2])
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip().splitlines()[-1]   # after the markdown report's "wrote" line
    assert line.startswith("reprokit: matplotlib is not installed, and it draws the plots of --format html: "
                           "install reprokit with its 'html' extra: pip install '<reprokit wheel or checkout>[html]'")
    assert (tmp_path / "r.md").is_file() and sorted(x.name for x in tmp_path.iterdir()) == ["r.md"]


def test_which_cases_are_interesting():
    from reprokit.compare.grid import Cell, Row
    from reprokit.report.findings import kinds_of

    def row(*cells):
        return Row("x.p0", "x", "P0", tuple(cells))

    tma = Cell(True, "ok", "tma", "tma", True, (("sass", 2),))
    assert kinds_of(row(tma, tma)) == ()
    assert kinds_of(row(tma, Cell(True, "ok", "no-tma", "tma", False, (("sass", 0),),
                                  moved=("verdict", "tma.sass")))) == ("not met", "moved")
    assert kinds_of(row(tma, Cell(True, "ok", "tma", "tma", True, (("sass", 4),), moved=("tma.sass",)))) == \
        ("metric",)
    assert kinds_of(row(tma, Cell(True, "ok", "tma", "tma", True, (("sass", 2),), registers=94,
                                  moved=("registers",)))) == ("metric",)
    assert kinds_of(row(tma, Cell(True, "ok", "tma", "tma", True, (("sass", 2),), moved=("ir.ttgir",)))) == ()
    # a negative control refused as expected is the compiler doing its job; refused unexpectedly, a finding
    rejected = Cell(True, "compile_error", "rejected", "no-tma", True)
    assert kinds_of(row(rejected, rejected)) == ()
    assert kinds_of(row(Cell(True, "compile_error", "rejected", "no-tma", False))) == ("not met", "rejected")
    # an API that came or went is listed per family, not dwelt on
    assert kinds_of(row(Cell(True, "unsupported", "unsupported", "tma"), Cell(True, "ok", "tma", "tma", True,
                                                                            moved=("status", "verdict")))) == ()
    assert kinds_of(row(Cell(True, "crash", "crashed", "no-tma", False),
                        Cell(True, "compile_error", "rejected", "no-tma", True, moved=("status", "verdict")))) == \
        ("crash", "moved")
    assert kinds_of(row(Cell(True, "timeout", "timeout", "tma"))) == ("crash",)
