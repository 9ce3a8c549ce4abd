"""Times judged on one board (reprokit.compare.boards): env.json's two board records as NVML
gives them, --share leaving the identity out, the grid's "same board" / "another board" /
"board unknown" between real GPU bundles, the cross-board tolerance, and a replay on another
board measuring the bundle's own stack as its same-board reference."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import pytest

from reprokit.bundle import schemas
from reprokit.bundle.reader import open_bundle
from reprokit.compare import boards, timing
from reprokit.compare.grid import compare
from reprokit.compare.sources import ResultSet
from reprokit.config import Stack
from reprokit.harness import nvml
from reprokit.parser import build_parser
from reprokit.run.replay import request, same_board_reference
from tests.helpers import fake_capture
from tests.helpers.bundle_tools import edit_json, make_bundle, members, reseal
from tests.unit.test_nvml import IDLE, fake_pynvml

ROOT = Path(__file__).resolve().parents[2]
GPU_36 = ROOT / "bundles" / "examples" / "h100-gpu-triton-3.6.0.tgz"
UUID_A = "GPU-6f1d1a2c-0000-4000-8000-00000000000a"
UUID_B = "GPU-6f1d1a2c-0000-4000-8000-00000000000b"
STATE = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "driver": "580.65.06", "cuda_driver_version": "13.0",
         "power_limit_w": 700.0, "power_default_limit_w": None, "ecc": True, "persistence_mode": True,
         "pstate": "P0", "temperature_c": 31, "clocks_mhz": {"sm": 345, "sm_max": 1980, "mem": 2619, "mem_max": 2619}}


def _with_board(tmp: Path, name: str, uuid: str | None) -> Path:
    """The committed H100 bundle, its env.json given a board record (identity from `uuid`)."""
    ident = {"uuid_sha256": hashlib.sha256(uuid.encode()).hexdigest()} if uuid else None

    def edit(files):
        return edit_json(files, "env.json", lambda env: env.update(board={"identity": ident, "state": STATE}))

    return reseal(GPU_36, tmp / name, edit)


# -- the records -------------------------------------------------------------------------------

def test_board_records_are_identity_and_state_from_nvml(monkeypatch):
    monkeypatch.setattr(nvml, "_pynvml", lambda: fake_pynvml(dict(IDLE)))
    gpus = nvml.snapshot_all()
    board = nvml.board_records(gpus, 0)
    uuid = gpus["devices"][0]["uuid"]
    assert board["identity"] == {"uuid_sha256": hashlib.sha256(uuid.encode()).hexdigest()}
    assert uuid not in json.dumps(board)  # the UUID itself never reaches the record
    state = board["state"]
    assert (state["driver"], state["power_limit_w"], state["ecc"], state["temperature_c"]) == ("580.159.04", 700.0, True, 31)
    assert state["clocks_mhz"] == {"sm": 345, "sm_max": 1980, "mem": 2619, "mem_max": 2619}
    assert boards.board_identity({"board": board}) == boards.identity_of_uuid(uuid)
    # Without NVML, or for a device it does not list, there is no record rather than a guess.
    assert nvml.board_records({"available": False, "reason": "no driver"}) is None
    assert nvml.board_records(gpus, 3) is None


def test_share_leaves_the_identity_out_and_keeps_the_state(tmp_path, monkeypatch):
    def bundle_env(share: bool) -> dict:
        cap_root = tmp_path / f"share-{share}"
        path = make_bundle(cap_root, share=share, mode="gpu", gpu_uuid=UUID_A)
        return json.loads(members(path)[1]["env.json"])

    board = {"identity": {"uuid_sha256": hashlib.sha256(UUID_A.encode()).hexdigest()}, "state": STATE}
    original = fake_capture.env_doc
    monkeypatch.setattr(fake_capture, "env_doc", lambda **kw: {**original(**kw), "board": board})
    kept, shared = bundle_env(False), bundle_env(True)
    assert kept["board"] == board and not schemas.problems("env.json", kept)
    assert shared["board"] == {"identity": None, "state": STATE} and not schemas.problems("env.json", shared)


def test_the_schema_refuses_a_board_identity_that_is_not_a_digest():
    env = json.loads(members(GPU_36)[1]["env.json"])
    env["board"] = {"identity": {"uuid_sha256": UUID_A}, "state": STATE}
    assert schemas.problems("env.json", env)


# -- the grid ----------------------------------------------------------------------------------

def test_the_grid_says_which_board_between_two_bundles(tmp_path):
    a = _with_board(tmp_path, "a.tgz", UUID_A)
    a2 = _with_board(tmp_path, "a2.tgz", UUID_A)
    b = _with_board(tmp_path, "b.tgz", UUID_B)
    shared = _with_board(tmp_path, "shared.tgz", None)
    grid = compare([a, a2, b, shared])
    assert [c.board_relation for c in grid.columns[1:]] == [boards.SAME_BOARD, boards.ANOTHER_BOARD, boards.BOARD_UNKNOWN]
    row = next(r for r in grid.rows if r.cells[1].time_labels)
    # Same board: today's labels; another or unknown board: judged against the cross-board tolerance.
    assert all(j.board is None for _, j in row.cells[1].time_labels)
    assert all(j.board == boards.ANOTHER_BOARD for _, j in row.cells[2].time_labels)
    assert all(j.board == boards.BOARD_UNKNOWN for _, j in row.cells[3].time_labels)
    cols = grid.to_dict()["columns"]
    assert [c["board_relation"] for c in cols] == [None, "same board", "another board", "board unknown"]
    # A compile-only bundle has no board to speak of.
    assert compare([ROOT / "bundles" / "examples" / "triton-3.5-cu130-h100.tgz"] * 2).columns[1].board_relation is None


def _raw(kernel_ms: float, baseline_ms: float | None, seed: int) -> dict:
    rng = random.Random(seed)

    def contender(ms):
        return {"events": [[ms * (1 + rng.gauss(0, 0.002)) for _ in range(40)] for _ in range(3)]}

    raw = {"kernel": contender(kernel_ms)}
    if baseline_ms is not None:
        raw["baseline"] = contender(baseline_ms)
    return raw


COPY = {"M": 4096, "N": 4096, "elem_bytes": 2}


def test_across_boards_a_move_must_pass_the_tolerance_absolute_and_per_baseline():
    old = _raw(0.050, 0.045, seed=1)
    # 3% faster, as between two leases: FASTER on one board, not a move across boards.
    faster = _raw(0.0485, 0.045, seed=2)
    assert timing.judge_raw(old["kernel"], faster["kernel"]).label == timing.FASTER
    j = boards.judge_across(old, faster, COPY)
    assert not j.moved and j.board == boards.ANOTHER_BOARD and j.threshold == pytest.approx(0.05)
    # 10% slower with the baseline 10% slower too: the board, not the kernel.
    board_slow = boards.judge_across(old, _raw(0.055, 0.0495, seed=3), COPY)
    assert board_slow.label == timing.AMBIGUOUS and "ratio to the baseline" in board_slow.reason
    assert board_slow.per_baseline == pytest.approx(1.0, abs=0.01)
    # 10% slower against an unchanged baseline: SLOWER even across boards.
    slower = boards.judge_across(old, _raw(0.055, 0.045, seed=4), COPY)
    assert slower.label == timing.SLOWER and slower.per_baseline == pytest.approx(1.1, abs=0.01)
    # A traced call has no baseline: the absolute tolerance alone decides.
    assert boards.kind({}, {"kernel": {}}) == "call"
    assert boards.judge_across(_raw(0.05, None, 5), _raw(0.055, None, 6), {}).label == timing.SLOWER
    assert boards.kind({"M": 1, "N": 1, "K": 1}, old) == "gemm" and boards.kind(COPY, old) == "copy"


def test_columns_on_the_reference_board_are_judged_against_the_reference(tmp_path):
    recorded = _with_board(tmp_path, "recorded.tgz", UUID_A)
    reference = _with_board(tmp_path, "reference.tgz", UUID_B)
    other = _with_board(tmp_path, "other.tgz", UUID_B)
    sets = [ResultSet.from_bundle(open_bundle(path), key=key)
            for path, key in ((recorded, "recorded"), (reference, "reference"), (other, "other"))]
    grid = compare(sets, time_reference="reference")
    ref_col, other_col = grid.columns[1], grid.columns[2]
    assert ref_col.times_against == grid.columns[0].key and other_col.times_against == ref_col.key
    row = next(r for r in grid.rows if r.cells[2].time_labels)
    assert all(j.board == boards.ANOTHER_BOARD for _, j in row.cells[1].time_labels)
    assert all(j.board is None for _, j in row.cells[2].time_labels)  # one board: today's labels
    with pytest.raises(ValueError, match="no column"):
        compare([recorded, reference], time_reference="nope")
    # A replay made with --share records no identity: its columns were still measured on one
    # host, so they are judged against its reference all the same.
    shared = [ResultSet.from_bundle(open_bundle(_with_board(tmp_path, f"{k}-shared.tgz", None)), key=k)
              for k in ("reference", "other")]
    grid = compare([sets[0], *shared], time_reference="reference")
    assert grid.columns[1].board_relation == grid.columns[2].board_relation == boards.BOARD_UNKNOWN
    row = next(r for r in grid.rows if r.cells[2].time_labels)
    assert all(j.board == boards.BOARD_UNKNOWN for _, j in row.cells[1].time_labels)
    assert all(j.board is None for _, j in row.cells[2].time_labels)


# -- the replay --------------------------------------------------------------------------------

def test_a_replay_on_another_board_measures_the_bundles_own_stack_here(tmp_path):
    recorded = open_bundle(_with_board(tmp_path, "recorded.tgz", UUID_A))
    other = Stack.from_pins({"name": "triton-3.9-cu132", "triton": "3.9.0", "python": "3.12"})
    req = request(recorded, [other])
    here_a, here_b = boards.identity_of_uuid(UUID_A), boards.identity_of_uuid(UUID_B)
    on_b = same_board_reference(req, "venv", True, here_b)
    own = on_b.stacks[0].name
    assert own == recorded.manifest["stack"]["name"] and [s.name for s in on_b.stacks] == [own, other.name]
    assert on_b.reference == own
    # On the recording board, compile-only, or naming the own stack already: nothing added.
    assert same_board_reference(req, "venv", True, here_a).stacks == req.stacks
    assert same_board_reference(req, "venv", True, here_a).reference is None
    assert same_board_reference(req, "venv", False, here_b).reference is None
    own_req = request(recorded)
    assert same_board_reference(own_req, "venv", True, None).stacks == own_req.stacks
    assert same_board_reference(own_req, "venv", True, None).reference == own
    # The local executor replays on this interpreter's stack: that column is the reference.
    local = request(recorded, [Stack.from_pins({"name": "local", "triton": "3.6.0"})])
    assert same_board_reference(local, "local", True, here_b).reference == "local"


def test_replay_and_sweep_take_as_many_workers_as_run():
    parser = build_parser()
    cpus = os.cpu_count() or 1
    from reprokit.commands._common import default_workers

    for argv in (["replay", str(GPU_36)], ["sweep", "tma-invariants"], ["run", "--gpu", "h100"]):
        assert parser.parse_args(argv).workers is None
    assert default_workers(None) == cpus and default_workers(3) == 3


def test_the_rendered_grid_names_the_board_and_the_reference(tmp_path):
    from reprokit.compare.render import change_lines

    sets = [ResultSet.from_bundle(open_bundle(_with_board(tmp_path, f"{k}.tgz", u)), key=k, label=k)
            for k, u in (("recorded", UUID_A), ("reference", UUID_B), ("other", UUID_B))]
    lines = change_lines(compare(sets, time_reference="reference"))
    assert lines[0].startswith("reference: another board than recorded: its times are judged only against the cross-board")
    assert "other: times judged against reference, measured on the same board" in lines


def _script(name: str):
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"reprokit_{name}", ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_tolerance_script_measures_strays_per_kind_and_refuses_unknown_boards(tmp_path, capsys):
    tol = _script("board_tolerance")
    a = _with_board(tmp_path, "a.tgz", UUID_A)
    # The adaptive bundle ran on another lease: a second board for the script.
    adaptive = ROOT / "bundles" / "examples" / "h100-gpu-triton-3.6.0-adaptive.tgz"
    b = reseal(adaptive, tmp_path / "b.tgz", lambda files: edit_json(
        files, "env.json", lambda env: env.update(board={"identity": {"uuid_sha256": boards.identity_of_uuid(UUID_B)},
                                                         "state": STATE})))
    assert tol.main([str(a), str(b), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["boards"] == 2 and set(out["kinds"]) == {"copy", "gemm"}
    assert all(0 < k["absolute"] < 0.5 and k["per_baseline"] is not None for k in out["kinds"].values())
    with pytest.raises(SystemExit, match="no board identity"):
        tol.main([str(a), str(_with_board(tmp_path, "unknown.tgz", None))])
    with pytest.raises(SystemExit, match="at least two boards"):
        tol.main([str(a), str(_with_board(tmp_path, "a2.tgz", UUID_A))])


def test_the_committed_three_board_measurements_stay_within_the_documented_tolerances(capsys):
    """bundles/boards/: the suite's GPU run on three H100 boards (docs/gpu.md, "Three boards"):
    the spread of every case between them, per kind, lies inside reprokit.compare.boards.TOLERANCES,
    which the docs' table takes from this measurement."""
    tol = _script("board_tolerance")
    bundles = sorted((ROOT / "bundles" / "boards").glob("*.tgz"))
    assert tol.main([*map(str, bundles), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["boards"] == 3 and set(out["kinds"]) == {"copy", "gemm"}
    for kind, measured in out["kinds"].items():
        limit = boards.TOLERANCES[kind]
        assert 0 < measured["absolute"] < limit.absolute, (kind, measured["absolute"])
        assert 0 < measured["per_baseline"] < limit.per_baseline, (kind, measured["per_baseline"])


def test_the_committed_examples_replayed_on_another_board_keep_every_time():
    """bundles/boards/replays/: each committed H100 suite GPU example replayed on a newly started
    lease (docs/gpu.md, "Across boards"): the grid says "another board", every timed size is judged
    against the cross-board tolerance, and none is FASTER or SLOWER."""
    replays = {r.name: r for r in (ROOT / "bundles" / "boards" / "replays").glob("*.tgz")}
    examples = ("h100-gpu-triton-3.6.0-adaptive.tgz", "h100-gpu-triton-3.6.0.tgz", "h100-gpu-triton-3.0.0.tgz")
    judged = 0
    for name in examples:
        recorded = ROOT / "bundles" / "examples" / name
        sha = open_bundle(recorded).sha256
        (replay,) = [p for p in replays.values() if open_bundle(p).manifest.get("parent") == sha]
        grid = compare([recorded, replay])
        assert grid.columns[1].board_relation == boards.ANOTHER_BOARD and not grid.moved, name
        labels = [j for r in grid.rows for _, j in r.cells[1].time_labels]
        assert len(labels) >= 15 and all(j.board == boards.ANOTHER_BOARD for j in labels), name
        assert not [j for j in labels if j.label in timing.MOVED], name
        judged += len(labels)
    assert judged == 49
