"""Fleet fixtures: a real one-host Slurm (scripts/slurm-local.sh), started once per session.

Tests marked `slurm` skip without root and Debian's slurm-wlm/munge, or fail when
REPROKIT_REQUIRE_SLURM=1 (as .ci/run sets).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.config import defaults_root

# Stacks that compile for both sm_90 and sm_100 (3.0's ptxas 12.4 knows no sm_100).
SLURM_STACKS = ("triton-3.5-cu130", "triton-3.6-cu130")


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reprokit", *args], capture_output=True, text=True,
                          cwd=defaults_root(), env=env)


def _skip_or_fail(why: str) -> None:
    if os.environ.get("REPROKIT_REQUIRE_SLURM") == "1":
        pytest.fail(f"REPROKIT_REQUIRE_SLURM=1 but {why}", pytrace=False)
    pytest.skip(why)


def _free_port_pair() -> int:
    """A port p with p and p + 1 free (slurmctld's and slurmd's)."""
    import socket

    for _ in range(50):
        with socket.socket() as a:
            a.bind(("", 0))
            p = a.getsockname()[1]
            if p >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("", p + 1))
                except OSError:
                    continue
            return p
    _skip_or_fail("no two neighbouring free ports for slurmctld and slurmd")


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """SLURM_CONF of a running one-host cluster, exported for the session; stopped at its end."""
    if os.geteuid() != 0:
        _skip_or_fail("a local Slurm needs root")
    if shutil.which("slurmctld") is None and shutil.which("apt-get") is None:
        _skip_or_fail("no Slurm here and no apt-get to install it")
    state_dir = Path(os.environ.get("REPROKIT_SLURM_DIR") or tmp_path_factory.mktemp("slurm"))
    script = defaults_root() / "scripts" / "slurm-local.sh"
    # Ports of its own: another test run on this host may have a cluster up.
    port = _free_port_pair()
    p = subprocess.run([str(script), "up", str(state_dir)], capture_output=True, text=True,
                       env={**os.environ, "SLURM_PORT": str(port)})
    if p.returncode != 0:
        _skip_or_fail(f"scripts/slurm-local.sh up failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    conf = str(state_dir / "slurm.conf")
    # The Slurm clients (here and in the CLI processes the tests start) find the cluster by it.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", conf)
        yield conf
    subprocess.run([str(script), "down", str(state_dir)], capture_output=True)
