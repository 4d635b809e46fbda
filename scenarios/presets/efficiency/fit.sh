#!/usr/bin/env bash
# Refits the efficiency files of this folder with `stepsim calibrate` (the simulator in the loop).
# One parameter per measured GPU type, fitted on one set (or part of one) and checked on another;
# GPUs without measurements derive from the H100 fit (their files say "kind": "derived"; a file
# without "kind" is a fit). Usage: scenarios/presets/efficiency/fit.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build}
bin="$build/app/stepsim"
out=scenarios/presets/efficiency
"$bin" calibrate --gpu a100-sxm-80gb --sets narayanan-sc21-table1 --params gemm_max --out $out/a100-sxm-80gb.json
"$bin" calibrate --gpu a100-sxm-40gb --sets fujii-2024-abci-a100 --records tp4-cp1-pp2-mbs1-gpus8,tp4-cp1-pp2-mbs1-gpus16,tp4-cp1-pp2-mbs1-gpus32 --params gemm_max --out $out/a100-sxm-40gb.json
"$bin" calibrate --gpu h100-sxm-94gb --sets fujii-2024-tsubame-h100 --records tp2 --params gemm_max --out $out/h100-sxm-94gb.json
# The files are embedded in the binary: rebuild before deriving from the new H100 fit.
cmake --build "$build" -j2 --target stepsim > /dev/null
for gpu in h100-sxm-80gb h200-sxm-141gb b200-180gb; do
  "$bin" calibrate --gpu $gpu --base h100-sxm-94gb --params none --out $out/$gpu.json
  sed -i '1a\  "kind": "derived",' $out/$gpu.json
done
cmake --build "$build" -j2 --target stepsim > /dev/null
grep -H '"gemm_max"' $out/*.json
