"""Declared call cases in the harness: what the runner and a case's process do with them.

The runner, before it forks: `setup` (torch, numpy and the driver stand in where absent) and
`expand_plan` (call cases normalised; an autotuned kernel's case becomes one case per config,
`<id>.cfg<i>`, and the plan beside the results names them). A case's process: `prepare` (its
kernel file loaded and the call specialised by the release's JIT, reprokit.harness.call) and
`compile_case` (through reprokit.harness.kinds.triton_case, the suite's path). On a GPU,
reprokit.harness.kinds.callgpu launches it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import select
import signal
import sys
import time
from dataclasses import dataclass, field

from reprokit.harness import standin
from reprokit.harness.call import Derived, Refused, Unsupported, autotune_facts, derive

SUFFIX = ".cfg"  # autotuned case `x` expands to `x.cfg0`, `x.cfg1`, ...


@dataclass(frozen=True)
class Prepared:
    """A call case ready to compile (`derived`), or the result it already has (`result`: the
    JIT refused the call, or this release lacks an API it needs)."""

    derived: Derived | None
    result: dict = field(default_factory=dict)


def setup(plan: dict, kernels_dir: str | None = None) -> None:
    """Before a kernel file loads: `import torch` works (the stand-in when torch is absent);
    compile-only, `triton.runtime.driver.active` answers for the plan's GPU profile; and a
    kernel file imports the modules beside it as it does at home (_KernelFolders, by paths
    relative to the kernels' parent folder, so no host path reaches the IR's source
    locations). Done once in the runner (the cases' processes inherit it) and again,
    harmlessly, in each case."""
    calls = [c for c in plan["cases"] if c.get("kind") == "call"]
    if not calls:
        return
    if kernels_dir is not None:
        folders = sorted({os.path.dirname(os.path.join(kernels_dir, kernel_ref(c)[0])) for c in calls})
        finder = next((f for f in sys.meta_path if isinstance(f, _KernelFolders)), None)
        if finder is None:
            sys.meta_path.append(_KernelFolders(folders))  # last: installed packages win, as on sys.path's end
        else:
            finder.folders = sorted(set(finder.folders) | set(folders))
    standin.ensure_torch()
    standin.ensure_numpy()
    if plan.get("mode", "compile-only") != "gpu" and not standin.active_is_standin():
        standin.install_driver(plan["profile"])


class _KernelLoader(importlib.abc.Loader):
    """Executes a module beside a kernel file from its source, compiled under its path relative
    to the kernels' parent folder (as toolbox.load_module does for the kernel file itself): the
    IR's source locations name `kernels/...`, and no bytecode cache is written into the folder."""

    def __init__(self, path: str):
        self.path = path

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        module.__file__ = self.path
        with open(self.path) as f:
            code = compile(f.read(), self.path, "exec")
        exec(code, module.__dict__)  # noqa: S102 - running the user's module is what loading it means


class _KernelFolders(importlib.abc.MetaPathFinder):
    """Finds the modules and packages that sit beside a declared call's kernel file."""

    def __init__(self, folders: list):
        self.folders = list(folders)

    def find_spec(self, name, path=None, target=None):
        if path is not None:  # a submodule: only of a package found here
            path = [p for p in path if any(p == f or p.startswith(f + os.sep) for f in self.folders)]
            if not path:
                return None
        leaf = name.rpartition(".")[2]
        for d in path if path is not None else self.folders:
            f = os.path.join(d, leaf + ".py")
            if os.path.isfile(f):
                return importlib.util.spec_from_loader(name, _KernelLoader(f), origin=f)
            init = os.path.join(d, leaf, "__init__.py")
            if os.path.isfile(init):
                spec = importlib.util.spec_from_loader(name, _KernelLoader(init), origin=init, is_package=True)
                spec.submodule_search_locations = [os.path.join(d, leaf)]
                return spec
        return None


def _unloadable(case: dict, e: BaseException) -> Prepared:
    """A traced kernel whose file does not load in this harness (a package it imports raises
    without the program's own setup, or is not installed here): reprokit could not recreate what
    the program ran, `capture_failed`, never the compiler's failure. A declared case's file is the
    user's to fix: its error is raised as the harness's."""
    if not case.get("trace"):
        raise e
    # loaded where a call case compiles, in its own process (as prepare's own import below)
    from reprokit.harness.toolbox import one_line

    return Prepared(None, {"status": "capture_failed",
                           "error": f"{kernel_ref(case)[0]} could not be loaded here: {type(e).__name__}: {one_line(e)}"})


def prepare(case: dict, plan: dict, kernels_dir: str) -> Prepared:
    """Load the user's kernel file and derive the call's specialisation through the release's JIT."""
    # loaded where a call case compiles, in its own process (triton_case imports Triton).
    from reprokit.harness.toolbox import load_kernel, one_line

    setup(plan, kernels_dir)
    try:
        obj = load_kernel(kernels_dir, *kernel_ref(case))
    except ImportError as e:
        missing = getattr(e, "name", None) or ""
        if missing.split(".")[0] != "triton":
            return _unloadable(case, e)
        import triton

        # e.g. `from triton.tools.tensor_descriptor import TensorDescriptor` before 3.4
        return Prepared(None, {"status": "unsupported", "error": f"triton {triton.__version__} lacks {missing} "
                                                                   f"({kernel_ref(case)[0]} imports it)"})
    except Exception as e:  # noqa: BLE001 - a traced kernel's file that cannot load here: _unloadable
        return _unloadable(case, e)
    gpu = plan.get("mode") == "gpu"
    try:
        d = derive(obj, case["call"], config=(case.get("autotune") or {}).get("config"),
                   driver_profile=None if gpu else plan["profile"])
    except Unsupported as e:
        return Prepared(None, {"status": "unsupported", "error": str(e)})
    except Refused as e:
        cause = e.__cause__ or e  # always set: Refused is raised `from` the call's own exception
        import traceback

        traceback.print_exception(type(cause), cause, cause.__traceback__)
        return Prepared(None, {"status": "compile_error", "exception": type(cause).__name__,
                               "error": f"the JIT refused the call: {type(cause).__name__}: {one_line(cause)}"})
    return Prepared(d)


def compile_case(case: dict, plan: dict, case_dir: str, prepared: Prepared) -> dict:
    """Compile the JIT's own ASTSource with the JIT's own options, through the suite's path."""
    # loaded where a call case compiles, in its own process (triton_case imports Triton).
    from reprokit.harness.kinds import triton_case

    if prepared.derived is None:
        return {"id": case["id"], "artifacts": {}, **prepared.result}
    d = prepared.derived
    # loaded where a call case compiles: a traced call starts from the program's own compile,
    # with the ptxas the program chose
    from reprokit.harness import toolchain
    from reprokit.harness.kinds.generated import seeded  # noqa: I001 - as toolchain, loaded where a call compiles

    tools = toolchain.use(case)  # the ptxas the program chose, where it chose one (Inductor's, torch's)
    seeded(case, plan)
    rec = triton_case.compile_case(case, plan, case_dir, d.src, options=d.options)
    rec["call"] = d.spec
    if tools:
        rec["toolchain"] = tools
    # a traced call that recorded its program's compile is held to it (not_reproduced when it differs)
    from reprokit.harness.kinds.generated import held_to_program  # noqa: I001 - beside its use, as seeded above

    held_to_program(case, plan, case_dir, rec)
    expect = case.get("expect") or ""
    if expect.startswith("sass:") and "sass" in rec["artifacts"]:  # the oracle judges from the count
        # loaded where a call case compiles, in its own process (triton_case imports Triton).
        from reprokit.common.oracle import sass_op_count

        with open(os.path.join(case_dir, rec["artifacts"]["sass"]), errors="replace") as f:
            rec["expect_seen"] = {expect: sass_op_count(expect[5:], f.read())}
    return rec


def kernel_ref(case: dict) -> tuple:
    """(file, function) of a call case: top-level as docs/user-cases.md writes them, or under
    `kernel` as traced plans also carry them."""
    k = case.get("kernel") or {}
    return case.get("file") or k["file"], case.get("function") or k["function"]


def family(case: dict) -> str:
    return case.get("family") or kernel_ref(case)[1]


def normalise_case(case: dict) -> dict:
    """A call case with what every record carries: its family (the kernel's name unless the
    plan names one), control ("call") and expect (null when it states none)."""
    return {**case, "family": family(case), "control": case.get("control") or "call", "expect": case.get("expect")}


def expand_plan(plan: dict, kernels_dir: str, log=print) -> dict:
    """The plan with every call case normalised and every autotuned one expanded to one case
    per config it selects (`x.cfg<i>`, carrying `autotune: {config, count}`; `autotune: null`
    on a call that is not expanded): the same plan when there is nothing to do. How many configs each kernel has is read in a throwaway
    process (the kernel file's code runs there, never in the runner)."""
    todo = [c for c in plan["cases"] if c.get("kind") == "call" and "autotune" not in c]
    refs = sorted({kernel_ref(c) for c in todo})
    if not todo and all(c.get("kind") != "call" or {"family", "control", "expect"} <= set(c) for c in plan["cases"]):
        return plan
    facts = _autotune_facts(plan, kernels_dir, refs)
    cases = []
    for c in plan["cases"]:
        if c.get("kind") != "call":
            cases.append(c)
            continue
        c = normalise_case(c)
        file, function = kernel_ref(c)
        ref = f"{file}:{function}"
        if "autotune" in c or ref not in facts:
            cases.append(c)  # already expanded or settled, or its file did not load: left as it is
            continue
        fact = facts[ref]
        args = (c.get("call") or {}).get("args") or {}
        if fact is None or (fact["keys"] and set(fact["keys"]) <= set(args)):
            # not autotuned, or the call names one config itself (a traced launch): settled, so
            # that a replay of this plan need not load the file to ask again
            cases.append({**c, "autotune": None})
            continue
        n = fact["count"]
        pick = c.get("configs", "all")
        if pick in (None, "all"):
            picked, bad = list(range(n)), []
        else:
            listed = pick if isinstance(pick, list) else [pick]
            picked = [i for i in listed if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n]
            bad = [i for i in listed if i not in picked]
        if bad:
            log(f"{c['id']}: configs {bad} are not among the kernel's {n} configs: left out")
        if not picked:  # left as it is: its own process says that no config was named
            cases.append(c)
            continue
        base = {k: v for k, v in c.items() if k != "configs"}
        for i in picked:
            cases.append({**base, "id": f"{c['id']}{SUFFIX}{i}", "autotune": {"config": i, "count": n}})
    return {**plan, "cases": cases}


def _autotune_facts(plan: dict, kernels_dir: str, kernels: list) -> dict:
    """"file:function" -> autotune_facts() (None: not autotuned), for the kernels whose files
    load; read in a forked child that reports through a pipe."""
    if not kernels:
        return {}
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: load, count, report, exit
        code = 1
        try:
            os.close(r)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            # loaded where a call case compiles, in its own process (triton_case imports Triton).
            from reprokit.harness.toolbox import load_kernel

            setup(plan, kernels_dir)
            out = {}
            for file, function in kernels:
                try:
                    out[f"{file}:{function}"] = autotune_facts(load_kernel(kernels_dir, file, function))
                except Exception:  # noqa: BLE001, S112 - the case's own process loads it again and reports why
                    continue
            os.write(w, json.dumps(out).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    chunks, deadline = [], time.monotonic() + float(plan.get("timeout_s") or 300)
    while True:
        ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
        b = os.read(r, 65536) if ready else b""
        if not b:
            break
        chunks.append(b)
    os.close(r)
    if not ready:  # a kernel file that hangs on import: its cases' own processes time out on it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        chunks = []
    os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {}
