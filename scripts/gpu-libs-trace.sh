#!/usr/bin/env bash
# On an H100 (no network): trace the library corpus with the machine's own Triton and torch, then
# replay each trace bundle on the GPU, writing everything under $OUT:
#   - Liger-Kernel 0.8.5 (RMSNorm, LayerNorm, SwiGLU, RoPE, CrossEntropy, fused linear cross
#     entropy; forward and backward): tests/data/trace/libs/liger_ops.py, the wheel carried in
#     .whl/ (on a connected machine: pip download --no-deps liger-kernel==0.8.5 -d .whl);
#   - the library patterns: libdevice aliases, in-place arguments, factory/wrapper/tuple kernels;
#   - Triton's Gluon TMA and WGMMA tutorials' kernels (tests/data/trace/gluon/).
# Expected: every launched specialisation captured (trace.json: no `missed`, every case
# launched), 0 compile_error in the traces, 0 wrong in the replays (summary.json says).
#
# Needs reprokit importable by $PYTHON (the host side installed from the wheelhouse, docs/offline.md,
# or PYTHONPATH). Usage: OUT=/some/folder scripts/gpu-libs-trace.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder for the bundles}"
PY="${PYTHON:-python3}"
WHEEL=".whl/liger_kernel-0.8.5-py3-none-any.whl"
[ -f "$WHEEL" ] || { echo "missing $WHEEL (pip download --no-deps liger-kernel==0.8.5 -d .whl)" >&2; exit 2; }
site="$(mktemp -d)"
trap 'rm -rf "$site"' EXIT
# --no-deps: its requirements would pull another torch; `packaging`, the one other module it
# imports, comes with the machine's torch venv (checked below)
. scripts/gpu/install.sh
install_beside "$PY" .whl "$site" "$site/install.log" liger-kernel==0.8.5
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import packaging, liger_kernel, triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"

mkdir -p "$OUT"
programs=(libs/liger_ops.py libs/in_place.py libs/libdevice_aliases.py libs/patterns.py
          gluon/gluon_tma.py gluon/gluon_wgmma.py)
for prog in "${programs[@]}"; do
    name="$(basename "$prog" .py)"
    mkdir -p "$OUT/$name"
    echo "== $name: trace" >&2
    # --tensors small: the replay launches from the program's own inputs and checks its outputs
    "$PY" -m reprokit trace --gpu h100 --share --tensors small --json --out "$OUT/$name" -- \
        "$PY" "tests/data/trace/$prog" >"$OUT/$name/trace.out.json" 2>"$OUT/$name/trace.err" || true
    bundle="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("bundle", ""))' "$OUT/$name/trace.out.json")"
    [ -n "$bundle" ] || { echo "$name: no trace bundle (see $OUT/$name/trace.err)" >&2; continue; }
    echo "== $name: replay on the GPU" >&2
    "$PY" -m reprokit replay "$bundle" --executor local --share --all --json --out "$OUT/$name/replay" \
        >"$OUT/$name/replay.out.json" 2>"$OUT/$name/replay.err" || true
done

# One summary: per program, the trace's statuses and what it missed, the replay's GPU statuses.
"$PY" - "$OUT" <<'EOF'
import json, sys, tarfile
from pathlib import Path

out = Path(sys.argv[1])
summary = {}
for folder in sorted(p for p in out.iterdir() if p.is_dir()):
    doc = {}
    bundles = sorted(folder.glob("*.tgz"))
    replays = sorted((folder / "replay").glob("*.tgz")) if (folder / "replay").is_dir() else []
    for label, found in (("trace", bundles), ("replay", replays)):
        if not found:
            doc[label] = None
            continue
        with tarfile.open(found[0]) as tar:
            names = tar.getnames()
            top = names[0].split("/")[0]
            results = json.load(tar.extractfile(f"{top}/results.json"))
            plan = json.load(tar.extractfile(f"{top}/plan.json"))
            tj = json.load(tar.extractfile(f"{top}/trace/trace.json")) if f"{top}/trace/trace.json" in names else {}
        cases = {c["id"]: {"status": c.get("status"), "verdict": c.get("verdict"),
                           "gpu": (c.get("gpu") or {}).get("status")} for c in results["cases"]}
        doc[label] = {"bundle": found[0].name, "cases": cases,
                      "compile_error": sorted(k for k, v in cases.items() if v["status"] == "compile_error"),
                      "wrong": sorted(k for k, v in cases.items() if v["gpu"] == "wrong"),
                      "not_launched_in_program": sorted(c["id"] for c in plan["cases"]
                                                        if not (c.get("trace") or {}).get("launched", True)),
                      "missed": tj.get("missed"), "program_exit": tj.get("exit_code")}
    summary[folder.name] = doc
(out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
bad = {k: v for k, v in summary.items()
       if not v.get("trace") or not v.get("replay") or v["trace"]["compile_error"] or v["trace"]["missed"]
       or v["replay"]["wrong"] or v["trace"]["program_exit"] != 0}
print(json.dumps({"programs": sorted(summary), "not_as_expected": sorted(bad)}, indent=1))
EOF
