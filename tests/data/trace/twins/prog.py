"""Two kernels of one name (`scale`) in two modules, as a library's add_vectors.py and
add_vectors2.py define two `add_vectors`: each is a family of its own in the trace."""

import first
import second
import torch

x = torch.arange(64, dtype=torch.float32)
for mod, k in ((first, 2), (second, 3)):
    out = torch.empty_like(x)
    mod.scale[(1,)](x, out, 64, BLOCK=64)
    assert torch.equal(out, x * k)
print("twins: done")
