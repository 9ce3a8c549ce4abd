"""Several stacks on one GPU run side by side, each harness with its seat in a folder they share
(reprokit.run.stacks), over the real spine (plan, capture folder, results, bundles); the harness
is scripted, since CI has no GPU. The turns themselves, between real processes, are
tests/unit/test_turns.py's."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from reprokit.config import Stack, load_config
from reprokit.errors import ExecutorError
from reprokit.options import BundleOptions, GpuOptions, HostEnv, Listener, RunOptions
from reprokit.run.stacks import run_stacks, side_by_side
from reprokit.suite import build_plan
from tests.helpers.scripted_executor import ScriptedExecutor

STACKS = [Stack("triton-3.6-cu130", "3.6.0"), Stack("triton-3.5-cu130", "3.5.1"), Stack("triton-3.4-cu129", "3.4.0")]


class Seated(ScriptedExecutor):
    """A scripted harness that notes its seat and when it ran, and lasts a while."""

    def __init__(self, host, broken=()):
        super().__init__(lambda stack, case: {"status": "ok", "verdict": "tma"}, host)
        self.seats, self.spans, self.broken, self.lock = {}, {}, set(broken), threading.Lock()

    def prepare(self, stack):
        if stack.name in self.broken:
            raise ExecutorError(f"{stack.name}: the image cannot be built")
        return {}

    def run_harness(self, stack, capture_dir, *, workers, timeout_s, gpu, scratch=None, turns=None):
        t0 = time.monotonic()
        time.sleep(0.4)
        with self.lock:
            self.seats[stack.name] = turns
            self.spans[stack.name] = (t0, time.monotonic())
        return super().run_harness(stack, capture_dir, workers=workers, timeout_s=timeout_s, gpu=gpu,
                                   scratch=scratch, turns=turns)


class Heard(Listener):
    def __init__(self):
        self.notes, self.states = [], []

    def note(self, line):
        self.notes.append(line)

    def stack(self, name, state):
        self.states.append((name, state))


def _plan(mode):
    return build_plan(GpuOptions(load_config().gpu("h100"), mode), only="block_ptr.p0")


def test_stacks_on_a_gpu_run_side_by_side_each_in_its_seat(tmp_path):
    ex = Seated(HostEnv(tmp=tmp_path))
    plan = _plan("gpu")
    assert side_by_side(STACKS, plan) and not side_by_side(STACKS[:1], plan)
    heard = Heard()
    outcomes = run_stacks(STACKS, ex, plan, RunOptions(), BundleOptions(out_dir=tmp_path / "out", environ={}), heard)
    assert [o.stack for o in outcomes] == [s.name for s in STACKS] and all(o.ok for o in outcomes)
    assert heard.notes == ["3 stacks measured side by side on the GPU, their benchmarks' rounds in turn"]
    assert sorted(heard.states) == sorted((s.name, state) for s in STACKS for state in ("capturing", "bundling", "done"))
    seats = [ex.seats[s.name] for s in STACKS]
    assert [(s.side, s.sides) for s in seats] == [(0, 3), (1, 3), (2, 3)]
    assert len({s.folder for s in seats}) == 1
    # at once, not one after another: every run began before any ended
    assert max(t0 for t0, _ in ex.spans.values()) < min(t1 for _, t1 in ex.spans.values())
    assert seats[0].environ() == {"REPROKIT_TURNS": str(seats[0].folder), "REPROKIT_TURN_SIDE": "0",
                                  "REPROKIT_TURN_SIDES": "3"}
    assert not Path(seats[0].folder).exists()  # the shared folder goes with the run


def test_a_stack_that_cannot_be_made_ready_leaves_the_others_their_turns(tmp_path):
    ex = Seated(HostEnv(tmp=tmp_path), broken={"triton-3.5-cu130"})
    outcomes = run_stacks(STACKS, ex, _plan("gpu"), RunOptions(), BundleOptions(out_dir=tmp_path / "out", environ={}))
    assert [o.ok for o in outcomes] == [True, False, True] and "cannot be built" in outcomes[1].error
    assert [(ex.seats[n].side, ex.seats[n].sides) for n in ("triton-3.6-cu130", "triton-3.4-cu129")] == [(0, 2), (1, 2)]
    # one stack left ready: no turns to take
    ex = Seated(HostEnv(tmp=tmp_path), broken={"triton-3.5-cu130", "triton-3.4-cu129"})
    outcomes = run_stacks(STACKS, ex, _plan("gpu"), RunOptions(), BundleOptions(out_dir=tmp_path / "one", environ={}))
    assert [o.ok for o in outcomes] == [True, False, False] and ex.seats["triton-3.6-cu130"] is None


def test_compile_only_stacks_run_one_after_another_with_no_seat(tmp_path):
    ex = Seated(HostEnv(tmp=tmp_path))
    outcomes = run_stacks(STACKS[:2], ex, _plan("compile-only"), RunOptions(),
                          BundleOptions(out_dir=tmp_path / "out", environ={}))
    assert all(o.ok for o in outcomes) and set(ex.seats.values()) == {None}
    (a0, a1), (b0, b1) = ex.spans["triton-3.6-cu130"], ex.spans["triton-3.5-cu130"]
    assert a1 <= b0
