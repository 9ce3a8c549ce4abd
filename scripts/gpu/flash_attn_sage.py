"""flash-attn 2.8.3.post2 Triton ops + sageattention 1.0.6, on small tensors (the H100's, else the
CPU's under TRITON_INTERPRET=1), checked against torch. flash-attn's Python package is its sdist's
`flash_attn/` folder (FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE, nothing built), sageattention and einops
from the package index with --no-deps, all on PYTHONPATH. Its `triton_linear_act` is left out: its
kernels read plain float globals, which Triton 3.6's compiler refuses (the interpreter allows them).

Patches (all in this file, none in the libraries):
  P1 flash_attn: a bare package module registered in sys.modules (its __path__ the installed folder),
     so flash_attn.ops.triton.* import without flash_attn/__init__.py (which loads the CUDA extension).
  P2 torch.cuda.current_device -> 0 and get_device_properties falls back to an H100-like namespace
     (warp_size 32, 132 SMs) when the CPU torch refuses; layer_norm.py asks at import time and in bwd.
     P2b torch.cuda.device(...) -> nullcontext (flash-attn's `with torch.cuda.device(x.device.index)`).
  P3 Autotuner.do_bench: if the active driver cannot be had (plain interpreter, no GPU), a benchmarker
     that runs the config once and reports a constant time (so the autotuner keeps the first config,
     as reprokit's trace does). Where a driver exists (under reprokit's stand-in) it is used as is.
  P4 triton.ops.matmul_perf_model (gone since Triton 3.0) stubbed for flash_attn/ops/triton/linear.py:
     early_config_prune = identity, estimate_matmul_time = 0 (top_k=10 then keeps the first 10 configs).
  P5 sageattention.sageattn asserts q.is_cuda: the program runs its body (the same calls, in the
     same order) without that assert.
"""
import sys
import types

import torch
import torch.nn.functional as F

if torch.cuda.is_available():  # the GPU run: every tensor below on the H100
    torch.set_default_device("cuda")

import importlib.util

torch.manual_seed(0)
FAILS = []


def check(name, got, ref, atol, rtol=0.0):
    got, ref = got.float(), ref.float()
    err = (got - ref).abs().max().item()
    ok = torch.allclose(got, ref, atol=atol, rtol=rtol) and not torch.isnan(got).any()
    print(f"{'PASS' if ok else 'FAIL'} {name}: max abs err {err:.3g}", flush=True)
    if not ok:
        FAILS.append(name)


# P1
pkg = types.ModuleType("flash_attn")
pkg.__path__ = list(importlib.util.find_spec("flash_attn").submodule_search_locations)  # located, not run
pkg.__version__ = "2.8.3.post2"
sys.modules["flash_attn"] = pkg

# P2
_gdp = torch.cuda.get_device_properties


def _props(device=None):
    try:
        return _gdp(device)
    except Exception:
        return types.SimpleNamespace(warp_size=32, multi_processor_count=132, name="cpu-fallback")


if not torch.cuda.is_available():
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = _props
    # P2b: `with torch.cuda.device(x.device.index)` with a CPU tensor's index None fails in
    # torch.cuda._exchange_device (None < 0): a no-op context instead
    import contextlib
    torch.cuda.device = lambda d=None: contextlib.nullcontext()

# P3
from triton.runtime import autotuner as _at

_orig_db = _at.Autotuner.do_bench


def _do_bench(self):
    try:
        return _orig_db.func(self)  # a functools.cached_property in 3.6
    except RuntimeError:
        def once(fn, quantiles=None):
            fn()
            return [1.0, 1.0, 1.0] if quantiles else 1.0
        return once


_at.Autotuner.do_bench = property(_do_bench)

# P4
_ops = types.ModuleType("triton.ops")
_mpm = types.ModuleType("triton.ops.matmul_perf_model")
_mpm.early_config_prune = lambda configs, named_args, **kw: configs
_mpm.estimate_matmul_time = lambda **kw: 0.0
_ops.matmul_perf_model = _mpm
sys.modules["triton.ops"] = _ops
sys.modules["triton.ops.matmul_perf_model"] = _mpm

import sageattention.core as sc
from flash_attn.ops.triton.cross_entropy import cross_entropy_loss
from flash_attn.ops.triton.layer_norm import layer_norm_fn, layer_norm_ref, rms_norm_fn, rms_norm_ref
from flash_attn.ops.triton.rotary import apply_rotary

# ---------- flash-attn layer norm with residual (prenorm), fwd + bwd ----------
M, N = 16, 96
x = torch.randn(M, N, requires_grad=True)
res = torch.randn(M, N, requires_grad=True)
w = (1 + 0.1 * torch.randn(N)).requires_grad_()
b = (0.1 * torch.randn(N)).requires_grad_()
out, res_out = layer_norm_fn(x, w, b, residual=res, eps=1e-6, dropout_p=0.0, prenorm=True)
xr, resr, wr, br = (t.detach().clone().requires_grad_() for t in (x, res, w, b))
out_r, res_out_r = layer_norm_ref(xr, wr, br, residual=resr, eps=1e-6, prenorm=True)
check("layer_norm_fn fwd", out, out_r, 1e-4)
check("layer_norm_fn residual_out", res_out, res_out_r, 1e-5)
g = torch.randn(M, N)
(out * g).sum().backward()
(out_r * g).sum().backward()
check("layer_norm_fn dx", x.grad, xr.grad, 1e-4)
check("layer_norm_fn dresidual", res.grad, resr.grad, 1e-4)
check("layer_norm_fn dw", w.grad, wr.grad, 1e-3)
check("layer_norm_fn db", b.grad, br.grad, 1e-3)

# ---------- flash-attn rms norm with residual, fp16, fwd ----------
xh = torch.randn(8, 64, dtype=torch.float16)
rh = torch.randn(8, 64, dtype=torch.float16)
wh = (1 + 0.1 * torch.randn(64)).half()
y = rms_norm_fn(xh, wh, None, residual=rh, eps=1e-6, dropout_p=0.0)
y_r = rms_norm_ref(xh.float(), wh.float(), None, residual=rh.float(), eps=1e-6)
check("rms_norm_fn fwd fp16", y, y_r, 2e-2)

# ---------- flash-attn rotary ----------
B, S, H, D = 2, 12, 3, 32
rd = 16
xq = torch.randn(B, S, H, D)
pos = torch.arange(S + 4, dtype=torch.float32)
inv = 1.0 / (10000 ** (torch.arange(0, rd, 2).float() / rd))
ang = torch.outer(pos, inv)
cos, sin = ang.cos(), ang.sin()


def rotary_ref(x, cos, sin, off, interleaved):
    ro = x[..., :rd]
    c = cos[off:off + x.shape[1]][None, :, None, :]
    s = sin[off:off + x.shape[1]][None, :, None, :]
    if interleaved:
        x1, x2 = ro[..., 0::2], ro[..., 1::2]
        o = torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1).flatten(-2)
    else:
        x1, x2 = ro[..., :rd // 2], ro[..., rd // 2:]
        o = torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)
    return torch.cat([o, x[..., rd:]], dim=-1)


check("apply_rotary", apply_rotary(xq, cos, sin, seqlen_offsets=0), rotary_ref(xq, cos, sin, 0, False), 1e-5)
check("apply_rotary interleaved off=3", apply_rotary(xq, cos, sin, seqlen_offsets=3, interleaved=True),
      rotary_ref(xq, cos, sin, 3, True), 1e-5)

# ---------- flash-attn cross entropy fwd + bwd ----------
logits = torch.randn(6, 100, requires_grad=True)
labels = torch.randint(0, 100, (6,))
labels[2] = -100
loss, zl = cross_entropy_loss(logits, labels, label_smoothing=0.0)
lr = logits.detach().clone().requires_grad_()
loss_r = F.cross_entropy(lr, labels, reduction="none", ignore_index=-100)
check("cross_entropy fwd", loss, loss_r, 1e-5)
loss.sum().backward()
loss_r.sum().backward()
check("cross_entropy bwd", logits.grad, lr.grad, 1e-5)
loss2, _ = cross_entropy_loss(logits.detach(), labels, label_smoothing=0.1)
check("cross_entropy smoothing fwd", loss2,
      F.cross_entropy(logits.detach(), labels, reduction="none", ignore_index=-100, label_smoothing=0.1), 1e-5)

# ---------- sageattention 1.0.6 (P5: sageattn's body without `assert q.is_cuda`) ----------


def sageattn_cpu(q, k, v, is_causal=False, sm_scale=None):
    dtype = q.dtype
    k = k - k.mean(dim=2, keepdim=True)  # smooth_k (HND)
    if dtype in (torch.bfloat16, torch.float32):
        v = v.to(torch.float16)
    if q.size(-1) == 96:
        q8, qs, k8, ks = sc.per_block_int8_hd96(q, k, sm_scale=sm_scale, tensor_layout="HND")
        f = sc.attn_h96_true if is_causal else sc.attn_h96_false
    else:
        q8, qs, k8, ks = sc.per_block_int8(q, k, sm_scale=sm_scale, tensor_layout="HND")
        f = sc.attn_true if is_causal else sc.attn_false
    return f(q8, k8, v, qs, ks, tensor_layout="HND", output_dtype=dtype), (q8, qs, k8, ks)


for hd, causal in ((64, False), (64, True), (96, True)):
    q = torch.randn(1, 2, 128, hd, dtype=torch.float16)
    k = torch.randn(1, 2, 128, hd, dtype=torch.float16)
    v = torch.randn(1, 2, 128, hd, dtype=torch.float16)
    o, (q8, qs, k8, ks) = sageattn_cpu(q, k, v, is_causal=causal)
    if not causal:
        # the quantiser itself: dequantised int8 values within one step of q * sm_scale * log2(e)
        qq = q.float() * (hd ** -0.5) * 1.44269504
        deq = q8.float() * qs.view(1, 2, 1, 1)
        check("sage per_block_int8 q", deq, qq, qs.max().item() * 1.01)
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    check(f"sageattn hd{hd} causal={causal}", o, ref, 5e-2)

print("FAILED:" if FAILS else "ALL PASS", FAILS)
sys.exit(1 if FAILS else 0)
