"""Fleet parts that need no cluster: sacct's two formats, the fleet TOML's errors, shards, and
the Kubernetes Jobs validated against the Kubernetes schema (kubernetes-validate)."""

from __future__ import annotations

import json

import pytest

from reprokit.config import load_config
from reprokit.errors import ConfigError, UsageError
from reprokit.fleet import k8s, slurm, state, task
from reprokit.fleet.spec import FleetSpec, Request, load_fleet
from reprokit.suite import build_plan


def test_sacct_accounting_lines():
    text = "12_0|COMPLETED|0:0|None\n12_1|FAILED|3:0|NonZeroExitCode\n12_2|CANCELLED by 0|0:15|None\n12_[3-5]|PENDING|0:0|Priority\n"
    got = slurm.parse_sacct(text)
    assert got[("12", 0)] == slurm.SlurmState("COMPLETED", None, "0:0")
    assert got[("12", 1)] == slurm.SlurmState("FAILED", "NonZeroExitCode", "3:0")
    assert got[("12", 2)].state == "CANCELLED"
    assert ("12", 3) not in got and len(got) == 3


def test_sacct_completion_log_lines():
    got = slurm.parse_completion("7|FAILED|1:0\n6|COMPLETED|0:0\nnot|a|line\n")
    assert got == {"7": slurm.SlurmState("FAILED", None, "1:0"), "6": slurm.SlurmState("COMPLETED", None, "0:0")}


@pytest.mark.parametrize("toml,message", [
    ("[slurm]\npartiton = 'gpu'\n", "unknown key 'partiton'"),
    ("[slurm]\ngpus = 'one'\n", "gpus must be int"),
    ("[slurm]\ngpus = 0\n", "gpus must be at least 1"),
    ("[slurm]\nexecutor = 'kube'\n", "executor 'kube' is not one of"),
    ("[profiles.a100]\ngpus = 1\n", "names no GPU profile"),
    ("[cluster]\n", "unknown table [cluster]"),
    ("[slurm\n", "Expected"),
])
def test_fleet_toml_errors_are_one_line(tmp_path, toml, message):
    p = tmp_path / "fleet.toml"
    p.write_text(toml)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_fleet(p, known_profiles=("h100", "b200"))


def test_profile_overrides_and_sbatch_args(repo_root):
    spec = load_fleet(repo_root / "kernels" / "fleets" / "example.toml", known_profiles=tuple(load_config().gpus))
    h100 = spec.request("h100")
    assert h100.sbatch_args() == ["--gpus=1", "--partition=h100", "--constraint=h100", "--time=01:00:00",
                                  "--cpus-per-task=2"]
    assert spec.request("gb10") == spec.default          # no table: the defaults
    assert FleetSpec.from_dict(spec.to_dict()) == FleetSpec(spec.default, spec.profiles)


def test_shards_cover_the_plan_once_and_keep_gates():
    cfg = load_config()
    plan = build_plan(cfg.gpu("h100"), cfg.stack("triton-3.6-cu130").pins())
    ids = plan.ids
    seen = []
    for i in (1, 2, 3):
        part = plan.shard(i, 3)
        got = part.ids
        assert got == [x for x in ids if x in got]           # plan order
        for c in part.cases:
            assert not c.get("gated_by") or c["gated_by"] in got
        seen += [x for j, x in enumerate(ids) if j % 3 == i - 1]
    assert sorted(seen) == sorted(ids)
    with pytest.raises(UsageError, match="at least 1"):
        task.parse_shards("0")


def _fleet(tmp_path):
    cfg = load_config()
    tasks = task.plan_tasks([cfg.stack("triton-3.5-cu130"), cfg.stack("triton-3.6-cu130")],
                            [cfg.gpu("h100"), cfg.gpu("gb10")], 2)
    spec = FleetSpec(Request(cpus_per_task=2), {"h100": Request(gpus=2, cpus_per_task=4)})
    return state.Fleet(tmp_path, "ab" * 32, "plan.tgz", spec.to_dict(), tasks, ())


def test_k8s_jobs_validate_against_the_kubernetes_schema(tmp_path):
    kv = pytest.importorskip("kubernetes_validate")
    fleet = _fleet(tmp_path)
    manifests = k8s.render(fleet, "registry.example/reprokit:1", "fleet-pvc")
    assert sorted(manifests) == ["job-gb10.json", "job-h100.json"]
    for name, doc in manifests.items():
        # The same check `kubernetes-validate` makes on the command line, on a recent Kubernetes.
        kv.validate(json.loads(json.dumps(doc)), "1.30.0", strict=True)
    h100 = manifests["job-h100.json"]["spec"]
    assert h100["completions"] == 4 and h100["completionMode"] == "Indexed"
    pod = h100["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert pod["containers"][0]["command"][-4:] == ["--of-profile", "h100", "--index-from-env", "JOB_COMPLETION_INDEX"]
    # Completion index i of a profile's Job is that profile's i-th fleet task.
    assert [k8s.profile_task(fleet, "gb10", i) for i in range(4)] == [2, 3, 6, 7]
    with pytest.raises(UsageError, match="no index 4"):
        k8s.profile_task(fleet, "gb10", 4)


def test_k8s_rejects_what_the_schema_rejects():
    kv = pytest.importorskip("kubernetes_validate")
    bad = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
           "spec": {"completions": "four", "template": {"spec": {"containers": []}}}}
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, "1.30.0", strict=True)


def test_a_fleet_folder_of_another_format_says_which(tmp_path):
    (tmp_path / state.FILE).write_text(json.dumps({"format": 99}))
    with pytest.raises(UsageError, match="too new"):
        state.load(tmp_path)
    with pytest.raises(UsageError, match="not a fleet folder"):
        state.load(tmp_path / "nothing")


def _cli(*args, env=None):
    import subprocess
    import sys

    from reprokit.config import defaults_root

    return subprocess.run([sys.executable, "-m", "reprokit", *args], capture_output=True, text=True,
                          cwd=defaults_root(), env=env)


@pytest.mark.parametrize("args,message", [
    (["--plan", "README.md", "--stacks", "triton-3.6-cu130", "--gpus", "h100"], "README.md"),
    (["--plan", "GOLDEN", "--stacks", "nope", "--gpus", "h100"], "unknown stack 'nope'"),
    (["--plan", "GOLDEN", "--stacks", "triton-3.6-cu130", "--gpus", ","], "--gpus: ',' names no GPU profile"),
    (["--plan", "GOLDEN", "--stacks", "triton-3.6-cu130", "--gpus", "a100"], "unknown GPU profile 'a100'"),
    (["--plan", "GOLDEN", "--stacks", "triton-3.6-cu130", "--gpus", "h100", "--shards", "x"], "not a whole number"),
    # More shards than cases: refused before a task is listed (a billion shards once listed a billion tasks).
    (["--plan", "GOLDEN", "--stacks", "triton-3.6-cu130", "--gpus", "h100", "--shards", "1000000000"],
     "each shard needs at least one"),
])
def test_fleet_submit_bad_input_is_one_line_exit_2_and_no_folder(tmp_path, repo_root, args, message):
    golden = sorted((repo_root / "bundles" / "golden").rglob("*.tgz"))[0]
    d = tmp_path / "fleet"
    import os
    import sys

    argv = ["fleet", "submit", *[str(golden) if a == "GOLDEN" else a for a in args], "--dir", str(d)]
    # The same answer on a host with a Slurm client and on one without (no sbatch on PATH).
    for env in (None, {**os.environ, "PATH": os.path.dirname(sys.executable)}):
        p = _cli(*argv, env=env)
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith("reprokit:")]
        assert p.returncode == 2 and len(lines) == 1 and message in lines[0], p.stderr
        assert not d.exists()


def test_fleet_submit_without_slurm_leaves_nothing(tmp_path, repo_root):
    import os

    golden = sorted((repo_root / "bundles" / "golden").rglob("*.tgz"))[0]
    d = tmp_path / "fleet"
    env = {**os.environ, "PATH": "/nonexistent"}
    p = _cli("fleet", "submit", "--plan", str(golden), "--stacks", "triton-3.6-cu130", "--gpus", "h100",
             "--dir", str(d), env=env)
    assert p.returncode == 2 and "sbatch not found" in p.stderr and not d.exists()


def test_fleet_status_of_a_folder_that_is_no_fleet(tmp_path):
    p = _cli("fleet", "status", str(tmp_path), "--json")
    assert p.returncode == 2 and "not a fleet folder" in json.loads(p.stdout)["error"]


def test_render_rewrites_only_its_own_manifests(tmp_path):
    from reprokit.cli import main

    fleet = _fleet(tmp_path / "f")
    (tmp_path / "f").mkdir()
    state.save(fleet)
    out = tmp_path / "k8s"
    out.mkdir()
    mine = out / "job-h100.json"
    mine.write_text("my own job, by hand\n")
    argv = ["fleet", "render", str(tmp_path / "f"), "--k8s", "--image", "r/x:1", "--claim", "pvc", "--out", str(out)]
    assert main(argv) == 2
    assert mine.read_text() == "my own job, by hand\n" and sorted(p.name for p in out.iterdir()) == ["job-h100.json"]
    mine.unlink()
    assert main(argv) == 0 and main(argv) == 0     # its own manifests, rendered again
    assert sorted(p.name for p in out.iterdir()) == [".reprokit-output.json", "job-gb10.json", "job-h100.json"]


def test_wheelhouse_leaves_a_users_extras_txt(tmp_path, capsys):
    from reprokit.cli import main

    out = tmp_path / "wheels"
    out.mkdir()
    (out / "extras.txt").write_text("my notes on extras\n")
    assert main(["wheelhouse", "--out", str(out)]) == 2
    assert "extras.txt: exists and is not a wheelhouse's" in capsys.readouterr().err
    assert (out / "extras.txt").read_text() == "my notes on extras\n" and [p.name for p in out.iterdir()] == ["extras.txt"]
