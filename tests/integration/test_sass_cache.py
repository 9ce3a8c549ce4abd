"""The SASS cache: a repeated capture takes each cubin's listing from the cache, with the same
text and verdicts; a damaged entry or `off` means the disassembler runs again."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest

from reprokit.executors.local import LocalExecutor
from reprokit.options import HostEnv
from reprokit.run.capture import capture
from reprokit.suite import build_plan
from tests.conftest import by_id
from tests.helpers.runs import host, planned

pytestmark = pytest.mark.triton

CASES = "tensor_descriptor.p0,block_ptr.p*"


def _capture(tmp_path, name, config, venv_executor, stack, sass_cache):
    """A capture in the stack's venv, with the SASS cache at `sass_cache` (None: off)."""
    plan = build_plan(config.gpu("h100"), stack.pins(), only=CASES).to_json()
    executor = LocalExecutor(python=venv_executor.prepare(stack)["python"],
                             host=replace(venv_executor.host, sass_cache=sass_cache))
    return capture(stack, executor, tmp_path / name, *planned(config.gpu("h100"), workers=2, plan=plan))


def _sass(cap) -> dict:
    return {c["id"]: (cap.out_dir / c["artifacts"]["sass"]).read_text() for c in cap.results.to_json()["cases"]}


def _entries(cache):
    return sorted(p for p in cache.rglob("*.sass"))


def test_a_repeated_capture_reads_the_cache(tmp_path, config, venv_executor, stack_ready):
    stack = stack_ready("triton-3.6-cu130")
    cache = tmp_path / "sass-cache"
    first = _capture(tmp_path, "first", config, venv_executor, stack, cache)
    assert all("cache" not in c["sass_tool"] for c in first.results.to_json()["cases"])
    assert len(_entries(cache)) == len(first.results.to_json()["cases"]) == 4
    assert not list(cache.rglob("*.tmp"))

    second = _capture(tmp_path, "second", config, venv_executor, stack, cache)
    for c in second.results.to_json()["cases"]:
        assert c["sass_tool"]["name"] == "cuobjdump" and len(c["sass_tool"]["cache"]) == 64, c["id"]
        assert c["sass_s"] < 0.2  # a read, not a 0.45 s disassembler start
    # The same bytes: staged kernel files have one mtime and ptxas's temporary .ptx one name
    # (it is written into .debug_line), so two captures give one cubin; and one listing.
    cubin = by_id(first)["block_ptr.p0"]["artifacts"]["cubin"]
    assert (first.out_dir / cubin).read_bytes() == (second.out_dir / cubin).read_bytes()
    assert _sass(first) == _sass(second)
    digest = lambda cap: {c["id"]: (c["verdict"], c["tma"], c["tma_ops"]) for c in cap.results.to_json()["cases"]}  # noqa: E731
    assert digest(first) == digest(second)
    assert "SASS of 4 of 4 cubins from the cache" in (second.out_dir / "logs" / "harness.log").read_text()

    # A damaged entry (emptied) is not trusted: that cubin goes through the disassembler again.
    key = by_id(second)["tensor_descriptor.p0"]["sass_tool"]["cache"]
    entry = cache / key[:2] / f"{key}.sass"
    entry.write_text("")
    third = _capture(tmp_path, "third", config, venv_executor, stack, cache)
    assert "cache" not in by_id(third)["tensor_descriptor.p0"]["sass_tool"]
    assert all("cache" in c["sass_tool"] for c in third.results.to_json()["cases"] if c["id"] != "tensor_descriptor.p0")
    assert entry.read_text() == _sass(first)["tensor_descriptor.p0"]


def test_off_disassembles_every_cubin_and_writes_nothing(tmp_path, monkeypatch, config, venv_executor, stack_ready):
    stack = stack_ready("triton-3.6-cu130")
    cache = tmp_path / "cache-root"
    off = HostEnv.from_environ({"REPROKIT_CACHE": str(cache), "REPROKIT_SASS_CACHE": "off"})
    assert off.sass_cache is None
    # Set in this process too: the harness must not take it from the environment it inherits.
    monkeypatch.setenv("REPROKIT_SASS_CACHE", str(cache / "sass"))
    cap = _capture(tmp_path, "off", config, venv_executor, stack, off.sass_cache)
    assert all(c["sass_tool"] and "cache" not in c["sass_tool"] and c["sass_s"] > 0 for c in cap.results.to_json()["cases"])
    assert not (cache / "sass").exists()
    env = json.loads((cap.out_dir / "env.json").read_text())
    assert "REPROKIT_SASS_CACHE" not in json.dumps(env)  # no host path of ours lands in a bundle


def test_the_key_names_the_disassembler_bytes(stack_ready, tmp_path):
    """Same cubin through another binary of the same name: another key."""
    stack = stack_ready("triton-3.6-cu130")
    from reprokit.executors.venv import VenvExecutor

    python = VenvExecutor(host=host()).prepare(stack)["python"]
    script = (
        "import shutil, sys\n"
        "from reprokit.harness import toolbox\n"
        "tool = toolbox.tool_path('cuobjdump')\n"
        "copy = sys.argv[1]\n"
        "shutil.copy(tool, copy)\n"
        "cubin = open(sys.argv[2], 'rb').read()\n"
        "a = toolbox._sass_key(tool, ['-sass'], cubin)\n"
        "with open(copy, 'ab') as f: f.write(b'\\0')\n"
        "b = toolbox._sass_key(copy, ['-sass'], cubin)\n"
        "c = toolbox._sass_key(tool, ['-sass', '-g'], cubin)\n"
        "print(len({a, b, c}))\n"
    )
    from pathlib import Path

    from reprokit.executors import harness_env

    cubin = Path(__file__).parents[1] / "unit" / "data" / "block_ptr_p0-3.6-run1.cubin"
    p = subprocess.run([python, "-c", script, str(tmp_path / "cuobjdump"), str(cubin)], capture_output=True,
                       text=True, env=harness_env(host()))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "3"
