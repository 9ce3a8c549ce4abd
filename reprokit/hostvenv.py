"""The host venv that `make` installs reprokit into, made by the interpreter it runs with.

For `EXECUTOR=local` the venv must also see the packages of that interpreter (PYTHON: the one that
has triton and torch), whatever kind it is: the system Python, a venv (the lab H100's python3 is
/opt/torch/.venv) or a conda env. `venv --system-site-packages` does not do that for a venv or a
conda env: it shows the *base* interpreter's packages. So the venv gets a .pth file naming every
site directory on PYTHON's own sys.path, after the venv's own: pip sees those packages as
installed (an extra whose packages are already there is not installed again), and the venv's
python imports triton and torch from where PYTHON has them.

Standard library only: it runs before anything is installed. `python -m reprokit.hostvenv DIR
[--see-this-python]`, run with the interpreter the venv is for.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import venv
from pathlib import Path

PTH_NAME = "_reprokit_host_python.pth"


def site_dirs(path: list | None = None) -> list[str]:
    """The site directories on this interpreter's sys.path, in its order (site-packages and
    Debian's dist-packages, the user site too when it is on the path)."""
    seen, out = set(), []
    for p in sys.path if path is None else path:
        if p and p.rstrip("/").endswith(("site-packages", "dist-packages")) and p not in seen:
            seen.add(p)
            out.append(p)
    return out


def make(target: Path, see_this_python: bool) -> Path:
    """Make (or refresh) the venv at `target`; with `see_this_python`, let it see this
    interpreter's site directories. pip comes from this interpreter where it has one (through the
    .pth file), so no ensurepip is needed on a system Python that lacks it."""
    has_pip = importlib.util.find_spec("pip") is not None
    with_pip = not (see_this_python and has_pip)
    venv.EnvBuilder(with_pip=with_pip, clear=False, upgrade=False).create(str(target))
    vpy = target / "bin" / "python"
    purelib = subprocess.run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    pth = Path(purelib) / PTH_NAME
    if see_this_python:
        pth.write_text("".join(d + "\n" for d in site_dirs()))
    elif pth.exists():
        pth.unlink()
    return vpy


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m reprokit.hostvenv", description=__doc__.splitlines()[0])
    p.add_argument("target", type=Path)
    p.add_argument("--see-this-python", action="store_true",
                   help="let the venv see this interpreter's packages (EXECUTOR=local)")
    args = p.parse_args(argv)
    print(make(args.target, args.see_this_python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
