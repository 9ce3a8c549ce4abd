#!/usr/bin/env bash
# One device command: the torch.compile programs traced on the H100 (max-autotune MLP, default-mode
# norms and attention), with what says why a trace fell short: which ptxas torch ships, each
# bundle's trace.json (processes, missed), every case's status and reason. Results under $OUT:
# inductor.tgz (bundles, replays with REPLAY=1, logs) and summary.txt.
set -uo pipefail
OUT=${OUT:?set OUT}
WHEELS=${WHEELS:-.gpu/wheels}
PY=${PY:-python3}
W=$(mktemp -d); mkdir -p "$W"/{bundles,logs,replays}
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
t0=$SECONDS
. scripts/gpu/install.sh
install_host "$WHEELS" "$PY" "$W/logs/install.log"
say "install: $((SECONDS - t0)) s"
RK=.reprokit/host-local/bin/reprokit
say "$("$PY" -c 'import torch, triton, os; d=os.path.join(os.path.dirname(torch.__file__), "bin"); print("torch", torch.__version__, "triton", triton.__version__, "torch/bin:", sorted(os.listdir(d)) if os.path.isdir(d) else None)')"
for m in ${PROGRAMS:-mlp norms attention}; do
    left=$(( ${BUDGET_S:-520} - (SECONDS - t0) ))
    [ "$left" -gt 40 ] || { say "$m: skipped, $left s left"; continue; }
    s=$SECONDS
    timeout $(( left < 200 ? left : 200 )) "$RK" trace --gpu h100 --out "$W/bundles" --json -- "$PY" "scripts/gpu/compile_$m.py" \
        >"$W/logs/trace-$m.json" 2>"$W/logs/trace-$m.err"
    say "trace $m: exit $? in $((SECONDS - s)) s; $(grep -h 'vs eager' "$W/logs/trace-$m.err" | tail -1)"
    grep -h "launched no Triton\|not captured faithfully" "$W/logs/trace-$m.err" | head -2 | cut -c1-400 | tee -a "$OUT/summary.txt"
    b=$(ls "$W"/bundles/trace-compile_"$m"-*.tgz 2>/dev/null | head -1)
    [ -n "$b" ] || continue
    tar -xzOf "$b" --wildcards '*/trace/trace.json' | "$PY" -c 'import json,sys; t=json.load(sys.stdin); print("  processes", t.get("processes"), "missed", t["missed"][:3])' | tee -a "$OUT/summary.txt"
    tar -xzOf "$b" --wildcards '*/results.json' | "$PY" -c '
import json,sys,collections
r=json.load(sys.stdin)["cases"]
print("  statuses", dict(collections.Counter(c["status"] for c in r)))
for c in r[:40]:
    print("   ", c["id"], c["status"], (c.get("reproduced") or {}).get("reason","")[:160], c.get("toolchain"))' | tee -a "$OUT/summary.txt"
    if [ -n "${REPLAY:-}" ]; then
        s=$SECONDS
        timeout 120 "$RK" replay "$b" --executor local --out "$W/replays" --json >"$W/logs/replay-$m.json" 2>"$W/logs/replay-$m.err"
        say "replay $m: exit $? in $((SECONDS - s)) s; $(tail -3 "$W/logs/replay-$m.err" | tr '\n' ' ' | cut -c1-300)"
    fi
done
tar -czf "$OUT/inductor.tgz" -C "$W" bundles logs replays
ls -la "$OUT"
