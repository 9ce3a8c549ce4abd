"""A traced call replayed from the tensors the trace kept, under Triton's interpreter on this CPU
(the GPU is the one thing stood in for: the harness's GPU path runs with device "cpu"): real
traces (`reprokit trace --tensors small` of tests/data/trace/replay_dtypes.py, twice: as written
and with a planted mismatch), real launches from the recorded inputs, outputs checked against the
recorded outputs and across the two traces by `reprokit diff`, tolerances by dtype on real
output tensors, and recorded tensors that are corrupt or missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprokit.errors import BundleInvalid, BundleUnusable
from tests.integration.test_trace import PROGRAMS, ROOT, interp_python  # noqa: F401 - the shared venv fixture

pytestmark = pytest.mark.triton

# In the interpreter venv: every case of an unpacked trace bundle through the harness's GPU path
# (callgpu.recorded_tensors, launch_and_check, status_of) on the CPU; then the dtype tolerances on
# real outputs, perturbed.
_REPLAY = """
import json, sys
sys.path.insert(0, {root!r})
import torch
from reprokit.harness import standin
from reprokit.harness.kinds import callcase, callgpu
from reprokit.harness.toolbox import load_kernel
bundle = {bundle!r}
plan = json.load(open(bundle + "/plan.json"))
standin.install_driver(plan["profile"], torch_device="cpu")
out = {{"cases": {{}}, "tolerance": {{}}}}
kept = {{}}
for case in plan["cases"]:
    obj = load_kernel(bundle + "/kernels", *callcase.kernel_ref(case))
    try:
        rec = callgpu.recorded_tensors(torch, bundle, case)
    except ValueError as e:
        out["cases"][case["id"]] = {{"status": "harness_error", "error": str(e)}}
        continue
    b, _, r = callgpu.launch_and_check(torch, obj, case, "cpu", recorded=rec)
    out["cases"][case["id"]] = {{"status": callgpu.status_of(r), "device": "cpu", **r}}
    kept[case["id"]] = b.kwargs["out_ptr"].clone()
if {tolerances!r}:
    def vs(t, ref):
        return callgpu.against(torch, t, ref, str(t.dtype).split(".")[-1])
    half, bf, f32, i32 = kept["axpy.1"], kept["axpy.2"], kept["axpy_planted.1"], kept["count_up.1"]
    e4 = f32.clamp(-8, 8).to(torch.float8_e4m3fn)
    out["tolerance"] = {{
        "float16 +0.5%": vs((half.float() * 1.005).half(), half),
        "float16 +5%": vs((half.float() * 1.05).half(), half),
        "bfloat16 +1%": vs((bf.float() * 1.01).bfloat16(), bf),
        "float32 +0.005%": vs(f32 * 1.00005, f32),
        "float32 +0.1%": vs(f32 * 1.001, f32),
        "int32 +1": vs(i32 + 1, i32),
        "float8_e4m3fn one step": vs((e4.float() * 1.1).to(torch.float8_e4m3fn), e4),
        "float8_e4m3fn x2": vs((e4.float() * 2).to(torch.float8_e4m3fn), e4),
    }}
print(json.dumps(out))
"""


def _trace(tmp: Path, python: str, name: str, plant: bool) -> Path:
    """`reprokit trace --tensors small` of replay_dtypes.py, unpacked: (the bundle, its folder)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "REPLAY_PLANT")}
    if plant:
        env["REPLAY_PLANT"] = "1"
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp / name), "--tensors",
                        "small", "--", python, str(PROGRAMS / "replay_dtypes.py")], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=False, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    tgz = Path(json.loads(p.stdout)["bundle"])
    with tarfile.open(tgz) as tar:
        tar.extractall(tmp / f"{name}-unpacked", filter="data")
    (root,) = (tmp / f"{name}-unpacked").iterdir()
    return tgz, root


def _replay(python: str, bundle: Path, tolerances: bool = False) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1", "HOME": str(bundle.parent)}
    p = subprocess.run([python, "-c", _REPLAY.format(root=str(ROOT), bundle=str(bundle), tolerances=tolerances)],
                       capture_output=True, text=True, env=env, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def traced(tmp_path_factory, interp_python):  # noqa: F811
    tmp = tmp_path_factory.mktemp("trace-replay")
    a_tgz, a = _trace(tmp, interp_python, "a", plant=False)
    b_tgz, b = _trace(tmp, interp_python, "b", plant=True)
    return {"tmp": tmp, "python": interp_python, "a": a, "b": b, "a_tgz": a_tgz, "b_tgz": b_tgz,
            "ra": _replay(interp_python, a, tolerances=True), "rb": _replay(interp_python, b)}


IDS = ["axpy.1", "axpy.2", "axpy_planted.1", "count_up.1", "count_up.2"]


def test_replay_launches_from_the_recorded_inputs_and_matches_the_recorded_outputs(traced):
    import jsonschema

    got = traced["ra"]["cases"]
    assert sorted(got) == IDS
    schema = json.loads((ROOT / "schemas" / "results.schema.json").read_text())
    for cid, rec in got.items():
        assert rec["status"] == "ok", (cid, rec)
        assert rec["inputs"]["source"] == "recorded" and rec["inputs"]["file"].endswith(".inputs.pt")
        assert set(rec["inputs"]["tensors"]) == {"x_ptr", "y_ptr", "out_ptr"} - ({"y_ptr"} if "count" in cid else set())
        assert list(rec["outputs"]) == ["out_ptr"]
        ref = rec["outputs"]["out_ptr"]["reference"]
        # the interpreter's own outputs in the traced program, to the bit
        assert ref["match"] == "exact" and ref["sha256"] == rec["outputs"]["out_ptr"]["sha256"]
        assert rec["determinism"]["deterministic"] is True
        jsonschema.validate(rec, {"$ref": "#/$defs/gpu", "$defs": schema["$defs"]})
    assert got["axpy.1"]["outputs"]["out_ptr"]["dtype"] == "float16"
    assert got["axpy.2"]["outputs"]["out_ptr"]["dtype"] == "bfloat16"
    assert len(got["axpy.1"]["outputs"]["out_ptr"]["probe"]) == 64
    # count_up.2's recorded input already held its output: found from seeded values instead
    assert got["count_up.2"]["outputs"]["out_ptr"]["sha256"] == got["count_up.1"]["outputs"]["out_ptr"]["sha256"]


def test_without_the_tensors_inputs_come_from_the_seed(traced):
    seeded = traced["tmp"] / "seeded"
    shutil.copytree(traced["a"], seeded)
    shutil.rmtree(seeded / "trace" / "tensors")
    got = _replay(traced["python"], seeded)["cases"]
    recorded = traced["ra"]["cases"]
    for cid in IDS:
        assert got[cid]["inputs"]["source"] == "seed" and got[cid]["inputs"]["file"] is None
        assert "reference" not in got[cid]["outputs"]["out_ptr"]
        # other inputs, other outputs: the recorded run above did read the recorded tensors
        assert got[cid]["outputs"]["out_ptr"]["sha256"] != recorded[cid]["outputs"]["out_ptr"]["sha256"]
        assert got[cid]["inputs"]["sha256"]["x_ptr"] != recorded[cid]["inputs"]["sha256"]["x_ptr"]
        # across bundles, runs from other inputs are said to be so, not judged by their outputs
        assert _moved(_cell(recorded[cid]), _cell(got[cid])) == ("inputs",)
        assert _moved(_cell(recorded[cid]), _cell(recorded[cid])) == ()


def _cell(rec: dict):
    from reprokit.compare.grid import Cell

    return Cell(present=True, outputs=tuple(sorted(rec["outputs"].items())),
                deterministic=rec["determinism"]["deterministic"],
                inputs=tuple(sorted(rec["inputs"]["sha256"].items())))


def _moved(a, b) -> tuple:
    from reprokit.compare.grid import _moved as moved

    return moved(a, b)


def test_a_planted_mismatch_is_a_verdict_against_the_recording_and_across_bundles(traced):
    # B's kernels (fp32 and int32 planted off) run on A's recorded tensors: off A's outputs
    mixed = traced["tmp"] / "mixed"
    shutil.copytree(traced["a"], mixed)
    shutil.rmtree(mixed / "kernels")
    shutil.copytree(traced["b"] / "kernels", mixed / "kernels")
    got = _replay(traced["python"], mixed)["cases"]
    assert got["axpy.1"]["status"] == got["axpy.2"]["status"] == "ok"
    f32 = got["axpy_planted.1"]
    assert f32["status"] == "wrong"
    ref = f32["outputs"]["out_ptr"]["reference"]
    assert ref["match"] == "differs" and ref["tolerance"] == {"rtol": 1e-4, "atol": 1e-5}
    assert 5e-4 < ref["max_rel"] < 2e-3 and ref["max_abs"] > 0
    for cid in ("count_up.1", "count_up.2"):  # integers: bit-exact or not at all
        assert got[cid]["status"] == "wrong"
        assert got[cid]["outputs"]["out_ptr"]["reference"]["max_abs"] == 1.0

    # Across the two traces, each replayed from its own tensors: `reprokit diff` of the two
    # capture folders with those GPU records says which outputs moved, and exits 1.
    folders = []
    for name, rec in (("a", traced["ra"]), ("b", traced["rb"])):
        folder = traced["tmp"] / f"diff-{name}"
        shutil.copytree(traced[name], folder)
        results = json.loads((folder / "results.json").read_text())
        for c in results["cases"]:
            c["gpu"] = rec["cases"][c["id"]]
        (folder / "results.json").write_text(json.dumps(results))
        folders.append(folder)
    assert all(r["status"] == "ok" for r in traced["rb"]["cases"].values())  # each matches its own recording
    p = subprocess.run([sys.executable, "-m", "reprokit", "diff", "--json", *map(str, folders)], cwd=ROOT,
                       capture_output=True, text=True, check=False, timeout=300)
    assert p.returncode == 1, p.stderr
    rows = {r["id"]: r["cells"][1] for r in json.loads(p.stdout)["cases"]}
    for cid in ("axpy_planted.1", "count_up.1", "count_up.2"):  # their IR moved too: the planted code
        assert "outputs" in rows[cid]["moved"] and rows[cid]["change"] == "verdict", rows[cid]
        # the same inputs (an output's contents before the launch, torch.empty's, do not count)
        assert "inputs" not in rows[cid]["moved"]
    assert rows["axpy.1"]["moved"] == [] and rows["axpy.2"]["moved"] == []
    # each output's check says how far, from the probes alone (the tensors are not in a bundle)
    check = rows["axpy_planted.1"]["output_checks"]["out_ptr"]
    assert check["match"] == "differs" and check["against"] == "column 0" and 5e-4 < check["max_rel"] < 2e-3
    assert rows["axpy.1"]["output_checks"]["out_ptr"]["match"] == "exact"
    text = subprocess.run([sys.executable, "-m", "reprokit", "diff", *map(str, folders)], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=300)
    assert text.returncode == 1 and "outputs vs column 0: out_ptr differs max abs" in text.stdout, text.stdout


def test_tolerance_by_dtype_on_real_outputs(traced):
    tol = traced["ra"]["tolerance"]
    match = {k: v["match"] for k, v in tol.items()}
    assert match == {"float16 +0.5%": "close", "float16 +5%": "differs", "bfloat16 +1%": "close",
                     "float32 +0.005%": "close", "float32 +0.1%": "differs", "int32 +1": "differs",
                     "float8_e4m3fn one step": "close", "float8_e4m3fn x2": "differs"}
    assert tol["float16 +5%"]["tolerance"] == {"rtol": 1e-2, "atol": 1e-2}
    assert 0.03 < tol["float16 +5%"]["max_rel"] < 0.07


def test_across_bundles_the_probes_decide_exact_close_inexact(traced):
    from reprokit.harness.kinds.callgpu import compare_output

    out = traced["ra"]["cases"]["axpy.1"]["outputs"]["out_ptr"]
    near = {**out, "sha256": "0" * 64, "probe": [v * 1.004 for v in out["probe"]]}
    far = {**out, "sha256": "0" * 64, "probe": [v * 1.05 + 0.1 for v in out["probe"]]}
    assert compare_output(out, dict(out))["match"] == "exact"
    assert compare_output(near, out, (False, True))["match"] == "close"  # one side nondeterministic
    assert compare_output(near, out, (True, True))["match"] == "inexact"  # deterministic: bytes must agree
    got = compare_output(far, out)
    assert got["match"] == "differs" and got["max_abs"] > 0.1


def test_corrupt_or_missing_recorded_tensors_are_one_line(traced, tmp_path):
    # in the harness: the case's own error, the other cases replay
    broken = tmp_path / "broken"
    shutil.copytree(traced["a"], broken)
    pt = broken / "trace" / "tensors" / "0001.inputs.pt"
    pt.write_bytes(pt.read_bytes()[:100])
    got = _replay(traced["python"], broken)["cases"]
    assert got["axpy.1"]["status"] == "harness_error"
    assert got["axpy.1"]["error"].startswith("recorded tensors trace/tensors/0001.inputs.pt cannot be read: ")
    assert "\n" not in got["axpy.1"]["error"]
    assert got["axpy.2"]["status"] == "ok"

    # on the host, before anything runs: a bundle whose kept tensors are truncated or missing
    from reprokit.bundle.reader import open_bundle
    from reprokit.plan import Plan
    from reprokit.run.replay import write_tensors

    for what in ("truncated", "missing"):
        cap = tmp_path / what
        shutil.copytree(broken if what == "truncated" else traced["a"], cap)
        for generated in ("README.md", "manifest.json", "SHA256SUMS"):
            (cap / generated).unlink()
        if what == "missing":
            (cap / "trace" / "tensors" / "0003.outputs.pt").unlink()
        p = subprocess.run([sys.executable, "-m", "reprokit", "bundle", "--out", str(tmp_path / f"{what}-out"), str(cap)],
                           cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
        assert p.returncode == 0, p.stderr
        (tgz,) = (tmp_path / f"{what}-out").glob("*.tgz")
        if what == "truncated":
            # a damaged tensor file makes the bundle itself invalid: verify reads every one (issue 26)
            with pytest.raises(BundleInvalid) as invalid:
                open_bundle(tgz)
            assert "not a valid bundle: trace/tensors/0001.inputs.pt: damaged or not a tensor file" in str(invalid.value)
            continue
        bundle = open_bundle(tgz)
        with pytest.raises(BundleUnusable) as e:
            write_tensors(bundle, Plan.from_json(bundle.plan), tmp_path / f"{what}-staged")
        msg = str(e.value)
        assert "\n" not in msg
        assert "lists the recorded tensors trace/tensors/0003.outputs.pt, which the bundle does not hold" in msg
        assert not (tmp_path / f"{what}-staged").exists()  # nothing staged from a bundle refused

    # the intact bundle stages every file it kept
    bundle = open_bundle(traced["a_tgz"])
    assert write_tensors(bundle, Plan.from_json(bundle.plan), tmp_path / "staged")
    assert sorted(p.name for p in (tmp_path / "staged").iterdir()) == [
        f"{n:04d}.{w}.pt" for n in range(1, 6) for w in ("inputs", "outputs")]


def test_a_capture_given_the_kept_tensors_stages_and_packs_them(traced, tmp_path):
    """What a GPU replay hands the spine: the tensors staged as the capture's trace/tensors/ (where
    the harness reads them) and packed into its bundle, so a replay of the replay has them. Run
    compile-only here, through the real harness in the interpreter venv."""
    from reprokit.bundle.reader import open_bundle
    from reprokit.executors.local import LocalExecutor
    from reprokit.options import BundleOptions
    from reprokit.plan import Plan
    from reprokit.run.capture import capture
    from reprokit.run.publish import publish
    from reprokit.run.replay import bundle_stack, write_kernels, write_tensors
    from tests.helpers.runs import host

    bundle = open_bundle(traced["a_tgz"])
    kernels, tensors = tmp_path / "kernels", tmp_path / "tensors"
    write_kernels(bundle, kernels)
    plan = Plan.from_json(bundle.plan)
    assert write_tensors(bundle, plan, tensors)
    cap = capture(bundle_stack(bundle.manifest), LocalExecutor(python=traced["python"], host=host()),
                  tmp_path / "cap", plan.with_files(kernels=kernels, tensors=tensors))
    assert [c.status for c in cap.results.cases] == ["ok"] * len(IDS)
    staged = sorted(p.name for p in (cap.out_dir / "trace" / "tensors").iterdir())
    assert staged == sorted(p.name for p in tensors.iterdir())
    packed = open_bundle(publish(cap.out_dir, cap.origin(), BundleOptions.from_host(host(), tmp_path / "out")))
    for name in staged:
        assert packed.read(f"trace/tensors/{name}") == bundle.read(f"trace/tensors/{name}")


def test_the_h100_traces_kept_tensors_replay_on_the_cpu_within_the_fp16_tolerance(interp_python, tmp_path):  # noqa: F811
    """bundles/examples/h100-trace-tensors-triton-3.6.0.tgz (traced on the lab H100, tensors kept)
    replayed here under the interpreter from its tensors: another machine's arithmetic, so its
    outputs are not the H100's bytes but within fp16's tolerance of them."""
    with tarfile.open(ROOT / "bundles" / "examples" / "h100-trace-tensors-triton-3.6.0.tgz") as tar:
        tar.extractall(tmp_path, filter="data")
    (root,) = tmp_path.iterdir()
    script = _REPLAY.replace('kept[case["id"]] = b.kwargs["out_ptr"].clone()', "pass")
    env = {**os.environ, "TRITON_INTERPRET": "1", "HOME": str(tmp_path)}
    p = subprocess.run([interp_python, "-c", script.format(root=str(ROOT), bundle=str(root), tolerances=False)],
                       capture_output=True, text=True, env=env, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])["cases"]
    out = {"matmul_kernel_descriptor_persistent.1": "c_ptr", "matmul_kernel_descriptor_persistent.2": "c_ptr",
           "k_attn_fwd.1": "desc_o"}
    assert sorted(got) == sorted(out)
    for cid, name in out.items():
        assert got[cid]["status"] == "ok" and got[cid]["inputs"]["source"] == "recorded", got[cid]
        ref = got[cid]["outputs"][name]["reference"]
        assert ref["match"] == "close" and ref["tolerance"] == {"rtol": 1e-2, "atol": 1e-2}, ref
        assert 0 < ref["max_abs"] < 0.1


@pytest.mark.parametrize("tensors", ["small", "none"])
def test_a_broadcast_stride_0_input_replays(tmp_path, interp_python, tensors):  # noqa: F811
    """tests/data/trace/stride0.py: an expanded tensor (strides [0]) as a kernel's input. Its
    replay wrote the recorded, or seeded, values into a view of those strides and torch refused
    (on a GPU the case read `unsupported`, the harness's failure); now `ok`, and exact from the
    kept tensors."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp_path / "b"), "--tensors",
                        tensors, "--", interp_python, str(PROGRAMS / "stride0.py")], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=False, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    with tarfile.open(json.loads(p.stdout)["bundle"]) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    (root,) = (tmp_path / "x").iterdir()
    plan = json.loads((root / "plan.json").read_text())
    (case,) = plan["cases"]
    assert case["call"]["args"]["g_ptr"]["strides"] == [0]
    got = _replay(interp_python, root)["cases"]["scale_rows.1"]
    assert got["status"] == "ok", got
    if tensors == "small":
        assert got["inputs"]["tensors"]["g_ptr"] == "recorded"
        assert got["outputs"]["out_ptr"]["reference"]["match"] == "exact", got["outputs"]
