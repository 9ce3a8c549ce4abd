"""The standalone reproducer's `--launch` (reprokit.harness.reproducer): what the script needs to
launch its case through the installed release's JIT and check the output, as script text.

`launch_spec(case, plan, result)` is the data the script carries (`_LAUNCH`): the suite's launch
recipe and check size for a copy or GEMM (reprokit.harness.kinds.launch.RECIPES); a declared call and
its record's GPU output fingerprints; or why the case cannot be launched. `script(kind)` is the
launch code: the harness's own functions inlined (launch.Bound, launch.check, call.bind,
callgpu.launch_and_check, callgpu.compare_outputs, stats.tolerance, stats.classify_launch_error
...), so the script's inputs, reference and tolerance are the GPU run's, by one rule. The script
runs on a GPU, or on the CPU under TRITON_INTERPRET=1 with a CPU torch (how CI tests it).
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import pprint
import re
import tokenize

from reprokit.common import shapes
from reprokit.harness import call, stats, tmafill
from reprokit.harness.kinds import callgpu, launch


def inline(*objects, modules: tuple = (), rename: dict | None = None) -> str:
    """The harness's own functions and classes as script text: function annotations dropped (the
    script runs on Python 3.9 without `from __future__`), class-level ones replaced by `object`
    (a dataclass keeps its fields), `mod.name` written `name` for each module of `modules` that
    defines `name` (its functions are inlined beside; `call.get` on a dict named `call` stays),
    names in `rename` renamed (two modules' `Bound`), and comments dropped.

    The text is the source's own, edited where the syntax tree says, never the tree printed back
    (ast.unparse): how a tree is printed changes between Pythons (3.12 writes f-strings with
    nested quotes that 3.9-3.11 cannot parse), and a reproducer must be the same bytes, and run,
    whichever Python wrote it."""
    names = {m.__name__.rsplit(".", 1)[-1]: m for m in modules}
    return "\n\n\n".join(_edited(inspect.getsource(obj), names, rename or {}) for obj in objects)


def _edited(src: str, modules: dict, rename: dict) -> str:
    """`src` with inline()'s edits, made on its UTF-8 bytes (the tree's columns count bytes)."""
    data = src.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def at(line: int, col: int) -> int:
        return starts[line - 1] + col

    def span(node) -> tuple[int, int]:
        return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)

    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.returns is not None:
                begin, end = span(node.returns)
                arrow = data.rindex(b"->", 0, begin)
                while data[arrow - 1:arrow] in (b" ", b"\t"):
                    arrow -= 1
                edits.append((arrow, end, ""))
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None:
                    begin = at(arg.lineno, arg.col_offset) + len(arg.arg.encode())
                    end = span(arg.annotation)[1]
                    spaced = re.match(rb"\s*=\s*", data[end:])  # `x: int = 3` becomes `x=3`
                    edits.append((begin, end + (spaced.end() if spaced else 0), "=" if spaced else ""))
        elif isinstance(node, ast.ClassDef):
            if node.name in rename:
                word = re.compile(rb"class\s+" + re.escape(node.name.encode()) + rb"\b").search(data, at(node.lineno, node.col_offset))
                assert word is not None
                edits.append((word.end() - len(node.name.encode()), word.end(), rename[node.name]))
            for item in node.body:
                if isinstance(item, ast.AnnAssign):
                    edits.append((*span(item.annotation), "object"))
        elif isinstance(node, ast.Attribute):
            v = node.value
            if isinstance(v, ast.Name) and v.id in modules and hasattr(modules[v.id], node.attr):
                edits.append((*span(node), rename.get(node.attr, node.attr)))
        elif isinstance(node, ast.Name) and node.id in rename:
            edits.append((*span(node), rename[node.id]))
    out, last = [], 0
    for begin, end, text in sorted(edits, key=lambda e: (e[0], -e[1])):
        if begin < last:  # inside an edit already made (a name inside a dropped annotation)
            continue
        out += [data[last:begin], text.encode()]
        last = end
    out.append(data[last:])
    return _without_comments(b"".join(out).decode())


def _without_comments(src: str) -> str:
    """`src` less its comments: a line that held only a comment goes, a trailing one is cut."""
    lines = io.StringIO(src).readlines()  # lines as tokenize counts them (\n only, not str.splitlines' \x0c)
    cuts = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            cuts[tok.start[0] - 1] = tok.start[1]
    kept = []
    for i, line in enumerate(lines):
        if i not in cuts:
            kept.append(line)
        elif line[:cuts[i]].strip():
            kept.append(line[:cuts[i]].rstrip() + "\n")
    return "".join(kept).rstrip("\n")


def _constants(module, *names: str) -> str:
    out = []
    for name in names:
        v = getattr(module, name)
        if hasattr(v, "pattern"):  # a compiled regex
            out.append(f"{name} = re.compile({v.pattern!r}, {int(v.flags)})")
        else:
            out.append(f"{name} = {pprint.pformat(v, width=120, sort_dicts=True)}")
    return "\n".join(out)


def literal(spec: dict) -> str:
    """The launch spec as a Python literal in its own order: a call's arguments are filled from
    one seeded generator in the order the call gives them, so they must not be sorted."""
    return pprint.pformat(spec, width=120, sort_dicts=False)


def launch_spec(case: dict, plan: dict, result: dict | None = None) -> dict:
    """What the script's `--launch` needs: {"recipe", "case", "size"} for a suite kernel with a
    launch recipe; {"call", "function", "recorded"} for a declared call (`recorded`: the seed,
    device and output fingerprints of the record's GPU run, when it has them); else {"none":
    why it cannot be launched}."""
    if case.get("kind") == "call":
        gpu = (result or {}).get("gpu") or {}
        # outputs the GPU run made from a trace's recorded tensors are not what the seed gives
        seeded = (gpu.get("inputs") or {}).get("source", "seed") in ("seed", "none")
        recorded = ({"seed": gpu["seed"], "device": gpu.get("device"), "outputs": gpu["outputs"]}
                    if gpu.get("outputs") and "seed" in gpu and seeded else None)
        return {"call": {"call": case["call"], "autotune": case.get("autotune")},
                "function": case["kernel"]["function"], "recorded": recorded}
    recipe, why = launch.recipe_for(case)
    if recipe is None:
        return {"none": why}
    keep = {"family": case["family"], "kernel": {"function": case["kernel"]["function"]},
            "constexprs": dict(case.get("constexprs") or {}), "num_warps": case["num_warps"],
            "num_stages": case["num_stages"]}
    return {"recipe": {"kind": recipe.kind, "args": recipe.args, "grid": recipe.grid, "tails": recipe.tails,
                       "bench": recipe.bench},
            "case": keep, "size": launch.check_size(case, recipe, plan.get("problem") or {})}


@functools.lru_cache(maxsize=3)
def script(spec_kind: str) -> str:
    """The launch code of a reproducer whose `_LAUNCH` is of `spec_kind` (launch_kind): only
    what that case runs is inlined (a script carries no GEMM code for a call, and neither for a
    case it cannot launch)."""
    parts = []
    if spec_kind != "none":
        parts += [_constants(stats, "TOLERANCES", "_OOR", "_CUDA_ERR"),
                  inline(stats.tolerance, stats.within, stats.classify_launch_error),
                  f"DETERMINISM_RUNS = {_SCRIPT_RUNS}"]
    if spec_kind == "suite":
        parts += ["POISON = float('nan')",
                  inline(launch._cdiv, launch.Recipe, launch.Bound, launch._set_allocator,
                         launch.experimental_descriptor, launch.output_digest, launch.check, launch.determinism,
                         modules=(stats,))]
    if spec_kind == "call":
        parts += [("# reprokit.harness.call's binding, callgpu's seeded inputs and fingerprints.\n"
                   "SEED = 0\nmake_tensor = None  # the harness's stand-in tensors: the script makes real ones"),
                  inline(launch._set_allocator),
                  inline(call.CallError, call.Unsupported, call.Refused, call._is_autotuner, call._is_heuristics,
                         call.layers, call.jit_function, call.fixes_config, call.value_of, call._host_descriptor,
                         call._apply_heuristics, call.Bound, call.bind, call.kernel_name, modules=(call, stats),
                         rename={"Bound": "CallBound"}),
                  _constants(callgpu, "PROBES"),
                  # 3.0-3.3 host-filled descriptors, filled again over the script's own tensors.
                  _constants(tmafill, "DESC_BYTES"),
                  inline(tmafill.Rebuild, tmafill.plan, tmafill.numel, tmafill.release_fill, tmafill.rebuild,
                         tmafill.write, tmafill.unfilled),
                  inline(shapes.contiguous_strides, callgpu.make_tensor_factory, callgpu._write, callgpu._random, callgpu._tensors,
                         callgpu._same_views, callgpu.digest, callgpu._plain, callgpu.summary, callgpu.against, callgpu._by_name,
                         callgpu._source, callgpu.launch_and_check, callgpu.compare_outputs, callgpu.compare_output,
                         callgpu.probe_error, modules=(call, shapes, stats, tmafill))]
    return _HEAD + "\n\n\n".join(parts) + "\n\n\n" + _CODE


def launch_kind(spec: dict) -> str:
    """"suite", "call" or "none": which launch code a script with this `_LAUNCH` needs."""
    return "call" if "call" in spec else "none" if "none" in spec else "suite"


# Launches per determinism check: two give the same bytes or not (the GPU run makes five; the
# interpreter is slow).
_SCRIPT_RUNS = 2

# The text below names the modules by their paths before harness/kinds/ (launch and callgpu
# live there now): every committed reproducer holds it byte for byte (bundle/templates.py).
_HEAD = '''# ---- --launch: the case's kernel through this release's JIT, seeded inputs, the check -------
# reprokit's own inputs, reference and tolerance, inlined (reprokit.harness.launch or call and
# callgpu, and stats): the GPU run's rule, not a copy of it.

import ctypes, hashlib  # noqa: E401
from dataclasses import dataclass


'''

_CODE = r'''

def _parse_size(text, kind):
    """`--size 256`, `256x512` or `256x512x128`: M, N (and K for a GEMM); a test and debug aid."""
    dims = [int(d) for d in text.lower().split("x")]
    names = ("M", "N", "K") if kind == "gemm" else ("M", "N")
    if not dims or len(dims) > len(names) or min(dims) <= 0:
        raise ValueError("--size takes M, MxN%s (positive integers), not %r" % ("xK" if kind == "gemm" else "", text))
    dims += [dims[-1]] * (len(names) - len(dims))
    return dict(zip(names, dims))


def _launch_options(argv):
    """None without --launch; else (seed, size: the suite's M, N, K), or why the launch cannot be made (exit 2)."""
    if "--launch" not in argv:
        return None
    if "none" in _LAUNCH:
        return "--launch: this case cannot be launched by the script: " + _LAUNCH["none"]
    if "--size" in argv and "call" in _LAUNCH:
        return "--launch: --size is for the suite's copies and GEMMs; a declared call keeps its recorded shapes"
    seed, size = 0, dict(_LAUNCH.get("size") or {})
    try:
        if "--seed" in argv:
            seed = int(argv[argv.index("--seed") + 1])
        if "--size" in argv:
            size = _parse_size(argv[argv.index("--size") + 1], _LAUNCH["recipe"]["kind"])
    except (IndexError, ValueError) as e:
        return "--launch: %s" % (e if isinstance(e, ValueError) and "--size" in str(e) else "--seed takes an integer, --size MxN[xK]")
    try:
        import torch  # noqa: F401
    except ImportError:
        return "--launch needs torch (pip install torch), beside triton"
    device, why = _launch_device()
    if device is None:
        return "--launch: " + why
    return seed, size


def _launch_device():
    """("cuda" or "cpu", None), or (None, why there is nothing to launch on)."""
    import torch

    if os.environ.get("TRITON_INTERPRET") == "1":
        return "cpu", None  # the interpreter runs the kernel on the CPU, tensors on the host
    if not torch.cuda.is_available():
        return None, "no CUDA device here (torch %s); on a CPU, set TRITON_INTERPRET=1 to run the kernel in Triton's interpreter" % torch.__version__
    return "cuda", None


def _launch(seed, size):
    """Launch the case once on seeded inputs (the output poisoned first), check it against torch
    (copies bit-exact, GEMMs within the suite's fp16 tolerance), then relaunch for determinism.
    A failure of the launch itself is its status (launch_error, out_of_resources, ...); an
    exception while the inputs are made is the script's (script_error)."""
    import torch
    import triton
    import traceback

    spec = _LAUNCH
    device, why = _launch_device()
    if device is None:
        return {"status": "not_launched", "reason": why}
    if "call" in spec:
        return _launch_call(seed, device)
    recipe = Recipe(**spec["recipe"])
    fn = globals()[spec["case"]["kernel"]["function"]]
    if device == "cuda":
        torch.cuda.init()
    out = {"status": "ok", "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (TRITON_INTERPRET=1)",
           "seed": seed, "size": size}
    bound = Bound(torch, triton, fn, spec["case"], recipe, size, seed=seed, device=device)
    try:
        bound.poison()
        bound.run()
        if device == "cuda":
            torch.cuda.synchronize()
        out["correctness"] = check(torch, bound.out, bound.reference(), exact=recipe.kind == "copy")
        out["determinism"] = determinism(torch, bound, DETERMINISM_RUNS)
    except Exception as e:  # the runtime's refusal of this launch is the result
        traceback.print_exc()
        out.update(classify_launch_error(type(e).__name__, str(e)))
        return out
    if not out["correctness"]["ok"]:
        out["status"] = "wrong"
    elif not out["determinism"]["deterministic"]:
        out["status"] = "nondeterministic"
    return out


def _launch_call(seed, device):
    """A declared call: its arguments made from the seed at the recorded shapes, dtypes, strides
    and alignment, launched through the release's JIT (decorators applied as Triton applies
    them), relaunched from the same inputs for determinism; the outputs (the tensors the launch
    changed) compared with the record's GPU run when it ran with this seed (bit-exact by sha256,
    else within the dtype's tolerance), else held to determinism alone."""
    import torch
    import traceback

    import triton

    spec = _LAUNCH
    fn = globals()[spec["function"]]
    if device == "cuda":
        torch.cuda.init()
    _set_allocator(torch, triton, device)  # device-side descriptors' scratch (3.4+), as the GPU run sets it
    out = {"status": "ok", "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (TRITON_INTERPRET=1)",
           "seed": seed}
    try:
        _, _, rec = launch_and_check(torch, fn, spec["call"], device, seed, DETERMINISM_RUNS)
    except Exception as e:  # the runtime's (or the kernel's own hook's) refusal of this launch is the result
        traceback.print_exc()
        out.update(classify_launch_error(type(e).__name__, str(e)))
        return out
    out.update(rec)
    recorded = spec["recorded"]
    if recorded is not None and recorded["seed"] == seed:
        out["against"] = "the recorded GPU run (%s, seed %d)" % (recorded["device"], recorded["seed"])
        out["compared"] = compare_outputs(out["outputs"], recorded["outputs"])
    else:
        out["against"] = "determinism only (%s)" % ("no GPU run recorded" if recorded is None
                                                     else "the GPU run used seed %d" % recorded["seed"])
    if not out["outputs"]:
        out["status"] = "no_output"
    elif any(v not in ("exact", "close") for v in (out.get("compared") or {}).values()):
        out["status"] = "wrong"
    elif not out["determinism"]["deterministic"]:
        out["status"] = "nondeterministic"
    return out


def _launch_lines(res):
    """The launch's outcome in a few lines of text."""
    if res["status"] == "not_launched":
        return ["launch: not launched (%s)" % res["reason"]]
    if "size" not in res:  # a declared call
        lines = ["launch: %s on %s, seed %d, checked against %s" % (res["status"], res["device"], res["seed"],
                                                                   res.get("against", "nothing"))]
        if "error" in res:
            return lines + ["  " + res["error"]]
        for name, o in sorted(res["outputs"].items()):
            how = (res.get("compared") or {}).get(name)
            lines.append("  %s: %s %s, sha256 %s, sum %g, %d NaN%s" % (
                name, o["dtype"], "x".join(map(str, o["shape"])), o["sha256"][:16], o["sum"], o["nan"],
                "" if how is None else "; %s" % ("bit-exact" if how == "exact" else
                                                 "within the %s tolerance" % o["dtype"] if how == "close" else "DIFFERS")))
        for name in sorted(set(res.get("compared") or {}) - set(res["outputs"])):
            lines.append("  %s: the recorded run changed it, this launch did not (DIFFERS)" % name)
        d = res["determinism"]
        return lines + ["  determinism: %d launches, %d distinct outputs" % (d["runs"], d["distinct"])]
    size = "x".join(str(res["size"][k]) for k in ("M", "N", "K") if k in res["size"])
    head = "launch: %s on %s, %s, seed %d" % (res["status"], res["device"], size, res["seed"])
    if "correctness" not in res:
        return [head, "  " + res.get("error", "")]
    c, d = res["correctness"], res["determinism"]
    tol = c["tolerance"]
    how = "bit-exact" if not (tol["rtol"] or tol["atol"]) else "rtol %g, atol %g" % (tol["rtol"], tol["atol"])
    lines = [head, "  check against torch (%s): %s; %d of %d elements differ, %d unwritten, max abs err %g" % (
        how, "ok" if c["ok"] else "WRONG", c["mismatched"], c["elements"], c["unwritten"], c["max_abs_err"]),
        "  determinism: %d launches, %d distinct outputs" % (d["runs"], d["distinct"])]
    return lines
'''
