"""The torch.compile case's collection step on a real Triton cache: kernels compiled by Triton
3.6 from source files the way Inductor writes them (one .py per kernel, its path named in the
wrapper's "# kernel path:" comment) are found in TRITON_CACHE_DIR, copied with their IR and
SASS, counted by the oracle, tied to the wrapper's chosen kernel by that path, and their source
scanned for TMA calls. (Inductor itself needs a GPU to get this far: tests/gpu.)"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

pytestmark = pytest.mark.triton

SCRIPT = textwrap.dedent('''
    import json, os, sys
    cache, work = sys.argv[1], sys.argv[2]
    os.environ["TRITON_CACHE_DIR"] = cache
    import triton
    from reprokit.harness import compat
    from reprokit.harness.kinds import inductor
    from reprokit.harness.toolbox import load_kernel
    src = open("kernels/copy_tensor_descriptor.py").read()
    paths = []
    for i, name in enumerate(("copy_p0", "copy_p0")):  # two candidates, as autotuning compiles
        path = os.path.join(work, "ab", f"c{i}kernel.py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(src + ("\\n# candidate %d\\n" % i))
        fn = load_kernel(os.path.dirname(path), os.path.basename(path), name)
        bm = 128 if i == 0 else 64
        s = compat.make_source(fn, {"src": "*fp16", "dst": "*fp16", "M": "i32", "N": "i32"}, {"BM": bm, "BN": 128},
                               ["src", "dst", "M", "N"])
        triton.compile(s, target=compat.gpu_target(90), options=compat.compile_options(8, 4))
        paths.append(path)
    code = ("# kernel path: %s\\n# Source nodes: [mm]\\ncopy_p0 = async_compile.triton('copy_p0', \\'\\'\\'\\n"
            "import triton\\n\\'\\'\\', device_str='cuda')\\n\\ndef call(args):\\n    copy_p0.run(a, b)\\n" % paths[1])
    case_dir = os.path.join(work, "case")
    os.makedirs(case_dir)
    chosen = inductor.chosen(code)
    kernels = inductor._keep_kernels(case_dir, code, [cache], chosen, {"sass": True})
    print(json.dumps({"chosen": chosen, "kernels": kernels, "paths": paths,
                      "judged": inductor.pick_judged(kernels)[0]["key"]}))
''')


def test_kernels_in_a_real_triton_cache_are_kept_counted_and_tied_to_the_wrapper(stack_ready, venv_executor,
                                                                                  tmp_path, repo_root):
    stack = stack_ready("triton-3.6-cu130")
    python = str(venv_executor.venv_dir(stack) / "bin" / "python")
    p = subprocess.run([python, "-c", SCRIPT, str(tmp_path / "cache"), str(tmp_path)], capture_output=True,
                       text=True, cwd=repo_root, timeout=600, env={"PYTHONPATH": str(repo_root), "HOME": str(tmp_path),
                                                                   "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    kernels = out["kernels"]
    assert out["chosen"] == ["copy_p0"] and len(kernels) == 2 and {k["name"] for k in kernels} == {"copy_p0"}
    (picked,) = [k for k in kernels if k["chosen"]]  # tied by the kernel path, not the shared name
    assert out["judged"] == picked["key"]
    case = tmp_path / "case"
    for k in kernels:
        assert set(k["ir"]) == {"ttir", "ttgir", "llir", "ptx", "sass"}, k["ir"]
        assert all((case / rel).is_file() for rel in k["ir"].values())
        assert k["tma"]["ttgir"] >= 2 and k["tma"]["ptx"] >= 2 and k["tma"]["sass"] >= 2, k["tma"]
        assert k["tma_api"]["make_tensor_descriptor"] >= 1 and (case / k["source"]).is_file()
    assert "candidate 1" in (case / picked["source"]).read_text()
