"""Suite expansion into plans, stacks.toml loading, and the mode a run takes for a host's GPUs."""

from __future__ import annotations

import pytest

from reprokit import suite as suite_mod
from reprokit.config import Stack, load_config
from reprokit.errors import ConfigError, UsageError


@pytest.fixture(scope="module")
def cfg():
    return load_config()


def test_profiles_are_complete(cfg):
    assert {"h100", "h200", "b200", "rtx5090", "gb10"} <= set(cfg.gpus)
    assert cfg.gpu("h100").arch == "sm_90" and cfg.gpu("b200").arch == "sm_100"
    assert cfg.gpu("rtx5090").capability == 120 and cfg.gpu("gb10").capability == 121
    assert cfg.gpu("h100").smem_per_block == 232448
    for g in cfg.gpus.values():
        assert g.sm_count > 0 and g.mem_bandwidth_gbs > 0 and g.fp16_tflops > 0


def test_unknown_profile_and_stack_name_the_known_ones(cfg):
    with pytest.raises(UsageError, match="unknown GPU profile 'a100'.*h100"):
        cfg.gpu("a100")
    with pytest.raises(UsageError, match="unknown stack"):
        cfg.select_stacks("triton-3.0-cu129,nope")


def test_stack_spec_hash_changes_with_pins(cfg):
    from dataclasses import replace

    s = cfg.stack("triton-3.5-cu130")
    # Equal pins in a separately made Stack give the same hash: it depends on the pins alone.
    assert Stack.from_pins(dict(s.pins())).spec_hash() == s.spec_hash()
    hashes = {s.spec_hash(), replace(s, triton="3.5.1").spec_hash(), replace(s, torch="2.9.1").spec_hash(),
              replace(s, torch_index=None).spec_hash(), replace(s, extra={"note": "x"}).spec_hash()}
    assert len(hashes) == 5
    assert s.spec_hash("Dockerfile v1") != s.spec_hash("Dockerfile v2") != s.spec_hash()


def _suite_with_p1(**p1) -> dict:
    suite = suite_mod.load_suite()
    for c in suite["cases"]:
        if c["id"] == "tensor_descriptor.p1":
            c.update(p1)
    return suite


def test_negative_controls_name_their_rejections_in_the_plan(cfg):
    plan = suite_mod.build_plan(cfg.gpu("h100"), {"name": "x", "triton": "3.6.0"}, only="*.p1,*.p0").to_json()
    cases = {c["id"]: c for c in plan["cases"]}
    assert cases["block_ptr.p1"]["reject"] == [] and cases["block_ptr.p0"]["reject"] == []
    assert cases["tensor_descriptor.p1"]["reject"] == [
        {"triton": ">=3.3", "message": "Tensor descriptor last dim must be 1 but got 2"}]
    assert {r["pass"] for r in cases["host_descriptor.p1"]["reject"]} == {"TritonNvidiaGPUTMALoweringPass"}
    from reprokit.bundle import schemas

    assert schemas.problems("plan.json", plan) == []


@pytest.mark.parametrize("p1, match", [
    ({"reject": [{"message": "("}]}, "not a regular expression"),
    ({"reject": [{"triton": "~3.5", "message": "x"}]}, "not a version spec"),
    ({"reject": [{"triton": ">=3.3"}]}, "with a message"),
    ({"reject": [{"message": "x", "where": "y"}]}, "with a message"),
    ({"reject": [{"message": "x"}], "expect": "tma"}, "only a case that expects no-tma"),
])
def test_malformed_rejections_are_config_errors(p1, match):
    with pytest.raises(ConfigError, match=match):
        suite_mod.expand_cases(_suite_with_p1(**p1))


def test_broken_stacks_toml_is_a_config_error(tmp_path):
    bad = tmp_path / "stacks.toml"
    bad.write_text("[stacks.x]\ntriton = \n")
    with pytest.raises(ConfigError, match="stacks.toml"):
        load_config(bad)
    bad.write_text('[stacks.x]\ntorch = "2.4"\n[gpus.h]\nname="x"\n')
    with pytest.raises(ConfigError, match="no 'triton' pin"):
        load_config(bad)


def test_suite_has_every_family_and_control():
    cases = suite_mod.expand_cases(suite_mod.load_suite())
    fams = {"block_ptr", "experimental_descriptor", "tensor_descriptor", "host_descriptor"}
    for fam in fams:
        got = {c["control"] for c in cases if c["family"] == fam}
        assert {"P0", "P1", "P2"} <= got, fam
    gemms = [c for c in cases if c["control"] == "gemm"]
    shapes = {(c["constexprs"]["BM"], c["constexprs"]["BN"], c["constexprs"]["BK"], c["num_warps"], c["num_stages"])
              for c in gemms}
    assert {(64, 64, 32, 4, 1), (128, 128, 128, 16, 4), (256, 128, 128, 16, 4), (128, 256, 64, 8, 3)} <= shapes
    assert all(c["expect"] in ("tma", "no-tma") for c in cases)
    assert all(c["expect"] == "no-tma" for c in cases if c["control"] == "P1")
    p0 = next(c for c in cases if c["id"] == "block_ptr.p0")
    assert p0["constexprs"] == {"BM": 128, "BN": 128} and p0["num_warps"] == 8 and p0["num_stages"] == 4


def test_plan_selection_pulls_in_gates(cfg):
    plan = suite_mod.build_plan(cfg.gpu("h100"), {"name": "x", "triton": "3.6.0"}, only="block_ptr.p2").to_json()
    assert [c["id"] for c in plan["cases"]] == ["block_ptr.p0", "block_ptr.p2"]
    assert plan["profile"]["smem_per_block"] == 232448 and plan["format"] == suite_mod.PLAN_FORMAT
    with pytest.raises(UsageError, match="matches no case"):
        suite_mod.build_plan(cfg.gpu("h100"), {"name": "x"}, only="nothing*").to_json()


@pytest.mark.parametrize("mutate,message", [
    (lambda s: s["cases"].append(dict(s["cases"][0])), "duplicate case id"),
    (lambda s: s["cases"][0].update(id="Bad Id"), "must match"),
    (lambda s: s["cases"][0].update(expect="maybe"), "expect 'maybe'"),
    (lambda s: s["cases"][0].update(family="nope"), "unknown family"),
    (lambda s: s["cases"][2].update(gated_by="ghost.p0"), "unknown case 'ghost.p0'"),
    (lambda s: s["cases"][0].update(control="P9"), "control 'P9'"),
])
def test_malformed_suite_is_refused(mutate, message):
    s = suite_mod.load_suite()
    mutate(s)
    with pytest.raises(ConfigError, match=message):
        suite_mod.expand_cases(s)


def test_stack_and_profile_round_trip_through_their_json_forms():
    """One home for a stack's fields and a profile's keys: what a plan or manifest records is read
    back by the same classes that wrote it."""
    from reprokit.config import GpuProfile, Stack, gpu_keys, stack_fields

    cfg = load_config()
    for stack in cfg.stacks.values():
        assert Stack.from_pins(stack.pins()) == stack
    odd = Stack.from_pins({"name": "x", "triton": "3.6.0", "image_digest": "sha256:" + "0" * 64})
    assert odd.extra == {"image_digest": "sha256:" + "0" * 64} and odd.pins()["image_digest"]
    for profile in cfg.gpus.values():
        assert GpuProfile.from_dict(profile.to_dict()) == profile
    # A plan recorded before profiles had memory_gib and nvml_names still loads.
    old = {k: v for k, v in cfg.gpu("h100").to_dict().items() if k not in ("memory_gib", "nvml_names")}
    assert GpuProfile.from_dict(old).memory_gib is None
    assert "triton" in stack_fields() and "extra" not in stack_fields() and "name" not in stack_fields()
    assert gpu_keys() == {"name", "capability", "sm_count", "smem_per_block", "mem_bandwidth_gbs", "fp16_tflops"}
    with pytest.raises(ConfigError, match="lacks fp16_tflops"):
        GpuProfile.from_dict({k: v for k, v in cfg.gpu("h100").to_dict().items() if k != "fp16_tflops"})


def test_the_config_is_read_once_per_set_of_files_and_cannot_be_changed(tmp_path, monkeypatch):
    """Every verb and argument check asks load_config(); the TOML is parsed once for the same
    files, again when a file changes, and the Config they share cannot be changed by any of them."""
    from reprokit import config

    reads = []
    real = config.load_toml
    monkeypatch.setattr(config, "load_toml", lambda p: reads.append(p) or real(p))
    monkeypatch.setattr(config, "_LOADED", {})
    project = tmp_path / "reprokit.toml"
    project.write_text('[stacks.mine]\ntriton = "3.6.0"\n')
    monkeypatch.setattr(config, "_PROJECT", project)
    a, b = load_config(), load_config()
    assert a is b and "mine" in a.stacks and len(reads) == 2  # the defaults and the project, once
    project.write_text('[stacks.mine]\ntriton = "3.5.0"\n# changed\n')
    c = load_config()
    assert c is not a and c.stacks["mine"].triton == "3.5.0" and len(reads) == 4
    with pytest.raises(TypeError):
        c.stacks["other"] = c.stacks["mine"]  # type: ignore[index]
    project.unlink()
    with pytest.raises(UsageError, match="no such file"):
        load_config()
