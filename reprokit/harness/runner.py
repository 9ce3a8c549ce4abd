"""Running a plan: one forked process per case, N at a time, each with its own fresh cache,
home and timeout; crashes and hangs become results and the run goes on.

The runner imports Triton once and forks per case, so each case pays for its compile but not
for the import. Compile-only, it also loads each kernel module once before forking (once a
throwaway process has shown that the module loads cleanly), so a case does not pay for that
either. The next case's process is forked while the current one compiles; it compiles when a
worker is free, and its timeout counts from then. The runner itself never initialises CUDA or
creates a compiler thread, which is what makes forking it safe.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import re
import select
import shutil
import signal
import sys
import tempfile
import time
from datetime import datetime, timezone

from reprokit.common import oracle, rows
from reprokit.common.files import write_json
from reprokit.harness import FORMAT, compat, reproducer, turns
from reprokit.harness import case as case_mod
from reprokit.harness.kinds import callcase, generated
from reprokit.harness.toolbox import case_timeout, load_module

# MLIR's pass manager names the failing pass; LLVM's crash stack dump names the running one.
_PASS_RES = (
    # "... executing [`Pass` on ...]" without a reproducer path, "... executing `Pass` on ..." with one.
    re.compile(r"Pipeline failed while executing \[?`(\w+)`"),
    re.compile(r"Running pass '([^']+)'"),
)
# The exit status of a case's process when reprokit's own code failed in it (see _spawn): a
# fault of the harness, which must never read as the compiler's crash.
HARNESS_FAULT_EXIT = 70
_CRASH_LINE = re.compile(r"(UNREACHABLE executed.*|Assertion `.*failed\.?|LLVM ERROR: .*|.*\berror: .*|Segmentation fault.*)")


def utcnow() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Job:
    """One process's work: a case, or (repro=True) the rerun of a failed case that records the
    MLIR reproducer, writing into its own scratch so the case's own record stays as it was."""

    def __init__(self, case: dict, case_dir: str, scratch: str, timeout_s: float, repro: bool = False):
        self.case = case
        self.case_dir = case_dir
        self.scratch = scratch
        self.timeout_s = timeout_s
        self.repro = repro
        # set when its process is spawned (_spawn) and started (_go)
        self.pid = 0
        self.wake = -1  # read end: closes when the child is done (or dies)
        self.go = -1  # write end: one byte starts the compile, closing it unsent calls it off
        self.started = 0.0

    def rerun_for_reproducer(self) -> "Job":
        scratch = self.scratch + ".repro"
        os.makedirs(os.path.join(scratch, "out"), exist_ok=True)
        return Job(self.case, os.path.join(scratch, "out"), scratch, self.timeout_s, repro=True)


def _child_env(scratch: str, repro: bool) -> None:
    home = os.path.join(scratch, "home")
    os.makedirs(home, exist_ok=True)
    if repro:
        # Releases write one reproducer per stage (`<path>.make_ttgir.repro.mlir`) or one file
        # at the path itself. Only reruns of failed cases ask for them: with a reproducer path
        # MLIR clones and verifies the module around every pass, which slows every compile by
        # about a tenth and is not how the user's compile ran.
        os.makedirs(os.path.join(scratch, "repro"), exist_ok=True)
        os.environ["TRITON_REPRODUCER_PATH"] = os.path.join(scratch, "repro", "reproducer.mlir")
    os.environ.update({
        "TRITON_CACHE_DIR": os.path.join(scratch, "cache"),
        "TRITON_DUMP_DIR": os.path.join(scratch, "dump"),
        "TRITON_ALWAYS_COMPILE": "1",
        # 3.0 ignores TRITON_DUMP_DIR and writes under ~/.triton: an own HOME keeps cases apart.
        "HOME": home,
        "TRITON_HOME": home,
    })


def _spawn(job: Job, plan: dict, kernels_dir: str) -> None:
    """Fork the case's process. It prepares (loads the kernel module, makes the ASTSource) at
    once and compiles when `_go` says so: the runner forks the next case while the current one
    compiles, so that fork, module load and process exit overlap the compile on a spare core."""
    sys.stdout.flush()
    sys.stderr.flush()
    # The child holds the write end of `wake` until it is done, so the runner wakes the moment it
    # is. (Pipes are close-on-exec: ptxas and other grandchildren never inherit them.)
    wake_r, wake_w = os.pipe()
    go_r, go_w = os.pipe()
    runner_pid = os.getpid()
    pid = os.fork()
    if pid == 0:  # child
        code = HARNESS_FAULT_EXIT
        try:
            die_with_parent(runner_pid)
            os.close(wake_r)
            os.close(go_w)
            os.setpgid(0, 0)
            fd = os.open(os.path.join(job.case_dir, "compile.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
            _child_env(job.scratch, job.repro)
            code = case_mod.child_main(job.case, plan, kernels_dir, job.case_dir,
                                       wait_for_go=lambda: os.read(go_r, 1) == b"g")
            sys.stdout.flush()
            sys.stderr.flush()
            os.close(wake_w)  # done: the runner need not wait for this process's teardown
        except BaseException:  # noqa: BLE001 - a forked case never unwinds into the runner's code
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child got there first, or already exited
    os.close(wake_w)
    os.close(go_r)
    job.pid = pid
    job.wake = wake_r
    job.go = go_w


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux PR_SET_PDEATHSIG), so
    that a killed runner leaves no case compiling on; exit at once if the parent is already gone."""
    try:
        _libc().prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: the host's session kill still applies
    if os.getppid() != parent_pid:
        os._exit(70)


@functools.lru_cache(maxsize=None)
def _libc():
    """This process's C library through ctypes: loaded once in the runner (importing ctypes costs
    a forked case about 2 ms), so every case calls prctl through the copy it inherits."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _go(job: Job) -> None:
    job.started = time.perf_counter()
    try:
        os.write(job.go, b"g")
    except OSError:
        pass  # it died preparing (a kernel module that crashes on import): its wake pipe says so
    os.close(job.go)
    job.go = -1


def _call_off(job: Job) -> None:
    """A prepared case that will not run: closing `go` unsent ends it without a record."""
    os.close(job.go)
    os.close(job.wake)
    _kill_group(job.pid)  # it may still be loading its kernel module


def _kill_group(pid: int, reap: bool = True):
    """SIGKILL a child's process group (it may be gone already); reap it and return its wait
    status unless `reap` is False."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return os.waitpid(pid, 0)[1] if reap else None


def _read_log(case_dir: str) -> str:
    path = os.path.join(case_dir, "compile.log")
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return f.read()


def _finish(job: Job, status: int | None, timed_out: bool) -> tuple[dict, str]:
    """The case's record (from its metadata.json, or from how its process ended), and its log."""
    wall = round(time.perf_counter() - job.started, 4)
    md_path = os.path.join(job.case_dir, "metadata.json")
    log = _read_log(job.case_dir)
    rec = None
    if not timed_out and os.path.exists(md_path):
        with open(md_path) as f:
            rec = json.load(f)
    exit_code, sig = None, None
    if status is not None:
        if os.WIFSIGNALED(status):
            sig = signal.Signals(os.WTERMSIG(status)).name
        else:
            exit_code = os.WEXITSTATUS(status)
    if rec is None:
        rec = {"id": job.case["id"], "artifacts": {}}
        if timed_out:
            rec.update(status="timeout", error=f"no result after {job.timeout_s:g} s: killed", signal="SIGKILL")
        elif exit_code == HARNESS_FAULT_EXIT:
            last = (log.strip().splitlines() or ["no output"])[-1].strip()
            rec.update(status="harness_error", error=f"the harness failed in the case's process: {last[:300]}")
        else:
            m = _CRASH_LINE.search(log)
            what = m.group(1).strip() if m else None
            how = f"killed by {sig}" if sig else f"exited with code {exit_code}"
            rec.update(status="crash", error=f"{what} ({how})" if what else f"compiler process {how}")
    rec.setdefault("exit_code", exit_code)
    rec.setdefault("signal", sig)
    rec["wall_s"] = wall
    rec["failing_pass"] = next((m.group(1) for rx in _PASS_RES for m in [rx.search(log)] if m), None)
    rec["stderr_tail"] = "\n".join(log.rstrip().splitlines()[-40:])
    if log:
        rec["artifacts"]["compile_log"] = "compile.log"
    if rec.get("status") in ("crash", "compile_error", "timeout"):
        _keep_partial_ir(job, rec)
        if rec.get("error") in (None, "PassManager::run failed") or rec.get("status") == "crash":
            diag = _first_diagnostic(log)
            if diag and (rec.get("error") in (None, "PassManager::run failed") or diag not in rec["error"]):
                rec["error"] = diag if rec.get("status") != "crash" else f"{diag} ({rec['error']})"
    return rec, log


def _first_diagnostic(log: str):
    for line in log.splitlines():
        m = re.search(r"\berror: (.*)", line)
        if m and "Failures have been detected" not in m.group(1):
            return m.group(1).strip()[:500]
    return None


def _wants_reproducer(rec: dict, log: str) -> bool:
    """A crash, or a failure inside an MLIR pass pipeline that did not print its reproducer.
    (Front-end errors fail before any pass runs: a rerun would find nothing.)"""
    if rec.get("status") == "crash":
        return True
    return rec.get("status") == "compile_error" and "Pipeline failed" in log


def _take_reproducer(rerun: Job, original_dir: str, rec: dict) -> None:
    """Keep the reproducer of the stage that failed: the newest one the rerun wrote."""
    repro_dir = os.path.join(rerun.scratch, "repro")
    files = [os.path.join(repro_dir, f) for f in os.listdir(repro_dir)] if os.path.isdir(repro_dir) else []
    files = [f for f in files if os.path.getsize(f) > 0]
    dest = os.path.join(original_dir, "reproducer.mlir")
    if files:
        shutil.copyfile(max(files, key=lambda f: os.stat(f).st_mtime_ns), dest)
    else:
        log = _read_log(rerun.case_dir)
        if "mlir_reproducer" not in log:
            return
        with open(dest, "w") as f:  # some releases print it to stderr instead of the path
            f.write(_reproducer_from_log(log))
    rec["artifacts"]["reproducer"] = "reproducer.mlir"


def _keep_partial_ir(job: Job, rec: dict) -> None:
    """A failed compile leaves no asm dict; keep whatever stage dumps it wrote before failing.

    TRITON_KERNEL_DUMP is left to the user: turning it on changes what some releases do (3.6
    then disassembles the cubin itself, and fails on archs its cuobjdump cannot decode).
    """
    for dump in (os.path.join(job.scratch, "dump"), os.path.join(job.scratch, "home", ".triton", "dump")):
        _copy_dumps(dump, job, rec)


def _copy_dumps(dump: str, job: Job, rec: dict) -> None:
    for root, _, files in os.walk(dump):
        for name in sorted(files):
            ext = name.rsplit(".", 1)[-1]
            if ext in ("ttir", "ttgir", "llir", "ptx") and ext not in rec["artifacts"]:
                shutil.copyfile(os.path.join(root, name), os.path.join(job.case_dir, "kernel." + ext))
                rec["artifacts"][ext] = "kernel." + ext


def _reproducer_from_log(log: str) -> str:
    start = log.find("module {")
    end = log.find("#-}", start)
    return log[start:end + 3] + "\n" if start >= 0 and end > start else log


def run_plan(plan: dict, kernels_dir: str, out_dir: str, workers: int = 1, log=print) -> dict:
    """Run every case of the plan; write results.json and summary.tsv under out_dir; return results."""
    import triton  # imported once here so that every forked case starts with it loaded

    t_warm = time.perf_counter()
    warmed = compat.warm_up(plan["profile"]["capability"])
    log(f"warm-up before forking ({', '.join(warmed)}): {time.perf_counter() - t_warm:.2f} s")

    # Declared calls: torch and the driver stand in where absent (compile-only), and autotuned
    # kernels become one case per config; the plan beside the results says so.
    callcase.setup(plan, kernels_dir)
    expanded = callcase.expand_plan(plan, kernels_dir, log)
    if expanded is not plan:
        plan = expanded
        write_json(os.path.join(out_dir, "plan.json"), plan)

    t_load = time.perf_counter()
    loaded = _preload_kernels(plan, kernels_dir) + generated.preload(plan, kernels_dir, log)
    if loaded:
        log(f"kernel modules loaded before forking ({', '.join(loaded)}): {time.perf_counter() - t_load:.2f} s")
    try:
        _libc()
    except OSError:
        pass  # not Linux: die_with_parent says so in each case
    # What the runner holds now is only read by the cases: frozen, a case's garbage collections
    # skip it instead of writing to (and so copying) every page of it.
    gc.freeze()

    cases_root = os.path.join(out_dir, "cases")
    os.makedirs(cases_root, exist_ok=True)
    scratch_root = tempfile.mkdtemp(prefix="reprokit-cases-")
    if plan.get("mode") == "gpu":
        _prepare_gpu(scratch_root, log)
        turns.start_side([c["id"] for c in plan["cases"]])
    started, t0 = utcnow(), time.perf_counter()
    pending: list[Job] = []
    records: dict[str, dict] = {}
    # A resumable plan (a sweep's) streams each record to the disk and skips those already there.
    resumable = bool(plan.get("resumable"))
    for c in plan["cases"]:
        case_dir = os.path.join(cases_root, c["id"])
        if resumable and _load_record(case_dir, records, c["id"]):
            continue
        shutil.rmtree(case_dir, ignore_errors=True)  # a case killed halfway starts clean
        os.makedirs(case_dir, exist_ok=True)
        pending.append(Job(c, case_dir, os.path.join(scratch_root, c["id"]),
                           case_timeout(c, plan)))
    if workers > 1:
        # Longest first, so that no long compile starts last while the other workers idle: the
        # GEMMs take 2-3x a copy kernel's time. (The sort is stable: plan order otherwise.)
        pending.sort(key=lambda job: job.case.get("control") != "gemm")
    pending.reverse()
    running: dict[int, Job] = {}
    done = _recorder(cases_root, records, resumable)
    staged = None  # the next case's process, prepared and waiting for a free worker

    def stage_next():
        nonlocal staged
        while staged is None and pending:
            job = pending.pop()
            reason = compat.missing_requirement(job.case.get("requires", []))
            if reason:  # an attribute lookup: no process needed to say a release lacks an API
                done(job.case["id"], {"id": job.case["id"], "status": "unsupported", "error": reason,
                                      "artifacts": {}, "exit_code": None, "signal": None, "wall_s": 0.0})
                turns.end_case(job.case["id"])
                log(f"{job.case['id']}: unsupported")
                continue
            os.makedirs(job.scratch, exist_ok=True)
            _spawn(job, plan, kernels_dir)
            staged = job

    def start_staged():
        nonlocal staged
        while len(running) < max(1, workers):
            stage_next()
            if staged is None:
                return
            job, staged = staged, None
            _go(job)
            running[job.pid] = job

    parent = os.getppid()
    held = _hold_out_dir(out_dir) if resumable else None
    try:
        start_staged()
        stage_next()
        while running:
            if resumable and os.getppid() != parent:
                # The host that started this run is gone: stop, so that its resume is the only run.
                raise SystemExit("harness: the host process went away; stopping (the run resumes from its records)")
            now = time.perf_counter()
            wait_s = min(job.started + job.timeout_s for job in running.values()) - now
            ready, _, _ = select.select([job.wake for job in running.values()], [], [], max(0.0, min(wait_s, 1.0)))
            now = time.perf_counter()
            finished = []
            for pid, job in list(running.items()):
                timed_out = False
                if job.wake in ready:
                    status = None  # reaped below, once the next case has started
                elif now - job.started > job.timeout_s:
                    status = _kill_group(pid)
                    timed_out = True
                else:
                    continue
                del running[pid]
                finished.append((job, status, timed_out))
            start_staged()  # the next compile goes now; the finished processes are reaped meanwhile
            for job, status, timed_out in finished:
                if status is None:
                    _, status = os.waitpid(job.pid, 0)
                os.close(job.wake)
                cid = job.case["id"]
                if job.repro:
                    _take_reproducer(job, os.path.join(cases_root, cid), records[cid])
                    done(cid, records[cid])
                    continue
                rec, compile_log = _finish(job, status, timed_out)
                turns.end_case(cid)  # whatever became of it: no other stack waits for its rounds
                records[cid] = rec
                log(f"{cid}: {rec['status']} ({rec['wall_s']:.2f} s)")
                if plan.get("reproducers", True) and _wants_reproducer(rec, compile_log):
                    pending.append(job.rerun_for_reproducer())  # next to start
                else:
                    done(cid, rec)
            start_staged()
            stage_next()
    finally:
        if staged is not None:
            _call_off(staged)
        for pid in running:
            _kill_group(pid, reap=False)
        shutil.rmtree(scratch_root, ignore_errors=True)
        seat = turns.seat()
        if seat:
            turns.end_side(seat[0], seat[1])
    judged = _judge_all(plan, records, triton.__version__)
    # One standalone script per case (only Triton needed), in the form this release's ASTSource
    # takes. A sweep's bundle keeps a few hundredths of its points: it writes theirs when it packs.
    # A reduction's candidates need only their records: no reproducers (plan "reproducers": false).
    for cid, why in [] if resumable or not plan.get("reproducers", True) else reproducer.write_all(
            plan, kernels_dir, out_dir, judged, form=compat.astsource_form(), triton_version=triton.__version__):
        log(f"{cid}: no standalone reproducer ({why})")
    results = {
        "format": FORMAT, "harness": _harness_version(), "triton": triton.__version__,
        "target": {"backend": "cuda", "arch": plan["profile"]["capability"], "warp_size": 32},
        "started": started, "finished": utcnow(), "wall_s": round(time.perf_counter() - t0, 3),
        "workers": workers, "mode": plan.get("mode", "compile-only"),
        "cases": judged,
    }
    write_json(os.path.join(out_dir, "results.json"), results)
    write_summary(os.path.join(out_dir, "summary.tsv"), results)
    if held is not None:
        os.close(held)  # the folder's results are whole: a resume may start
    return results


def _preload_kernels(plan: dict, kernels_dir: str) -> list:
    """Compile-only: load the plan's kernel modules here, so that every forked case starts with
    them (executing a module and Triton's @jit reading each kernel's source cost a case about
    20 ms, a quarter of a small compile). A module is loaded here only after a throwaway child
    loaded it and exited cleanly: one that raises, crashes or hangs on import is left to each
    case's own process, which reports it as before. In GPU mode the cases load their modules:
    a module may touch CUDA, which the runner must never do. Returns the files loaded."""
    if plan.get("mode") == "gpu":
        return []
    timeouts: dict[str, float] = {}  # a probe that hangs is given up after its cases' shortest timeout
    for c in plan["cases"]:
        # a generated kernel's module is loaded with its imports served from the bundle (harness.kinds.generated)
        if c.get("language", "triton") == "triton" and c.get("kind") != "generated" \
                and not compat.missing_requirement(c.get("requires", [])):
            t = case_timeout(c, plan)
            file = callcase.kernel_ref(c)[0] if c.get("kind") == "call" else c["kernel"]["file"]
            timeouts[file] = min(t, timeouts.get(file, t))
    return [f for f in sorted(timeouts) if _loads_cleanly(kernels_dir, f, timeouts[f]) and _load_here(kernels_dir, f)]


def _loads_cleanly(kernels_dir: str, file: str, timeout_s: float) -> bool:
    sys.stdout.flush()
    sys.stderr.flush()
    runner_pid = os.getpid()
    pid = os.fork()
    if pid == 0:  # the probe
        code = 1
        try:
            die_with_parent(runner_pid)
            os.setpgid(0, 0)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            load_module(kernels_dir, file)
            code = 0
        finally:
            os._exit(code)
    deadline = time.perf_counter() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if time.perf_counter() > deadline:
            _kill_group(pid)
            return False
        time.sleep(0.005)


def _load_here(kernels_dir: str, file: str) -> bool:
    try:
        load_module(kernels_dir, file)
    except Exception:  # noqa: BLE001 - it loaded in the probe; should it not here, each case loads (and reports) it
        return False
    return True


RECORD = "record.json"


def _hold_out_dir(out_dir: str) -> int:
    """One harness per resumable folder: a resume waits until a previous run's harness has
    stopped. The caller closes the descriptor (and so the lock) when the run ends."""
    import fcntl

    fd = os.open(os.path.join(out_dir, ".harness.lock"), os.O_WRONLY | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _load_record(case_dir: str, records: dict, cid: str) -> bool:
    """A resumable run resumes: a case whose record reached the disk is not run again."""
    try:
        with open(os.path.join(case_dir, RECORD)) as f:
            records[cid] = json.load(f)
    except (OSError, ValueError):
        return False
    return True


def _recorder(cases_root: str, records: dict, stream: bool):
    """done(id, record): keep it, and for a sweep write it to the disk at once (once a failed
    case's reproducer is in), so that a run killed at any moment loses at most the points in flight."""

    def done(cid: str, rec: dict) -> None:
        records[cid] = rec
        if stream:
            write_json(os.path.join(cases_root, cid, RECORD), rec)

    return done


def _prepare_gpu(scratch_root: str, log) -> None:
    """GPU mode: torch is imported here, once, so that each case's process starts with it (it
    initialises no CUDA on import: each case does that in its own process, after the fork); and
    one lock file lets cases compile side by side but use the GPU one at a time: where other
    stacks' harnesses measure beside this one, the lock file all of them share
    (reprokit.harness.turns)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        log("gpu mode: torch is not installed in this stack; cases will say so")
    seat = turns.seat()
    os.environ["REPROKIT_GPU_LOCK"] = os.path.join(seat[0] if seat else scratch_root, "gpu.lock")
    if seat:
        log(f"gpu mode: side {seat[1] + 1} of {seat[2]}: rounds taken in turn with the other stacks' harnesses")


def _judge_all(plan: dict, records: dict, triton_version: str) -> list:
    out = []
    by_id: dict[str, dict] = {}
    for c in plan["cases"]:  # plan order: a P2's gate (its family's P0) is judged before it
        rec = dict(records[c["id"]])
        rec["artifacts"] = {k: f"cases/{c['id']}/{v}" for k, v in rec.get("artifacts", {}).items()}
        rec.update(family=c["family"], control=c["control"],
                   expect=c.get("expect") if c.get("kind") == "call" else c.get("expect", "tma"))
        gate = by_id.get(c.get("gated_by")) if c.get("gated_by") else None
        rec.update(oracle.judge(c, rec, gate, triton_version))
        by_id[c["id"]] = rec
        out.append(rec)
    return out


SUMMARY_COLUMNS = ("id", "family", "control", "status", "verdict", "expect", "met", "ttir", "ttgir", "llir",
                   "ptx", "sass", "shared_bytes", "launch", "compile_s", "gpu")


def write_summary(path: str, results: dict) -> None:
    lines = ["\t".join(SUMMARY_COLUMNS)]
    for r in results["cases"]:
        row = rows.case_cells(r)
        lines.append("\t".join(row[c] for c in SUMMARY_COLUMNS))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _harness_version() -> str:
    # the package's version string only: reprokit/__init__.py defines nothing else.
    from reprokit import __version__

    return __version__
