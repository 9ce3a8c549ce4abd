#!/usr/bin/env bash
# The H100 evidence for tracing torch.compile programs (issue 29: items 1, 4, 6, 7), in one device
# command of at most 10 minutes, from the checkout's root, everything written under $OUT:
#
#   bundles/    `reprokit trace` of scripts/gpu/compile_{mlp,attention,norms}.py (mlp with max-autotune)
#   replays/    each bundle replayed on the GPU it was traced on (`replay --executor local`)
#   coexist/    the mlp traced by reprokit while tritonparse's structured logging runs in it too
#   bench/      make bench-trace's side by side (plain / reprokit --tensors none|small / tritonparse)
#               on compile_norms.py, 5 interleaved rounds: bench-trace.json and the printed medians
#   summary.txt every step's exit code; logs/ every step's output
#
# Needs: python3 with torch 2.11 + triton 3.6 (the lab H100's /opt/torch/.venv), and wheels/ carried
# beside the checkout: docs/offline.md's wheelhouse plus tritonparse's wheel
#   reprokit wheelhouse --out wheels --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --extras test
#   pip download tritonparse==0.6.0 zstandard --no-deps --python-version 3.12 \
#       --platform manylinux_2_17_x86_64 --only-binary :all: -d wheels   (zstandard: tritonparse's one need on import)
# STEPS=bundles,coexist,bench (the default: all) picks steps, so that the work can be split over
# two device commands of 10 minutes. Triton 3.8+'s autotuning listener has its own run:
# scripts/gpu/autotune-listener.sh.
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
WHEELS=${WHEELS:-wheels}
PY=${PY:-python3}
mkdir -p "$OUT"/{bundles,replays,coexist,bench,logs}
say() { echo "$*" | tee -a "$OUT/summary.txt"; }

. scripts/gpu/install.sh
install_host "$WHEELS" "$PY" "$OUT/logs/install.log"
RK=.reprokit/host-local/bin/reprokit
TP=$PWD/.reprokit/tritonparse  # tritonparse for the program's python, kept out of its site-packages
(install_beside "$PY" "$WHEELS" "$TP" "$OUT/logs/tritonparse-install.log" tritonparse==0.6.0 zstandard) \
    || say "tritonparse: not installed (see logs/tritonparse-install.log)"
say "$("$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)')"

STEPS=",${STEPS:-bundles,coexist,bench},"
for m in $([[ $STEPS == *,bundles,* ]] && echo mlp attention norms); do
    timeout 170 "$RK" trace --gpu h100 --out "$OUT/bundles" --json -- "$PY" "scripts/gpu/compile_$m.py" \
        >"$OUT/logs/trace-$m.json" 2>"$OUT/logs/trace-$m.err"
    say "trace $m: exit $?  ($(grep -h 'vs eager' "$OUT/logs/trace-$m.err" | tail -1))"
    b=$(ls "$OUT"/bundles/trace-compile_"$m"-*.tgz 2>/dev/null | head -1)
    [ -n "$b" ] || continue
    timeout 90 "$RK" replay "$b" --executor local --out "$OUT/replays" --all --json \
        >"$OUT/logs/replay-$m.json" 2>"$OUT/logs/replay-$m.err"
    say "replay $m: exit $?"
done

if [[ $STEPS == *,coexist,* ]]; then
PYTHONPATH="$TP" timeout 150 "$RK" trace --gpu h100 --out "$OUT/coexist" --json -- \
    "$PY" scripts/gpu/with_tritonparse.py "$OUT/coexist/tritonparse" scripts/gpu/compile_mlp.py \
    >"$OUT/logs/coexist.json" 2>"$OUT/logs/coexist.err"
say "coexist: exit $?; $(grep -h 'tritonparse events' "$OUT/logs/coexist.err" | tail -1); reprokit cases: $(
    "$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$OUT/logs/coexist.json" 2>/dev/null)"
grep -h "single slot" "$OUT/logs/coexist.err" | head -3 | tee -a "$OUT/summary.txt"
fi

if [[ $STEPS == *,bench,* ]]; then
    PYTHONPATH="$TP" timeout 250 .reprokit/host-local/bin/python benchmarks/bench_trace_side.py --python "$PY" \
        --rounds 5 --out "$OUT/bench" -- scripts/gpu/compile_norms.py >"$OUT/logs/bench.txt" 2>&1
    say "bench: exit $?"
    tail -6 "$OUT/logs/bench.txt" | tee -a "$OUT/summary.txt"
fi
