"""3.0-era host-filled TMA descriptors on a CPU: the recorder's wrapping of Triton 3.0.0's own
`CudaUtils` fill functions (only the compiled driver module they come from is stood in: the fill
is a CUDA driver call), the fill records it writes, the plan's schema, and the replay's rebuild
(which base tensor, dims, block; real torch, the fill stood in where it needs the driver).

The interpreter cannot run experimental descriptor ops, so the 3.0 kernels' launches fail after
the recorder has seen them (docs/trace.md). Under 3.3.1's interpreter, a kernel that reads its
address from the descriptor bytes is traced (filled by the driver's fill and by the tools
module's real create_1d_tma_descriptor) and replayed through the harness's launch path.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from reprokit.bundle.schemas import validator
from reprokit.config import load_config
from reprokit.errors import ExecutorError
from reprokit.harness import tmafill
from reprokit.trace import plan as trace_plan
from reprokit.trace.program import parse
from tests.conftest import skip_or_fail_triton
from tests.helpers.interp import interpreter_python
from tests.helpers.runs import host

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "data" / "trace" / "experimental_fill_standin.py"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """The program run under the recorder in a Triton 3.0.0 + CPU torch venv: (python, plan)."""
    try:
        python = str(interpreter_python(host(), "3.0.0"))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))
    out = tmp_path_factory.mktemp("trace")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPROKIT_", "TRITON_"))}
    env.update(REPROKIT_TRACE_DIR=str(out), REPROKIT_TRACE_PROFILE=json.dumps({"capability": 90}),
               TRITON_INTERPRET="1", PYTHONPATH=f"{ROOT / 'reprokit' / 'trace' / 'inprogram' / 'boot'}{os.pathsep}{ROOT}")
    p = subprocess.run([python, str(PROGRAM)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                       check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    run = parse(out, p.returncode, 0.0, "")
    profile = load_config().gpu("h100")
    return python, trace_plan.build(run, profile, {"name": "t", "triton": "3.0.0", "python": "3.11"}).to_json()


def _fill(rank, dims, block, esize, base, **extra):
    return {"api": f"driver.active.utils.fill_{rank}d_tma_descriptor", "rank": rank, "dims": dims, "block": block,
            "element_size": esize, "base": base, "offset": 0, "base_found": True, **extra}


def test_the_trace_plan_reads_back_as_the_plan_the_recorder_built(traced):
    from reprokit.plan import Plan

    _, plan = traced
    again = Plan.from_json(json.loads(json.dumps(plan)))
    assert again.source == "trace" and again.to_json() == plan and all(c.trace_n is not None for c in again)


def test_each_fill_is_recorded_by_the_argument_it_became(traced):
    _, plan = traced
    fills = {c["id"]: c["trace"].get("tma_fills") for c in plan["cases"]}
    x = {"tensor": [256, 128], "dtype": "float16", "strides": [128, 1], "align": 16}
    view = {"tensor": [32, 128], "dtype": "float16", "strides": [256, 1], "align": 16}  # big[32:, 128:]
    v = {"tensor": [512], "dtype": "float32", "strides": [1], "align": 16}
    assert fills == {
        "tma_copy.1": {"in_desc_ptr": _fill(2, [256, 128], [128, 128], 2, x),
                       "out_desc_ptr": _fill(2, [256, 128], [128, 128], 2, x)},
        "tma_copy.2": {"in_desc_ptr": _fill(2, [32, 128], [32, 128], 2, view),
                       "out_desc_ptr": _fill(2, [32, 128], [32, 128], 2, view, shares="in_desc_ptr")},
        "scale_rows.1": {"desc_1d": _fill(1, [512], [128], 4, v, shares="x_ptr")},
    }
    # the arguments themselves are what the JIT saw: 128-byte int8 tensors
    assert plan["cases"][0]["call"]["args"]["in_desc_ptr"] == {"tensor": [128], "dtype": "int8", "strides": [1],
                                                             "align": 16}
    errors = sorted(e.message for e in validator("plan.json").iter_errors(plan))
    assert errors == []
    bad = json.loads(json.dumps(plan))
    bad["cases"][0]["trace"]["tma_fills"]["in_desc_ptr"]["rank"] = 3
    assert list(validator("plan.json").iter_errors(bad))


def test_the_rebuild_plan_names_each_base_dims_and_block(traced):
    _, plan = traced
    by_id = {c["id"]: c for c in plan["cases"]}
    rebuilds = tmafill.plan(by_id["tma_copy.2"])
    assert [(r.param, r.shares, r.dims, r.block, r.element_size, r.base["strides"]) for r in rebuilds] == [
        ("in_desc_ptr", None, (32, 128), (32, 128), 2, [256, 1]),
        ("out_desc_ptr", "in_desc_ptr", (32, 128), (32, 128), 2, [256, 1])]
    assert [(r.param, r.shares, r.rank) for r in tmafill.plan(by_id["scale_rows.1"])] == [("desc_1d", "x_ptr", 1)]
    assert all(tmafill.unfilled(c) == [] for c in plan["cases"])


REBUILD = r"""
import json, struct, sys
import torch
from reprokit.harness import tmafill
from reprokit.harness.kinds.callgpu import make_tensor_factory

def one(case):
    make = make_tensor_factory(torch, "cpu", 0)
    kwargs = {n: (make(a) if isinstance(a, dict) and "tensor" in a else a) for n, a in case["call"]["args"].items()}
    calls = []

    def fill(r, address):  # the driver's part: write what a CUtensorMap holds (address, dims, box, size)
        calls.append(r.param)
        return struct.pack("<Q5q" if r.rank == 2 else "<Q3q", address, *r.dims, *r.block, r.element_size).ljust(128, b"\0")

    bases = tmafill.rebuild(torch, kwargs, tmafill.plan(case), make, fill)
    out = {"calls": calls, "bases": {}, "descs": {}}
    for name, t in bases.items():
        out["bases"][name] = {"shape": list(t.shape), "dtype": str(t.dtype), "strides": list(t.stride()),
                              "ptr_mod16": t.data_ptr() % 16}
    for r in tmafill.plan(case):
        raw = bytes(kwargs[r.param].numpy().tobytes())
        addr, *rest = struct.unpack("<Q5q" if r.rank == 2 else "<Q3q", raw[:8 + 8 * (2 * r.rank + 1)])
        descs = {q.param for q in tmafill.plan(case)}
        tensors = {**{k: v for k, v in kwargs.items() if hasattr(v, "data_ptr") and k not in descs}, **bases}
        base_of = [n for n, t in tensors.items() if t.data_ptr() == addr]
        out["descs"][r.param] = {"points_into": sorted(base_of), "rest": rest}
    return out


print(json.dumps({c["id"]: one(c) for c in json.loads(sys.stdin.read())}))
"""


def test_the_replay_fills_each_descriptor_over_its_own_base(traced):
    python, plan = traced
    p = subprocess.run([python, "-c", REBUILD], input=json.dumps(plan["cases"]), cwd=ROOT, capture_output=True,
                       text=True, timeout=120, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    results = json.loads(p.stdout)
    copy2 = results["tma_copy.2"]
    assert copy2["bases"] == {"in_desc_ptr": {"shape": [32, 128], "dtype": "torch.float16", "strides": [256, 1],
                                              "ptr_mod16": 0}}
    # in place: both descriptors point at the one base the replay made
    assert copy2["descs"] == {"in_desc_ptr": {"points_into": ["in_desc_ptr"], "rest": [32, 128, 32, 128, 2]},
                              "out_desc_ptr": {"points_into": ["in_desc_ptr"], "rest": [32, 128, 32, 128, 2]}}
    copy1 = results["tma_copy.1"]
    assert sorted(copy1["bases"]) == ["in_desc_ptr", "out_desc_ptr"]
    assert copy1["descs"]["out_desc_ptr"]["points_into"] == ["out_desc_ptr"]
    scale = results["scale_rows.1"]
    assert scale["bases"] == {}  # its base is the kernel's own x_ptr argument
    assert scale["descs"] == {"desc_1d": {"points_into": ["x_ptr"], "rest": [512, 128, 4]}}
    assert scale["calls"] == ["desc_1d"]


# In the 3.3.1 interpreter venv: each traced case through the harness's GPU path on the CPU
# (callgpu.launch_and_check, device "cpu"), its descriptors filled again by the release's own
# functions (harness/tmafill.release_fill: the driver's fill, or the tools module's create_*),
# whose driver part is the program's stand-in (the backend's CudaUtils, its compiled module stood in).
_REPLAY = r"""
import json, sys
import torch
import triton
from reprokit.harness import standin
from reprokit.harness.kinds import callcase, callgpu
from reprokit.harness.toolbox import load_kernel
root, data, cases = sys.argv[1], sys.argv[2], json.loads(sys.stdin.read())
standin.install_driver({"capability": 90}, torch_device="cpu")
sys.path.insert(0, data)
import descriptor_address_standin as program  # its module level: the backend's CudaUtils, fills stood in
triton.runtime.driver.active.utils = program.utils
out = {}
for case in cases:
    obj = load_kernel(root + "/trace/kernels", *callcase.kernel_ref(case))
    b, _, rec = callgpu.launch_and_check(torch, obj, case, "cpu",
                                         recorded=callgpu.recorded_tensors(torch, root, case))
    out[case["id"]] = {"status": callgpu.status_of(rec), "inputs": rec["inputs"]["tensors"],
                       "outputs": {n: o.get("reference", {}).get("match") for n, o in rec["outputs"].items()},
                       "deterministic": rec["determinism"]["deterministic"]}
print(json.dumps(out))
"""


def test_a_replay_launches_through_descriptors_filled_over_its_own_tensors(tmp_path):
    """The program runs its kernel through the filled bytes (y = 2x), filled by the driver's fill
    and by the tools module's create_1d_tma_descriptor; the replay, from the kept tensors, fills
    the descriptors again over tensors of its own by the same functions and gives the program's
    output to the bit: the kernel writes only where the bytes point, so `out_desc` (its base)
    being exact says the rebuilt descriptors point at the replay's tensors."""
    try:
        python = str(interpreter_python(host(), "3.3.1"))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))
    out = tmp_path / "trace"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPROKIT_", "TRITON_"))}
    env.update(REPROKIT_TRACE_DIR=str(out), REPROKIT_TRACE_PROFILE=json.dumps({"capability": 90}),
               REPROKIT_TRACE_TENSORS="small", TRITON_INTERPRET="1",
               PYTHONPATH=f"{ROOT / 'reprokit' / 'trace' / 'inprogram' / 'boot'}{os.pathsep}{ROOT}")
    p = subprocess.run([python, str(PROGRAM.with_name("descriptor_address_standin.py"))], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0 and "y == 2x" in p.stdout, p.stderr[-2000:]
    plan = trace_plan.build(parse(out, 0, 0.0, ""), load_config().gpu("h100"), {"name": "t", "triton": "3.3.1"}).to_json()
    x = {"tensor": [300], "dtype": "float16", "strides": [1], "align": 16}
    create = {"api": "triton.tools.experimental_descriptor.create_1d_tma_descriptor"}
    assert {c["id"]: c["trace"]["tma_fills"] for c in plan["cases"]} == {
        "desc_scale.1": {"in_desc": _fill(1, [300], [128], 2, x), "out_desc": _fill(1, [300], [128], 2, x)},
        "desc_scale.2": {"in_desc": {**_fill(1, [300], [64], 2, x), **create},
                         "out_desc": {**_fill(1, [300], [64], 2, x), **create}}}
    assert list(validator("plan.json").iter_errors(plan)) == []
    r = subprocess.run([python, "-c", _REPLAY, str(tmp_path), str(PROGRAM.parent)], input=json.dumps(plan["cases"]),
                       cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
                       env={**env, "PYTHONPATH": str(ROOT), "REPROKIT_TRACE_DIR": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    launched = {"status": "ok", "inputs": {"in_desc": "recorded", "out_desc": "recorded"},
                "outputs": {"out_desc": "exact"}, "deterministic": True}
    assert json.loads(r.stdout) == {"desc_scale.1": launched, "desc_scale.2": launched}
