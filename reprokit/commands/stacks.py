"""`reprokit stacks`: the pinned stacks and GPU profiles that stacks.toml defines."""

from __future__ import annotations

import json

from rich.table import Table

from reprokit.commands._common import console
from reprokit.config import load_config


def add_parser(sub) -> None:
    p = sub.add_parser("stacks", help="list pinned stacks and GPU profiles",
                       epilog="example: reprokit stacks --json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    cfg = load_config()
    if args.json:
        print(json.dumps({"stacks": {n: s.pins() for n, s in cfg.stacks.items()},
                          "gpus": {k: g.to_dict() for k, g in cfg.gpus.items()}}, indent=1))
        return 0
    t = Table(title="stacks")
    for col in ("stack", "triton", "torch", "cuda", "python", "base image"):
        t.add_column(col)
    for s in cfg.stacks.values():
        t.add_row(s.name, s.triton, s.torch or "-", s.cuda or "-", s.python or "-", s.base_image or "-")
    g = Table(title="GPU profiles")
    for col in ("gpu", "name", "arch", "SMs", "smem/block", "GB/s", "fp16 TFLOP/s"):
        g.add_column(col)
    for p in cfg.gpus.values():
        g.add_row(p.key, p.name, p.arch, str(p.sm_count), str(p.smem_per_block), f"{p.mem_bandwidth_gbs:g}",
                  f"{p.fp16_tflops:g}")
    c = console()
    c.print(t)
    c.print(g)
    return 0
