"""The standalone reproducer's `--launch` (reprokit.harness.reproducer): what the script needs to
launch its case through the installed release's JIT and check the output, as script text.

`launch_spec(case, plan)` is the data the script carries: the suite's launch recipe for the case
(reprokit.harness.launch.RECIPES) and its check size, or why it cannot be launched. `SCRIPT` is
the script's launch code: the harness's own functions inlined (launch.Bound, launch.check,
launch.determinism, stats.tolerance, stats.classify_launch_error ...), so the script's inputs,
reference and tolerance are the GPU run's, by one rule. The script runs on a GPU, or on the CPU
under TRITON_INTERPRET=1 with a CPU torch (how CI tests it).
"""

from __future__ import annotations

import ast
import functools
import inspect
import pprint

from reprokit.harness import launch, stats


def inline(*objects, modules: tuple = ()) -> str:
    """The harness's own functions and classes as script text: function annotations dropped (the
    script runs on Python 3.9 without `from __future__`), class-level ones replaced by `object`
    (a dataclass keeps its fields), and `mod.name` written `name` for each of `modules` (its
    functions are inlined beside)."""
    out = []
    for obj in objects:
        tree = ast.parse(inspect.getsource(obj))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                node.returns = None
                for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    a.annotation = None
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign):
                        item.annotation = ast.Name("object", ast.Load())
        tree = _Unqualify(set(modules)).visit(tree)
        out.append(ast.unparse(ast.fix_missing_locations(tree)))
    return "\n\n\n".join(out)


class _Unqualify(ast.NodeTransformer):
    def __init__(self, modules: set):
        self.modules = modules

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id in self.modules:
            return ast.copy_location(ast.Name(node.attr, node.ctx), node)
        return node


def _constants(module, *names: str) -> str:
    out = []
    for name in names:
        v = getattr(module, name)
        if hasattr(v, "pattern"):  # a compiled regex
            out.append(f"{name} = re.compile({v.pattern!r}, {int(v.flags)})")
        else:
            out.append(f"{name} = {pprint.pformat(v, width=120, sort_dicts=True)}")
    return "\n".join(out)


def launch_spec(case: dict, plan: dict) -> dict:
    """What the script's `--launch` needs: {"recipe", "case", "size"} for a suite kernel with a
    launch recipe, else {"none": why it cannot be launched}."""
    if case.get("kind") == "call":
        return {"none": "a declared call is launched by reprokit's GPU run (reprokit run --mode gpu), "
                        "not by this script"}
    recipe, why = launch.recipe_for(case)
    if recipe is None:
        return {"none": why}
    keep = {"family": case["family"], "kernel": {"function": case["kernel"]["function"]},
            "constexprs": dict(case.get("constexprs") or {}), "num_warps": case["num_warps"],
            "num_stages": case["num_stages"]}
    return {"recipe": {"kind": recipe.kind, "args": recipe.args, "grid": recipe.grid, "tails": recipe.tails,
                       "bench": recipe.bench},
            "case": keep, "size": launch.check_size(case, recipe, plan.get("problem") or {})}


@functools.lru_cache(maxsize=1)
def script() -> str:
    """The launch code of every reproducer (the same text for all: the case's data is `_LAUNCH`)."""
    shared = "\n\n\n".join([
        _constants(stats, "TOLERANCES", "_OOR", "_CUDA_ERR"),
        inline(stats.tolerance, stats.within, stats.classify_launch_error),
        f"POISON = float('nan')\nDETERMINISM_RUNS = {_SCRIPT_RUNS}",
        inline(launch._cdiv, launch.Recipe, launch.Bound, launch._set_allocator, launch.experimental_descriptor,
               launch.output_digest, launch.check, launch.determinism, modules=("stats",)),
    ])
    return _HEAD + shared + "\n\n\n" + _CODE


# Launches per determinism check: two give the same bytes or not (the GPU run makes five; the
# interpreter is slow).
_SCRIPT_RUNS = 2

_HEAD = '''# ---- --launch: the case's kernel through this release's JIT, seeded inputs, the check -------
# reprokit's own launch recipe, reference and tolerance, inlined (reprokit.harness.launch, stats).

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


def _launch_lines(res):
    """The launch's outcome in a few lines of text."""
    if res["status"] == "not_launched":
        return ["launch: not launched (%s)" % res["reason"]]
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
