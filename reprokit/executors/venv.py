"""The `venv` executor: each stack's pins in a cached virtual environment, for hosts without
Docker (HPC nodes, laptops). Built with uv when it is on PATH, else with venv + pip.

Venvs live under the cache (HostEnv.cache: $REPROKIT_CACHE, default ~/.cache/reprokit)/venvs/<stack>-<spec hash>; a
finished venv is never rebuilt, and a half-built one never becomes visible under that name.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
from pathlib import Path

from reprokit import locks, proc
from reprokit.config import Stack
from reprokit.errors import ExecutorError, FileSystemError, OutputExists
from reprokit.executors.base import Executor, RunResult
from reprokit.executors.local import Warm, run_python_harness
from reprokit.options import HostEnv, Report, Seat, quiet

MARKER = "reprokit-venv.json"


class VenvExecutor(Executor):
    name = "venv"

    def __init__(self, *, host: HostEnv, with_torch: bool = False, python: str | None = None,
                 report: Report = quiet):
        self.host = host
        self.with_torch = with_torch
        # The real interpreter, not a venv's link to it: the spec hash (and so the cache) must not
        # depend on which venv or checkout reprokit itself runs from.
        self.python = python or os.path.realpath(sys.executable)
        self.report = report
        self._warm = Warm(self.host)

    def keep_warm(self, capability: int | None) -> None:
        self._warm.keep(capability)

    def close(self) -> None:
        self._warm.close()

    def spec(self, stack: Stack) -> dict:
        reqs = [f"triton=={stack.triton}"]
        index = None
        if self.with_torch and stack.torch:
            # GPU stacks: torch from its CUDA index, and NVML bindings for the harness's snapshot.
            reqs += [f"torch=={stack.torch}", "nvidia-ml-py"]
            index = stack.torch_index
        return {"requirements": reqs, "torch_index": index, "base_python": self.python}

    def venv_dir(self, stack: Stack) -> Path:
        spec = self.spec(stack)
        return self.host.cache / "venvs" / f"{stack.name}-{stack.spec_hash(json.dumps(spec, sort_keys=True))}"

    def prepare(self, stack: Stack) -> dict:
        target = self.venv_dir(stack)
        facts = {"venv": str(target), "python": str(target / "bin" / "python"), **self.spec(stack)}
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise FileSystemError.of(target.parent, e, "cannot create the venv cache") from None
        locks.sweep(target.parent)  # half-built venvs of builders that were killed
        if (target / MARKER).is_file():
            return {**facts, "reused": True}
        # Builders of one venv wait for each other (a flock, blocking). Opened without O_TRUNC and
        # never removed: a file of that name is flocked, never changed.
        lock_path = target.parent / f".{target.name}.lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            raise FileSystemError.of(lock_path, e, "cannot open the venv's build lock") from None
        with os.fdopen(fd, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (target / MARKER).is_file():  # built by someone else while we waited
                return {**facts, "reused": True}
            if target.exists() or target.is_symlink():  # ours appear whole, marked: this is not one
                raise OutputExists(f"{target} is not a venv reprokit built (no {MARKER}); it was left as it "
                                   "is: move it away, or set REPROKIT_CACHE to another folder")
            with locks.temp(target.parent, target.name, "partial", is_dir=True) as tmp:
                tmp.path.rmdir()  # the name stays ours (locked); venv makes the folder itself
                self._build(stack, tmp, target)
        return {**facts, "reused": False}

    def _build(self, stack: Stack, temp: locks.Temp, target: Path) -> None:
        tmp = temp.path
        spec = self.spec(stack)
        self.report(f"venv: building {stack.name} ({', '.join(spec['requirements'])}) in {target}")
        uv = shutil.which("uv")
        py = str(tmp / "bin" / "python")
        if uv:
            steps = [[uv, "venv", "--python", self.python, str(tmp)],
                     [uv, "pip", "install", "--python", py, *spec["requirements"]]]
        else:
            steps = [[self.python, "-m", "venv", str(tmp)],
                     [py, "-m", "pip", "install", "--disable-pip-version-check", "-q", *spec["requirements"]]]
        if spec["torch_index"]:
            steps[-1] += ["--extra-index-url", spec["torch_index"]]
        if spec.get("no_deps"):
            # Pinned packages whose own requirements must not come (a kernel library that
            # requires a CUDA torch of GBs where the stack has the CPU one): after the rest.
            steps.append([uv, "pip", "install", "--python", py, "--no-deps", *spec["no_deps"]] if uv else
                         [py, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps",
                          *spec["no_deps"]])
        # pip's build and unpack folders: gone with the run, killed or not.
        with locks.run_scratch(self.host.tmp, "prepare") as scratch:
            env = self.host.child_environ({"TMPDIR": str(scratch)})
            for argv in steps:
                r = proc.run(argv, timeout=3600, env=env)
                if not r.ok:
                    last = r.stderr_tail.strip().splitlines()[-1:] or ["no output"]
                    raise ExecutorError(f"venv: building {stack.name} failed at `{' '.join(argv[:4])} ...`: "
                                        f"{last[0]}")
        try:
            (tmp / MARKER).write_text(json.dumps({"stack": stack.pins(), **spec}, indent=1, sort_keys=True))
        except OSError as e:
            raise FileSystemError.of(tmp, e, "cannot write") from None
        # venv scripts hard-code their folder; python -m use below never goes through them.
        temp.finish(target)

    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None, turns: Seat | None = None) -> RunResult:
        python = str(self.venv_dir(stack) / "bin" / "python")
        result = run_python_harness(self, python, capture_dir, workers=workers, timeout_s=timeout_s, scratch=scratch,
                                    started=self._warm.take(python), turns=turns)
        return RunResult(result.executor, result.returncode, result.timed_out, result.log_tail,
                         {**result.runtime, "venv": str(self.venv_dir(stack))})
