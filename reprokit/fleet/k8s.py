"""The fleet on paper for Kubernetes: one indexed Job per GPU profile.

Job `reprokit-fleet-<profile>` has one completion per task of that profile (completionMode
Indexed); completion i runs the profile's i-th task (`reprokit fleet task DIR i --of-profile
KEY`), so Slurm's array index and Kubernetes' completion index lead to the same fleet task. The
pod asks for `nvidia.com/gpu` as a limit, lands on nodes whose GPU product label (set by
NVIDIA's GPU feature discovery) names the profile's GPU, and mounts the fleet folder from a
PersistentVolumeClaim, the shared storage the Slurm path takes from the cluster's file system.
Manifests are JSON, which kubectl applies as it does YAML.
"""

from __future__ import annotations

import re

from reprokit.errors import UsageError
from reprokit.fleet import state
from reprokit.fleet.spec import FleetSpec

MOUNT = "/fleet"
PRODUCT_LABEL = "nvidia.com/gpu.product"


def product_label(gpu_name: str) -> str:
    """GPU feature discovery's label value: the NVML name with spaces as dashes."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", gpu_name).strip("-")[:63]


def render(fleet: state.Fleet, image: str, claim: str) -> dict:
    """{file name: manifest} for every GPU profile of the fleet."""
    spec = FleetSpec.from_dict(fleet.spec)
    by_profile: dict[str, list] = {}
    for t in fleet.tasks:
        by_profile.setdefault(t.profile["key"], []).append(t)
    out = {}
    for key, tasks in by_profile.items():
        req = spec.request(key)
        name = f"reprokit-fleet-{re.sub(r'[^a-z0-9-]+', '-', key.lower())}"
        resources: dict[str, dict[str, int | str]] = {"limits": {"nvidia.com/gpu": req.gpus or 1}}
        if req.cpus_per_task:
            resources["requests"] = {"cpu": str(req.cpus_per_task)}
        container = {
            "name": "task",
            "image": req.container_image or image,
            "command": [req.python or "python3", "-m", "reprokit", "fleet", "task", MOUNT,
                        "--of-profile", key, "--index-from-env", "JOB_COMPLETION_INDEX"],
            "resources": resources,
            "volumeMounts": [{"name": "fleet", "mountPath": MOUNT}],
        }
        out[f"job-{key}.json"] = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "reprokit-fleet",
                                                  "reprokit/plan": fleet.plan_sha256[:12]}},
            "spec": {
                "completionMode": "Indexed",
                "completions": len(tasks),
                "parallelism": len(tasks),
                "backoffLimitPerIndex": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": {PRODUCT_LABEL: product_label(tasks[0].profile["name"])},
                        "containers": [container],
                        "volumes": [{"name": "fleet", "persistentVolumeClaim": {"claimName": claim}}],
                    }
                },
            },
        }
    return out


def profile_task(fleet: state.Fleet, profile: str, i: int) -> int:
    """The fleet task index of the i-th task of `profile` (Kubernetes' completion index)."""
    tasks = [t.index for t in fleet.tasks if t.profile["key"] == profile]
    if not 0 <= i < len(tasks):
        raise UsageError(f"the fleet has {len(tasks)} task(s) of profile {profile!r}; no index {i}")
    return tasks[i]
