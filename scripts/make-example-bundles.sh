#!/usr/bin/env bash
# Remake the small example bundles under bundles/examples/ that CI replays, diffs and reports on:
# the same five cases, compile-only for h100, on Triton 3.0.0, 3.4.0, 3.5.0 and 3.9.0 (venv stacks, share
# mode). Rerun it when the bundle format or the harness's recorded results change.
set -euo pipefail
cd "$(dirname "$0")/.."
RK="${RK:-.reprokit/host/bin/reprokit}"
CASES="block_ptr.p0,experimental_descriptor.p0,experimental_descriptor.p1,tensor_descriptor.p0,host_descriptor.p0"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$RK" run --gpu h100 --mode compile-only --stacks triton-3.0-cu129,triton-3.4-cu129,triton-3.5-cu130,triton-3.9-cu132 \
    --executor venv --workers 2 --cases "$CASES" --share --out "$tmp" --json >/dev/null
mkdir -p bundles/examples
for stack in triton-3.0-cu129 triton-3.4-cu129 triton-3.5-cu130 triton-3.9-cu132; do
    src=("$tmp"/"$stack"-h100-*.tgz)
    "$RK" verify "${src[0]}" >/dev/null
    cp "${src[0]}" "bundles/examples/$stack-h100.tgz"
done
ls -l bundles/examples
