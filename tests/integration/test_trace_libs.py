"""What kernel libraries do, traced under Triton 3.6's interpreter with the CPU torch: the real
Liger-Kernel 0.8.5 from the package index (installed with --no-deps into a cached venv,
tests/helpers/interp.py, imported as users import it), and small programs of this repository's
own for each pattern (tests/data/trace/libs/): module-level libdevice aliases bound through a
conditional import, in-place and overlapping arguments, kernels made by a factory, reached
through wrappers, with `launch_metadata=`/`repr=`, and a tuple argument.

Each test fails without what it guards: a libdevice alias copied as a plain function is a false
`compile_error` ("Unsupported function referenced"); an in-place argument replayed as a separate
tensor is a false `wrong`; a factory kernel's closure constants left out is a `compile_error`; a
tuple argument gave a bundle that did not validate."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprokit.errors import ExecutorError
from tests.conftest import skip_or_fail_triton
from tests.helpers.interp import liger_python
from tests.helpers.runs import host
from tests.integration.test_trace import PROGRAMS, ROOT, interp_python, interp_release, plan_cases, trace  # noqa: F401

pytestmark = pytest.mark.triton

LIBS = PROGRAMS / "libs"


def _ttir(root: Path, case: str) -> str:
    return (root / "cases" / case / "kernel.ttir").read_text()


def _statuses(doc: dict) -> dict:
    return {c["id"]: c["status"] for c in doc["cases"]}


def test_libdevice_aliases_bound_at_module_level_compile_to_the_libdevice_call(tmp_path, interp_python):  # noqa: F811
    code, doc, root = trace(tmp_path, interp_python, "libs/libdevice_aliases.py")
    assert code == 0, doc
    assert _statuses(doc) == {"rms_scale.1": "ok", "soft_cap.1": "ok"}
    assert "__nv_rsqrtf" in _ttir(root, "rms_scale.1")
    assert "__nv_tanhf" in _ttir(root, "soft_cap.1")
    kernel = (root / "kernels" / "libdevice_aliases.rms_scale.py").read_text()
    assert "from triton.language.extra.libdevice import rsqrt" in kernel
    assert "def rsqrt" not in kernel  # never a copy of the stub
    cap = (root / "kernels" / "libdevice_aliases.soft_cap.py").read_text()
    assert "from triton.language.math import exp as fast_exp" in cap


# Under the interpreter, in this venv: every case of an unpacked trace bundle through the
# harness's GPU path (recorded tensors, launch_and_check, status_of) on the CPU.
_REPLAY = """
import json, sys
sys.path.insert(0, sys.argv[2])
import torch
from reprokit.harness import standin
from reprokit.harness.kinds import callcase, callgpu
from reprokit.harness.toolbox import load_kernel
bundle = sys.argv[1]
plan = json.load(open(bundle + "/plan.json"))
standin.install_driver(plan["profile"], torch_device="cpu")
out = {}
for case in plan["cases"]:
    if sys.argv[3:] and case["id"] not in sys.argv[3:]:
        continue
    obj = load_kernel(bundle + "/kernels", *callcase.kernel_ref(case))
    b, _, r = callgpu.launch_and_check(torch, obj, case, "cpu", recorded=callgpu.recorded_tensors(torch, bundle, case))
    ptrs = {n: t.data_ptr() for n, t in b.kwargs.items() if hasattr(t, "data_ptr")}
    out[case["id"]] = {"status": callgpu.status_of(r), "same_as": r["inputs"].get("same_as"), "ptrs": ptrs,
                       "inputs": r["inputs"]["tensors"],
                       "match": {n: (o.get("reference") or {}).get("match") for n, o in r["outputs"].items()}}
print(json.dumps(out))
"""


def test_in_place_and_overlapping_arguments_are_recorded_and_replayed_as_one_memory(tmp_path, interp_python):  # noqa: F811
    code, doc, root = trace(tmp_path, interp_python, "libs/in_place.py", "--tensors", "small")
    assert code == 0, doc
    assert _statuses(doc) == {"scale_grad.1": "ok", "shift.1": "ok"}
    cases = plan_cases(root)
    # dX_ptr is dY_ptr: 1000 float32; dst = buf[:-4], src = buf[4:] (16 bytes on), 68 floats together
    assert cases["scale_grad.1"]["call"]["aliases"] == [{"bytes": 4000, "align": 16, "at": {"dX_ptr": 0, "dY_ptr": 0}}]
    assert cases["shift.1"]["call"]["aliases"] == [{"bytes": 272, "align": 16, "at": {"dst": 0, "src": 16}}]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([interp_python, "-c", _REPLAY, str(root), str(ROOT)], capture_output=True, text=True,
                       check=False, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])
    sg, sh = got["scale_grad.1"], got["shift.1"]
    # the very same view: made once, checked once (separate tensors would leave dY "wrong")
    assert sg["status"] == "ok" and sg["ptrs"]["dX_ptr"] == sg["ptrs"]["dY_ptr"]
    assert sg["same_as"] == {"dY_ptr": "dX_ptr"} and sg["match"] == {"dX_ptr": "exact"}
    # overlapping views: 16 bytes apart in one memory, both outputs exact against the recorded ones
    assert sh["status"] == "ok" and sh["ptrs"]["src"] - sh["ptrs"]["dst"] == 16
    assert sh["match"] == {"dst": "exact", "src": "exact"}


def test_factory_wrapped_decorated_and_tuple_kernels_are_captured(tmp_path, interp_python):  # noqa: F811
    code, doc, root = trace(tmp_path, interp_python, "libs/patterns.py", "--tensors", "small")
    assert code == 0, doc
    assert _statuses(doc) == {"scale_kernel.1": "ok", "scale_kernel.2": "ok", "add_meta.1": "ok", "sum_pair.1": "ok"}
    # each factory kernel with its own closure constants: x2 over blocks of 64, x3 over 128
    for case, factor, block in (("scale_kernel.1", "2.000000e+00", 64), ("scale_kernel.2", "3.000000e+00", 128)):
        ttir = _ttir(root, case)
        assert f"arith.constant {factor}" in ttir or f"arith.constant dense<{factor}>" in ttir, case
        assert f"tt.make_range {{end = {block} : i32" in ttir, case
    results = {c["id"]: c for c in json.loads((root / "results.json").read_text())["cases"]}
    assert results["sum_pair.1"]["call"]["signature"]["pair"] == ["*fp32", "*fp32"]
    pair = plan_cases(root)["sum_pair.1"]["call"]["args"]["pair"]
    assert [a["tensor"] for a in pair] == [[200], [200]]
    # replayed from the kept tensors (the tuple's members kept as pair.0, pair.1); the factory's
    # kernels cannot run under the interpreter (closures), so only these two
    p = subprocess.run([interp_python, "-c", _REPLAY, str(root), str(ROOT), "add_meta.1", "sum_pair.1"],
                       capture_output=True, text=True, check=False, timeout=600,
                       env={**os.environ, "TRITON_INTERPRET": "1"})
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["add_meta.1"]["status"] == "ok" and got["add_meta.1"]["match"] == {"out_ptr": "exact"}
    assert got["sum_pair.1"]["status"] == "ok" and got["sum_pair.1"]["match"] == {"out_ptr": "exact"}
    assert got["sum_pair.1"]["inputs"] == {"out_ptr": "recorded", "pair.0": "recorded", "pair.1": "recorded"}


def test_flaggems_patterns_are_captured_or_said_uncapturable_never_blamed(tmp_path, interp_python):  # noqa: F811
    """FlagGems 5.0.2's patterns (libs/flaggems_patterns.py): a `@tl.constexpr` function compiles
    (before: its repr in the kernel's file, a harness_error); a tensor stand-in that is no torch
    tensor is described but not kept, and the program runs (before: `--tensors small` failed it,
    exit 6); helpers read through a package module that refuses to import without the program's
    setup are copied beside the kernel, which compiles with no package (before: a harness_error);
    one read through a module of that module is not, and its case is `capture_failed` with the
    package's error."""
    code, doc, root = trace(tmp_path, interp_python, "libs/flaggems_patterns.py", "--tensors", "small",
                            env_extra={"PYTHONPATH": str(LIBS)})
    assert code == 8, doc   # a case not captured faithfully: reprokit's own exit, not the program's
    results = {c["id"]: c for c in json.loads((root / "results.json").read_text())["cases"]}
    assert {k: c["status"] for k, c in results.items()} == \
        {"cumsum_row.1": "ok", "add_one.1": "ok", "add_two.1": "capture_failed"}
    assert "could not be loaded here: RuntimeError: No device were detected" in results["add_two.1"]["error"]
    kernels = root / "kernels"
    assert "acc_type = triton.language.constexpr(acc_type)" in (kernels / "flaggems_patterns.cumsum_row.py").read_text()
    (stub,) = kernels.glob("_reprokit_fussy_ext_*.py")
    assert f"import {stub.stem} as tle" in (kernels / "flaggems_patterns.add_one.py").read_text()
    assert "def program_id(axis" in stub.read_text() and "fussy" not in stub.read_text().split('"""')[2]
    assert "import fussy.ext as tle" in (kernels / "flaggems_patterns.add_two.py").read_text()
    trace_doc = json.loads((root / "trace" / "trace.json").read_text())
    assert trace_doc["exit_code"] == 0, trace_doc["stderr_tail"]   # the program ran as it does untraced
    # the stand-ins' launch kept its record and tensor files, the stand-ins themselves not copied
    assert {"trace/tensors/0002.inputs.pt", "trace/tensors/0002.outputs.pt"} <= set(trace_doc["tensor_files"])


def test_descriptors_inside_a_tuple_argument_are_captured_and_replayed_on_3_8(tmp_path, interp_release):  # noqa: F811
    python = interp_release("3.8.0")
    code, doc, root = trace(tmp_path, python, "libs/descriptor_tuple.py", "--tensors", "small")
    assert code == 0, doc  # before: the launch was a miss ("launched no Triton kernel")
    assert [(c["id"], c["status"], c["verdict"]) for c in doc["cases"]] == [("copy_tile.1", "ok", "tma")]
    descs = plan_cases(root)["copy_tile.1"]["call"]["args"]["descs"]
    assert [(d["block"], d["descriptor"]["tensor"]) for d in descs] == [([32, 32], [64, 32])] * 2
    results = {c["id"]: c for c in json.loads((root / "results.json").read_text())["cases"]}
    assert results["copy_tile.1"]["call"]["signature"]["descs"] == ["tensordesc<fp16[32, 32]>"] * 2
    p = subprocess.run([python, "-c", _REPLAY, str(root), str(ROOT)], capture_output=True, text=True, check=False,
                       timeout=600, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])["copy_tile.1"]
    # the descriptors' bases, by member, from the kept tensors: the destination written exactly
    assert got["status"] == "ok" and got["match"] == {"descs.1": "exact"}, got
    assert got["inputs"] == {"descs.0": "recorded", "descs.1": "recorded"}


@pytest.fixture(scope="module")
def liger(tmp_path_factory):
    """Liger-Kernel's ops (tests/data/trace/libs/liger_ops.py) traced once: (exit code, JSON,
    unpacked bundle, the program's stderr)."""
    try:
        python = str(liger_python(host()))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))
    tmp = tmp_path_factory.mktemp("liger")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp / "bundles"), "--",
                        python, str(LIBS / "liger_ops.py")], cwd=ROOT, env=env, capture_output=True, text=True,
                       check=False, timeout=1800)
    assert p.stdout.strip(), p.stderr[-3000:]
    doc = json.loads(p.stdout)
    with tarfile.open(doc["bundle"]) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    (root,) = (tmp / "unpacked").iterdir()
    return p.returncode, doc, root, p.stderr


def test_liger_kernel_ops_are_captured_with_no_false_compile_error(liger):
    code, doc, root, stderr = liger
    assert code == 0, stderr[-3000:]
    ran = dict(re.findall(r"^(\w+): (ok|the interpreter cannot run it)", stderr, re.M))
    # docs/trace.md says why the first three cannot run under the interpreter
    assert ran == {"rms_norm": "the interpreter cannot run it", "layer_norm": "the interpreter cannot run it",
                   "swiglu": "the interpreter cannot run it", "rope": "ok", "cross_entropy": "ok",
                   "fused_linear_cross_entropy": "ok"}
    statuses = _statuses(doc)
    assert statuses and set(statuses.values()) == {"ok"}, statuses
    kernels = {c["kernel"]["function"] for c in plan_cases(root).values()}
    # every op's first kernel at least (a failed forward launches no backward); RoPE and both
    # cross entropies forward and backward
    assert {"_rms_norm_forward_kernel", "_layer_norm_forward_kernel", "_swiglu_forward_kernel",
            "_triton_rope", "liger_cross_entropy_kernel", "element_mul_kernel"} <= kernels, kernels
    rms = next(c for c, k in plan_cases(root).items() if k["kernel"]["function"] == "_rms_norm_forward_kernel")
    assert "__nv_rsqrtf" in _ttir(root, rms)  # Liger's module-level libdevice alias, as the program bound it
    ln = next(c for c, k in plan_cases(root).items() if k["kernel"]["function"] == "_layer_norm_forward_kernel")
    assert "__nv_rsqrtf" in _ttir(root, ln)
