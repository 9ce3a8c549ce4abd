"""The JIT key derivation (reprokit/harness/speckey.py) on every pinned release: each stack's own
binder, given stand-ins of a declared call's arguments (no torch, no GPU), must give the
specialisation written here by hand from each release's rules."""

from __future__ import annotations

import json
import subprocess

import pytest

from reprokit.executors.venv import VenvExecutor
from tests.conftest import ALL_STACKS
from tests.helpers.runs import host

pytestmark = pytest.mark.triton

_DERIVE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import triton, triton.language as tl
from reprokit.harness import speckey

@triton.jit
def k(x, y, n, m, f, flag, big, nothing, B: tl.constexpr):
    pass

@triton.jit(do_not_specialize=["n"])
def k_dns(x, n, B: tl.constexpr):
    pass

calls = [
    (k, [{"tensor": [64], "dtype": "float16"}, {"tensor": [64], "dtype": "float16", "align": 2}, 32, 1, 2.0, True,
         2 ** 40, {"none": True}, 64], {"num_warps": 8}),
    (k, [{"tensor": [64], "dtype": "bfloat16", "align": 8}, {"tensor": [64], "dtype": "float32"}, 33, 7, 0.5, False,
         5, {"none": True}, {"dtype": "float16"}], {}),
    (k_dns, [{"tensor": [64], "dtype": "float32"}, 64, 128], {}),
]
out = []
for fn, args, kw in calls:
    s = speckey.derive(fn, tuple(speckey.standin(a) for a in args), kw)
    out.append({"signature": s.signature, "constexprs": {a: speckey.encode(v) for a, v in s.constexprs.items()},
                "divisible_by_16": list(s.divisible_by_16), "options": s.options})
print(json.dumps(out))
"""

# What each release's JIT gives those calls. On 3.0 through 3.6: pointers and ints hinted divisible
# by 16, ints equal to 1 and None folded into constants, fp32 floats, i64 beyond 32 bits;
# do_not_specialize keeps an int out of the hints. Where they differ: a bool is "i1" on 3.0 and
# "u1" from 3.5, and 3.0 hints False as divisible by 16 (a bool is an int there, and 0 % 16 == 0).
EXPECTED = [
    {"signature": {"x": "*fp16", "y": "*fp16", "n": "i32", "f": "fp32", "flag": "i1", "big": "i64"},
     "constexprs": {"m": 1, "nothing": {"none": True}, "B": 64},
     "divisible_by_16": ["x", "n", "big"], "options": {"num_warps": 8}},
    {"signature": {"x": "*bf16", "y": "*fp32", "n": "i32", "m": "i32", "f": "fp32", "flag": "i1", "big": "i32"},
     "constexprs": {"nothing": {"none": True}, "B": {"dtype": "float16"}},
     "divisible_by_16": ["y"], "options": {}},
    {"signature": {"x": "*fp32", "n": "i32"}, "constexprs": {"B": 128}, "divisible_by_16": ["x"], "options": {}},
]


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_each_release_derives_the_specialisation_its_jit_would(stack, stack_ready, repo_root, tmp_path):
    s = stack_ready(stack)
    python = str(VenvExecutor(host=host()).venv_dir(s) / "bin" / "python")
    script = tmp_path / "derive.py"  # a file: @triton.jit reads its kernel's source
    script.write_text(_DERIVE)
    want_all = [dict(e, signature=dict(e["signature"])) for e in EXPECTED]
    bool_type = "i1" if s.triton.startswith("3.0.") else "u1"
    for e in want_all:
        if "flag" in e["signature"]:
            e["signature"]["flag"] = bool_type
    if s.triton.startswith("3.0."):
        want_all[1]["divisible_by_16"] = ["y", "flag"]
    p = subprocess.run([python, str(script), str(repo_root)], capture_output=True, text=True, timeout=300,
                       check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(got) == len(want_all)
    for want, have in zip(want_all, got):
        assert have["signature"] == want["signature"], (stack, have)
        assert have["constexprs"] == want["constexprs"], (stack, have)
        assert sorted(have["divisible_by_16"]) == sorted(want["divisible_by_16"]), (stack, have)
        assert have["options"] == want["options"]
