"""The html report in a real browser: headless Chromium (Debian's `chromium`) renders it with no
network (its own network namespace where `unshare -n` works), a probe reports what every image
decoded to, the DOM shows the grid, and the screenshot shows the page's colours, not a blank.

Skips without Chromium, or fails under REPROKIT_REQUIRE_CHROMIUM=1 (as .ci/run sets).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reprokit.cli import main

GOLDEN = Path(__file__).resolve().parents[2] / "bundles" / "golden"
PROBE = ('<script>window.addEventListener("load",()=>{for(const i of document.images)'
         '{i.dataset.w=i.naturalWidth;i.dataset.h=i.naturalHeight}document.body.dataset.probed="1"})</script>')


def _one(folder: str) -> Path:
    (path,) = sorted((GOLDEN / folder).glob("*.tgz"))
    return path


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        why = "no chromium on PATH (apt-get install -y chromium)"
        if os.environ.get("REPROKIT_REQUIRE_CHROMIUM") == "1":
            pytest.fail(f"REPROKIT_REQUIRE_CHROMIUM=1 but {why}", pytrace=False)
        pytest.skip(why)
    # Its own network namespace: a page that needed the network could not get it.
    offline = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0 \
        if shutil.which("unshare") else False
    return ([ "unshare", "-n"] if offline else []) + [exe]


def _browse(chromium, tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [*chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={tmp / 'profile'}", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp)


class _Dom(HTMLParser):
    """The elements the test looks at: images, the probe's mark, grid rows and their cells."""

    def __init__(self):
        super().__init__()
        self.images, self.rows, self.body = [], {}, {}
        self._row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "img":
            self.images.append(a)
        elif tag == "tr" and "data-case" in a:
            self._row = a["data-case"]
            self.rows[self._row] = []
        elif tag == "td" and self._row is not None:
            self.rows[self._row].append(a.get("class", ""))

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None


def test_the_html_report_renders_offline_in_chromium(tmp_path, chromium, capsys):
    page = tmp_path / "report.html"
    assert main(["report", str(_one("h100-triton-3.0.0")), str(_one("h100-triton-3.6.0")), "--format", "html",
                 "--out", str(page)]) == 0
    html = page.read_text()
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"))
    # The probe can fail: an image that needs the network decodes to nothing.
    control = tmp_path / "control.html"
    control.write_text('<html><body><img src="http://192.0.2.1/x.png"><img src="x.png">' + PROBE + "</body></html>")

    dom = _Dom()
    run = _browse(chromium, tmp_path, probe.as_uri(), "--virtual-time-budget=5000", "--dump-dom")
    dom.feed(run.stdout)
    assert dom.body.get("data-probed") == "1", run.stderr[-2000:]
    assert len(dom.images) == 3
    for img in dom.images:
        assert int(img["data-w"]) > 300 and int(img["data-h"]) > 100, img.get("alt")
    assert len(dom.rows) == 22
    # case, expect, then one cell per bundle with its verdict's class; moved cells outlined
    assert dom.rows["experimental_descriptor.p1"][2] == "v crashed notmet"
    assert dom.rows["experimental_descriptor.p1"][3] == "v unsupported moved"
    assert dom.rows["host_descriptor.p0"][2:] == ["v unsupported", "v tma moved"]
    assert dom.rows["block_ptr.p0"][2:] == ["v no-tma notmet", "v no-tma notmet"]

    bad = _Dom()
    bad.feed(_browse(chromium, tmp_path, control.as_uri(), "--virtual-time-budget=5000", "--dump-dom").stdout)
    assert bad.body.get("data-probed") == "1" and [i["data-w"] for i in bad.images] == ["0", "0"]

    shot = tmp_path / "shot.png"
    run = _browse(chromium, tmp_path, page.as_uri(), f"--screenshot={shot}", "--window-size=1280,2400")
    assert shot.is_file(), run.stderr[-2000:]
    from PIL import Image

    im = Image.open(shot).convert("RGB")
    assert im.size == (1280, 2400)
    colors = dict((c, n) for n, c in im.getcolors(1 << 24))
    total = im.width * im.height
    assert len(colors) > 500 and max(colors.values()) < 0.9 * total   # text, tables, plots: not a blank
    # The grid's cell colours show (CSS applied): green for TMA, red for the crash, yellow for no TMA.
    for rgb in ((0xda, 0xfb, 0xe1), (0xff, 0xeb, 0xe9), (0xff, 0xf8, 0xc5)):
        assert colors.get(rgb, 0) > 1000, rgb
    capsys.readouterr()


def test_a_report_of_three_bundles_renders_in_chromium(tmp_path, chromium):
    page = tmp_path / "three.html"
    third = Path(__file__).resolve().parents[2] / "bundles" / "examples" / "triton-3.9-cu132-h100.tgz"
    assert main(["report", str(_one("h100-triton-3.0.0")), str(_one("h100-triton-3.6.0")), str(third),
                 "--format", "html", "--out", str(page)]) == 0
    probe = tmp_path / "probe3.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = _Dom()
    run = _browse(chromium, tmp_path, probe.as_uri(), "--virtual-time-budget=5000", "--dump-dom")
    dom.feed(run.stdout)
    assert dom.body.get("data-probed") == "1", run.stderr[-2000:]
    assert all(int(img["data-w"]) > 300 for img in dom.images) and dom.images
    # case, expect, then one cell per bundle: three bundles, three verdict cells per row
    assert dom.rows and all(len(cells) == 5 for cells in dom.rows.values())
    assert dom.rows["block_ptr.p0"][4] == "v unsupported moved"   # 3.9 removed block pointers
