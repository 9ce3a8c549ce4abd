"""`reprokit replay BUNDLE`: rerun a bundle's own plan and kernel sources, on its own stack or on
others, writing new bundles that name it as their parent."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from reprokit.bundle.reader import open_bundle
from reprokit.commands._common import EXECUTORS, add_gpu_args, gpu_from_args, print_grid, say
from reprokit.config import GpuProfile, Stack, load_config, stack_fields
from reprokit.errors import ExecutorError, UsageError
from reprokit.executors import local_stack, make_executor
from reprokit.options import BundleOptions, RunOptions
from reprokit.runs import run_stacks


def add_parser(sub) -> None:
    p = sub.add_parser(
        "replay", help="rerun a bundle's own plan and kernels on its stack or on others",
        description="Verify BUNDLE, then run the plan.json and kernels/ it carries (never today's suite) on the "
                    "bundle's own stack pins, or on --stacks from stacks.toml to compare versions. Each run "
                    "writes a new bundle whose manifest names BUNDLE's sha256 as its parent.",
        epilog="example: reprokit replay bundles/triton-3.0-cu129-h100-X.tgz --stacks triton-3.5-cu130 --executor venv",
    )
    p.add_argument("bundle", type=Path)
    p.add_argument("--stacks", default=None, help="stacks from stacks.toml to replay on (default: the bundle's own)")
    p.add_argument("--executor", choices=EXECUTORS, default="auto")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("bundles"))
    p.add_argument("--share", action="store_true")
    p.add_argument("--json", action="store_true")
    add_gpu_args(p)
    p.set_defaults(func=run)


def _bundle_stack(manifest: dict) -> Stack:
    pins = manifest.get("stack") or {}
    if "name" not in pins or "triton" not in pins:
        raise UsageError("the bundle's manifest names no stack with a triton pin; pass --stacks")
    # Only the pins a stack knows: facts the manifest adds (image_digest) are not pins to rebuild from.
    return Stack.from_pins({k: v for k, v in pins.items() if k in stack_fields() | {"name"}})


def run(args) -> int:
    bundle = open_bundle(args.bundle, keep=lambda rel: rel.startswith("kernels/"))
    plan = bundle.plan
    profile = GpuProfile.from_dict(plan["profile"], where="the bundle's plan: GPU profile")
    if args.stacks is not None:
        stacks = load_config().select_stacks(args.stacks)
    elif args.executor == "local":
        stacks = [local_stack()]
    else:
        stacks = [_bundle_stack(bundle.manifest)]
    gpu = gpu_from_args(args, profile, "compile-only" if plan.get("mode") == "compile-only" else "auto")
    mode = gpu.mode
    with make_executor(args.executor, args.host, with_torch=gpu.on_gpu, report=say, stacks=stacks) as executor, \
            tempfile.TemporaryDirectory(prefix="reprokit-replay-") as tmp:
        kernels = Path(tmp) / "kernels"
        kernels.mkdir()
        for rel in bundle.data:
            # kernels/cuda/ holds the CUDA C++ sources; the reader has refused any other kind of path.
            parts = rel.split("/")[1:]
            if rel.startswith("kernels/") and parts and not any(p in ("", ".", "..") for p in parts):
                (kernels / "/".join(parts)).parent.mkdir(parents=True, exist_ok=True)
                (kernels / "/".join(parts)).write_bytes(bundle.read(rel))
        options = RunOptions(gpu, workers=args.workers, plan={**plan, "mode": mode}, kernels=kernels)
        outcomes = run_stacks(stacks, executor, options,
                              BundleOptions.from_host(args.host, args.out, share=args.share, parent=bundle.sha256))
    if args.json:
        print(json.dumps({"parent": bundle.sha256, "stacks": [
            {"stack": o.stack, "bundle": str(o.bundle) if o.bundle else None, "error": o.error} for o in outcomes]},
            indent=1))
    else:
        print_grid(outcomes, f"replay of {bundle.name} on {profile.key}, {mode}, executor {executor.name}")
    return 0 if all(o.ok for o in outcomes) else ExecutorError.exit_code
