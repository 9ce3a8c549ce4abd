"""An executor whose harness run writes the records a test scripts, stack by stack: the Executor
interface itself, with no stack, compiler or GPU behind it. What runs stacks (bisect's search)
is tested through it over the real spine: plan, capture folder, results parsed, bundle packed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from reprokit.config import Stack
from reprokit.executors import Executor, RunResult
from reprokit.options import HostEnv
from tests.helpers.fake_capture import FINISHED, STARTED, env_doc

# (stack, plan case) -> what the harness would have recorded for it: status, verdict, met, ...
Script = Callable[[Stack, dict], dict]


class ScriptedExecutor(Executor):
    name = "scripted"

    def __init__(self, script: Script, host: HostEnv):
        self.script, self.host = script, host
        self.ran: list[str] = []  # the Triton of each harness run, in order

    def prepare(self, stack: Stack) -> dict:
        return {}

    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None, turns=None) -> RunResult:
        self.ran.append(stack.triton)
        plan = json.loads((capture_dir / "plan.json").read_text())
        cases = [{"id": c["id"], "family": c["family"], "control": c["control"], "expect": c.get("expect", "tma"),
                  "artifacts": {}, "reason": "", "met": None, **self.script(stack, c)} for c in plan["cases"]]
        results = {"format": 1, "harness": "0.1.0", "triton": stack.triton,
                   "target": {"backend": "cuda", "arch": 90, "warp_size": 32}, "started": STARTED,
                   "finished": FINISHED, "wall_s": 0.1, "workers": workers, "mode": plan["mode"], "cases": cases}
        for name, doc in (("env.json", env_doc()), ("results.json", results)):
            (capture_dir / name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return RunResult(self.name, 0, False, "")
