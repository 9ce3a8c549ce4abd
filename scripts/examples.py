"""Every committed example bundle under bundles/examples/, how each is made, and whether it was
written by today's templates (manifest.json's templates_sha256, reprokit.bundle.templates).

    python scripts/examples.py --list          the table: example, where it is made, current or
                                               stale, the command that remakes it
    python scripts/examples.py --make          remake every example that a CPU can make (pinned
                                               venv stacks) and list the GPU ones with the device
                                               command that remakes each (`make examples`)
    python scripts/examples.py --make --only 'triton-3.0*'   only those
    python scripts/examples.py --make --slow   the 810-point gemm-configs sweeps too (about 20
                                               minutes each on two cores)
    python scripts/examples.py --make --gpu --only 'h100-trace-*'
                                               on the H100: run those GPU examples' device commands
                                               in order (a replay example replays the example just
                                               remade), each verified and put in place; WHEELHOUSE
                                               names the wheelhouse (default wheels/)

tests/unit/test_examples_current.py fails when a CPU-made example is stale ("run make examples")
and lists the stale GPU ones, and the slow CPU ones (`slow`: hours for all six), without failing. Only files named in EXAMPLES are replaced, each by
a bundle that verified first.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "bundles" / "examples"
SUITE_CASES = "block_ptr.p0,experimental_descriptor.p0,experimental_descriptor.p1,tensor_descriptor.p0,host_descriptor.p0"
# On the lab H100 (python 3.12, torch 2.11, triton 3.6; no network): a fresh copy of the checkout
# and the wheelhouse of docs/offline.md under wheels/, as docs/gpu.md says.
GPU_SETUP = ("make .reprokit/host-local/.installed EXECUTOR=local WHEELHOUSE=${WHEELHOUSE:-wheels} "
             "&& RK=.reprokit/host-local/bin/reprokit")
# Liger-Kernel beside the machine's torch, from the wheelhouse (--no-deps: its requirements would
# pull another torch), for the program's python only
LIGER = (". scripts/gpu/install.sh && install_beside python3 ${WHEELHOUSE:-wheels} /tmp/liger /tmp/liger-install.log "
         "liger-kernel==0.8.5 && PYTHONPATH=/tmp/liger")
T30 = ("tar xJf ${T30_TAR:-.whl/triton-3.0.0-cp312-stripped.tar.xz} -C /tmp/t30 && chmod +x /tmp/t30/triton/backends/nvidia/bin/* "
       "&& PYTHONPATH=/tmp/t30")


@dataclass(frozen=True)
class Example:
    name: str            # under bundles/examples/
    where: str           # "cpu": made here by `argv`; "gpu": made on the H100 by `device`
    argv: tuple = ()     # cpu: reprokit's arguments, {out} the folder it writes into
    made: str = ""       # cpu: the glob of the bundle the command writes in {out}
    device: str = ""     # gpu: the device command (one call, writes under $OUT)
    slow: bool = False   # cpu, but far longer than minutes: remade with --slow (make examples SLOW=1)

    @property
    def path(self) -> Path:
        return EXAMPLES / self.name


def _suite(stack: str) -> Example:
    return Example(f"{stack}-h100.tgz", "cpu",
                   ("run", "--gpu", "h100", "--mode", "compile-only", "--stacks", stack, "--executor", "venv",
                    "--workers", "2", "--cases", SUITE_CASES, "--share", "--out", "{out}", "--json"),
                   f"{stack}-h100-*.tgz")


def _sweep(spec: str, stack: str, gpu: str, slow: bool = False) -> Example:
    return Example(f"sweeps/{spec}-{stack}-{gpu}.tgz", "cpu",
                   ("sweep", spec, "--stacks", stack, "--gpus", gpu, "--executor", "venv", "--out", "{out}", "--json"),
                   f"*{stack}*.tgz", slow=slow)


def _gpu(name: str, command: str) -> Example:
    return Example(name, "gpu", device=f"{GPU_SETUP} && {command}")


EXAMPLES_TABLE = (
    *(_suite(s) for s in ("triton-3.0-cu129", "triton-3.4-cu129", "triton-3.5-cu130", "triton-3.9-cu132")),
    *(_sweep("tma-invariants", s, "h100") for s in ("triton-3.0-cu129", "triton-3.5-cu130", "triton-3.9-cu132")),
    *(_sweep("gemm-configs", s, g, slow=True) for s, g in (("triton-3.0-cu129", "h100"), ("triton-3.3-cu129", "b200"),
                                                 ("triton-3.5-cu130", "b200"), ("triton-3.5-cu130", "h100"),
                                                 ("triton-3.9-cu132", "b200"), ("triton-3.9-cu132", "h100"))),
    # The suite's GPU runs keep the board's identity (no --share): a maintainer's replay on another
    # H100 then reads "another board", judged against the cross-board tolerance (docs/gpu.md).
    _gpu("h100-gpu-triton-3.6.0-adaptive.tgz",
         "$RK run --gpu h100 --executor local --mode gpu --out $OUT"),
    _gpu("h100-gpu-triton-3.6.0.tgz", "$RK run --gpu h100 --executor local --mode gpu --out $OUT"),
    _gpu("h100-gpu-triton-3.0.0.tgz",
         f"mkdir -p /tmp/t30 && {T30} $RK run --gpu h100 --executor local --mode gpu --out $OUT"),
    _gpu("h100-trace-triton-3.6.0.tgz",
         "$RK trace --gpu h100 --share --out $OUT -- python3 tests/data/trace/tma_matmul_attention.py"),
    _gpu("h100-trace-triton-3.6.0-replay.tgz",
         "$RK replay bundles/examples/h100-trace-triton-3.6.0.tgz --executor local --share --out $OUT"),
    _gpu("h100-trace-triton-3.6.0-replay-2.tgz",
         "$RK replay bundles/examples/h100-trace-triton-3.6.0-replay.tgz --executor local --share --out $OUT"),
    _gpu("h100-trace-triton-3.6.0-replay-3.tgz",
         "$RK replay bundles/examples/h100-trace-triton-3.6.0-replay.tgz --executor local --share --out $OUT"),
    _gpu("h100-trace-triton-3.0.0.tgz",
         f"mkdir -p /tmp/t30 && {T30} $RK trace --gpu h100 --share --out $OUT -- "
         "python3 tests/data/trace/experimental_tma_persistent.py"),
    _gpu("h100-trace-tensors-triton-3.6.0.tgz",
         "$RK trace --gpu h100 --share --tensors small --out $OUT -- python3 tests/data/trace/tma_matmul_attention.py --tiny"),
    _gpu("h100-trace-tensors-triton-3.6.0-replay.tgz",
         "$RK replay bundles/examples/h100-trace-tensors-triton-3.6.0.tgz --executor local --share --out $OUT"),
    _gpu("h100-trace-tensors-triton-3.6.0-replay-2.tgz",
         "$RK replay bundles/examples/h100-trace-tensors-triton-3.6.0-replay.tgz --executor local --share --out $OUT"),
    # Traces of the libraries', Gluon and in-place programs (docs/trace.md), with their tensors:
    # the replay launches from the program's own inputs and checks its outputs
    *(_gpu(f"h100-trace-{name}-triton-3.6.0.tgz",
           f"$RK trace --gpu h100 --share --tensors small --out $OUT -- python3 tests/data/trace/{prog}")
      for name, prog in (("gluon-tma", "gluon/gluon_tma.py"), ("gluon-wgmma", "gluon/gluon_wgmma.py"),
                         ("in-place", "libs/in_place.py"))),
    _gpu("h100-trace-liger-triton-3.6.0.tgz",
         f"{LIGER} $RK trace --gpu h100 --share --tensors small --out $OUT -- python3 tests/data/trace/libs/liger_ops.py"),
    _gpu("h100-trace-liger-triton-3.6.0-replay.tgz",
         "$RK replay bundles/examples/h100-trace-liger-triton-3.6.0.tgz --executor local --share --out $OUT"),
    # torch.compile, traced on torch 2.11 (scripts/gpu/inductor-check.sh): norms and attention in
    # the default mode, the MLP at small sizes with max-autotune (its GEMM templates' configs
    # compiled as candidates, one chosen; small sizes fold many configs into one)
    *(_gpu(f"h100-trace-inductor-{m}-triton-3.6.0.tgz",
           f"$RK trace --gpu h100 --share --out $OUT -- python3 scripts/gpu/compile_{m}.py{args}")
      for m, args in (("norms", ""), ("attention", ""), ("mlp", " --tiny"))),
    _gpu("sweeps/gemm-configs-gpu-triton-3.6.0-h100.tgz",
         "$RK sweep gemm-configs --gpus h100 --mode gpu --share --out $OUT"),
)


def manifest(path: Path) -> dict:
    """manifest.json of a bundle we committed (trusted: a plain tarfile read)."""
    with tarfile.open(path) as t:
        top = next(n for n in t.getnames() if n.count("/") == 1 and n.endswith("/manifest.json"))
        f = t.extractfile(top)
        assert f is not None
        return json.load(f)


def written_by(path: Path) -> str | None:
    """The templates digest the bundle records; None for a bundle from before it was recorded."""
    return manifest(path).get("templates_sha256")


def status(ex: Example, current: str) -> str:
    if not ex.path.is_file():
        return "missing"
    return "current" if written_by(ex.path) == current else "stale"


def _reprokit() -> list[str]:
    return [sys.executable, "-m", "reprokit"]


def remake(ex: Example) -> Path:
    """Run the example's command into a scratch folder, verify what it wrote, put it in place."""
    with tempfile.TemporaryDirectory(prefix="reprokit-examples-") as tmp:
        argv = [a.replace("{out}", tmp) for a in ex.argv]
        print(f"examples: {ex.name}: reprokit {' '.join(argv)}", flush=True)
        subprocess.run([*_reprokit(), *argv], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        return _put(ex, Path(tmp), ex.made)


def remake_gpu(ex: Example) -> Path:
    """On a GPU host: run the example's device command with OUT a scratch folder, then put the
    one bundle it wrote in place as remake() does."""
    with tempfile.TemporaryDirectory(prefix="reprokit-examples-") as tmp:
        print(f"examples: {ex.name}: {ex.device}", flush=True)
        subprocess.run(["bash", "-c", ex.device], check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                       env={**os.environ, "OUT": tmp})
        return _put(ex, Path(tmp), "*.tgz")


def _put(ex: Example, folder: Path, pattern: str) -> Path:
    """The one bundle matching `pattern` in `folder`, verified, then in place at ex.path."""
    made = sorted(folder.glob(pattern))
    if len(made) != 1:
        raise SystemExit(f"examples: {ex.name}: the command wrote {len(made)} bundles matching {pattern}")
    subprocess.run([*_reprokit(), "verify", str(made[0])], check=True, stdout=subprocess.DEVNULL)
    ex.path.parent.mkdir(parents=True, exist_ok=True)
    part = ex.path.with_name(f".{ex.path.name}.partial")
    shutil.copyfile(made[0], part)
    os.replace(part, ex.path)
    return ex.path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", action="store_true", help="the table of examples, current or stale")
    p.add_argument("--make", action="store_true", help="remake the CPU examples, list the GPU ones")
    p.add_argument("--only", default=None, metavar="GLOBS", help="comma-separated globs of example names")
    p.add_argument("--stale", action="store_true", help="with --make: only those that are stale")
    p.add_argument("--slow", action="store_true", help="with --make: the slow CPU examples too")
    p.add_argument("--gpu", action="store_true", help="with --make, on the H100: the GPU examples instead")
    args = p.parse_args(argv)
    from reprokit.bundle.templates import templates_sha256

    current = templates_sha256()
    chosen = [ex for ex in EXAMPLES_TABLE
              if not args.only or any(fnmatch.fnmatchcase(ex.name, g.strip()) for g in args.only.split(","))]
    if args.make:
        failed = []
        for ex in chosen:
            if args.stale and status(ex, current) == "current":
                continue
            if args.gpu and ex.where == "gpu":
                try:
                    remake_gpu(ex)
                except subprocess.CalledProcessError as e:  # the others are still remade; exit 1 at the end
                    failed.append(ex.name)
                    print(f"examples: {ex.name}: failed (exit {e.returncode})", file=sys.stderr, flush=True)
            elif not args.gpu and ex.where == "cpu" and (args.slow or not ex.slow):
                remake(ex)
        if failed:
            print(f"examples: not remade: {', '.join(failed)}", file=sys.stderr)
            return 1
    print(f"templates_sha256 of this checkout: {current}")
    for ex in chosen:
        how = "reprokit " + " ".join(ex.argv) if ex.where == "cpu" else f"device: {ex.device}"
        print(f"{status(ex, current):8} {ex.where + (' (slow)' if ex.slow else ''):10}  {ex.name}\n             {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
