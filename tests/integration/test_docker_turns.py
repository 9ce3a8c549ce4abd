"""Two stacks' containers take their rounds in turn through the folder the executor mounts for
them (reprokit.executors.docker.turns_mount): the lock file is flocked across containers, and
each side reads the other's progress, as two stacks' harnesses do on one GPU."""

from __future__ import annotations

import json
import threading

import pytest

from reprokit.executors.docker import turns_mount
from reprokit.options import Seat
from tests.unit.test_turns import SIDE

pytestmark = pytest.mark.docker

STACKS = ("triton-3.5-cu130", "triton-3.0-cu129")


def test_two_containers_take_each_round_in_turn(stack_images, docker_executor, config, tmp_path):
    folder = tmp_path / "turns"
    folder.mkdir()
    cases = [{"id": "copy.p0", "benches": [0, 1]}]
    results = {}

    def side(i, stack):
        mount, env = turns_mount(Seat(folder, i, 2))
        spec = {"cases": [{**c, "late_s": 0.5 * i} for c in cases], "side": i, "log": "/reprokit-turns/log"}
        results[i] = docker_executor.run_command(config.stack(stack), ["python", "-c", SIDE, json.dumps(spec)],
                                                 timeout_s=120, mounts=[mount],
                                                 env={**env, "REPROKIT_GPU_LOCK": "/reprokit-turns/gpu.lock"})

    threads = [threading.Thread(target=side, args=(i, s)) for i, s in enumerate(STACKS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.ok for r in results.values()), [r.log_tail for r in results.values()]
    order = [tuple(json.loads(x)[i] for i in (0, 2, 3)) for x in (folder / "log").read_text().splitlines()]
    assert order == [(side, b, r) for b in (0, 1) for r in range(3) for side in (0, 1)]
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["0", "1"]
    assert (folder / "0" / "end").exists() and (folder / "1" / "end").exists()
