"""Declared calls under Triton's interpreter on this CPU (triton 3.6.0, the CPU torch, numpy: the
interpreter venv the trace tests build): a kernel file that asks the driver at import loads with
the stand-in driver, the specialisation key of an InterpretedFunction is the JIT's, and a call
launches from seeded inputs with its outputs checked against torch."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_trace import interp_python  # noqa: F401 - the shared venv fixture

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "data" / "usercases"

_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
import torch
from reprokit.harness import call, standin
from reprokit.harness.kinds import callgpu
profile = {{"capability": 90, "sm_count": 132, "smem_per_block": 232448}}
standin.install_driver(profile, torch_device="cpu")
from reprokit.harness.toolbox import load_module
mod = load_module({kernels!r}, "persistent_matmul.py")
sm = load_module({kernels!r}, "block_ptr_softmax.py")
out = {{"device": str(mod.DEVICE), "num_sms": mod.NUM_SMS, "jit": type(mod.add_device_descriptor).__name__}}
T = lambda shape, **kw: {{"tensor": shape, "dtype": "float32", **kw}}
add = {{"args": {{"x_ptr": T([64, 64]), "y_ptr": T([64, 64]), "out_ptr": T([64, 64]), "M": 64, "N": 64,
                  "BLOCK_M": 32, "BLOCK_N": 32}}, "grid": [2, 2]}}
out["keys"] = [list(call.spec_key(mod.add_device_descriptor, add)),
               list(call.spec_key(mod.add_device_descriptor, dict(add, args=dict(add["args"], M=48)))),
               list(call.spec_key(mod.add_device_descriptor, dict(add, args=dict(add["args"], M=50))))]
b, launch, rec = callgpu.launch_and_check(torch, mod.add_device_descriptor, {{"call": add}}, "cpu")
x, y, o = b.kwargs["x_ptr"], b.kwargs["y_ptr"], b.kwargs["out_ptr"]
out["add_exact"] = bool(torch.equal(o, x + y))
out["add"] = rec
print(json.dumps(out))
"""


def _run(python: str, tmp_path: Path, interpret: bool) -> dict:
    env = {**os.environ, "HOME": str(tmp_path), "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    p = subprocess.run([python, "-c", _SCRIPT.format(root=str(ROOT), kernels=str(KERNELS))], capture_output=True,
                       text=True, env=env, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_call_loads_keys_and_launches_under_the_interpreter(interp_python, tmp_path):  # noqa: F811
    got = _run(interp_python, tmp_path, interpret=True)
    assert got["jit"] == "InterpretedFunction"
    # the tutorial-style module-level driver calls answered by the stand-in, for the CPU
    assert got["device"] == "cpu" and got["num_sms"] == 132
    keys = [tuple(k) for k in got["keys"]]
    assert keys[0] == keys[1] and keys[0] != keys[2]  # 48 is divisible by 16, 50 is not
    assert got["add_exact"], got["add"]
    assert list(got["add"]["outputs"]) == ["out_ptr"]  # the inputs were not written
    assert got["add"]["determinism"]["deterministic"] is True
    # what a GPU run records for the case holds to the results schema's `gpu`
    import jsonschema

    schema = json.loads((ROOT / "schemas" / "results.schema.json").read_text())
    jsonschema.validate({"status": "ok", "device": "cpu", **got["add"]}, {"$ref": "#/$defs/gpu", "$defs": schema["$defs"]})


def test_the_interpreters_key_is_the_jits(interp_python, tmp_path):  # noqa: F811
    """The same call keyed with and without TRITON_INTERPRET=1: the same specialisation."""
    a = _run(interp_python, tmp_path / "i", interpret=True)
    # without the interpreter nothing can launch on this CPU: compare the keys only
    env_script_keys = _keys_only(interp_python, tmp_path / "j")
    assert [tuple(k) for k in a["keys"]] == env_script_keys


def _keys_only(python: str, tmp_path: Path) -> list:
    script = _SCRIPT.split("b, launch, rec")[0] + "print(json.dumps(out))\n"
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("TRITON_INTERPRET", None)
    p = subprocess.run([python, "-c", script.format(root=str(ROOT), kernels=str(KERNELS))], capture_output=True,
                       text=True, env=env, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["jit"] == "JITFunction"
    return [tuple(k) for k in out["keys"]]
