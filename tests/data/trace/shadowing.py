"""A program that imports a package of its own named like a folder of reprokit's checkout
(`kernels`, found on its PYTHONPATH), and imports no `tests` or `scripts` at all: traced, it must
see exactly what it sees plain, never reprokit's folders (nor, for an installed reprokit, the host
venv's site-packages). Exits 1, saying what it got, when something of reprokit's shadows its own."""

import importlib.util
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x, out, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out + o, tl.load(x + o, mask=m) + 1, mask=m)


x = torch.arange(100, dtype=torch.float32)
out = torch.empty_like(x)
add_one[(2,)](x, out, 100, BLOCK=64)
assert torch.equal(out, x + 1)

import kernels  # noqa: E402 - the program's own, from its PYTHONPATH

wrong = []
if getattr(kernels, "WHO", None) != "the program's own":
    wrong.append(f"kernels is {getattr(kernels, '__file__', None) or list(getattr(kernels, '__path__', []))}")
for name in ("tests", "scripts", "benchmarks", "jsonschema"):
    spec = importlib.util.find_spec(name)
    if spec is not None:  # the program has none of these: one found is someone else's
        wrong.append(f"{name} found at {spec.origin or list(spec.submodule_search_locations or [])}")
if wrong:
    print("shadowed: " + "; ".join(wrong), file=sys.stderr)
    sys.exit(1)
print("shadowing: the program's own imports")
