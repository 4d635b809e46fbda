#!/usr/bin/env bash
# Refits the efficiency files of this folder with `stepsim calibrate` (the simulator in the loop).
# One or two parameters per measured GPU type, fitted on one set (or part of one) under the software
# stack of those runs: gemm_max, the fraction of the GPU's published maximum achievable matmul
# throughput that the training GEMMs reach, and hbm_eff, the fraction of HBM bandwidth, where the
# set has many memory-bound kernels. GPUs without measurements take their published ceilings as
# they are (their files say "kind": "derived"; a file without "kind" is a
# fit). Usage: scenarios/presets/efficiency/fit.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build}
bin="$build/app/stepsim"
out=scenarios/presets/efficiency
"$bin" calibrate --gpu a100-sxm-80gb --sets narayanan-sc21-table1 --params gemm_max,hbm_eff --out $out/a100-sxm-80gb.json
"$bin" calibrate --gpu a100-sxm-40gb --sets fujii-2024-abci-a100 \
  --records tp4-cp1-pp2-mbs1-gpus8,tp4-cp1-pp2-mbs1-gpus16,tp4-cp1-pp2-mbs1-gpus32 --params gemm_max --out $out/a100-sxm-40gb.json
"$bin" calibrate --gpu h100-sxm-94gb --sets fujii-2024-tsubame-h100 --records tp2 --params gemm_max --out $out/h100-sxm-94gb.json
for gpu in h100-sxm-80gb h200-sxm-141gb b200-180gb gb200-186gb; do
  "$bin" calibrate --gpu $gpu --params none --out $out/$gpu.json
  sed -i '1a\  "kind": "derived",' $out/$gpu.json
done
cmake --build "$build" -j2 --target stepsim > /dev/null
grep -H '"gemm_max"' $out/*.json
