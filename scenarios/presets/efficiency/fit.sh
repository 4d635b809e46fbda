#!/usr/bin/env bash
# Refits the efficiency files of this folder with `stepsim calibrate` (the simulator in the loop).
# One or two parameters per measured GPU type, fitted on one set (or part of one) under the software
# stack of those runs: gemm_max, the fraction of the GPU's published maximum achievable matmul
# throughput that the training GEMMs reach, and hbm_eff, the fraction of HBM bandwidth, where the
# set has many memory-bound kernels. The H100 80 GB is fitted on NVIDIA's Llama 3 70B table (NeMo
# containers: gemm_max on its BF16 rows, then gemm_fp8_max, the fraction of the FP8 matmul ceiling
# that the FP8 GEMMs reach, on its FP8 rows), the 8B table and the Megatron-LM README table held out; the H200 (the same Hopper
# SMs, clocks and matmul ceiling) takes its fractions of its own ceilings, and so do the Blackwell
# GPUs (B200, GB200, B300, GB300), whose measured runs (megatron-bridge-llama, megatron-lm-ci-speed) are compared, never fitted
# on (their files say "kind": "derived"; a file without "kind" is a fit). Usage: scenarios/presets/efficiency/fit.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build}
bin="$build/app/stepsim"
out=scenarios/presets/efficiency
"$bin" calibrate --gpu a100-sxm-80gb --sets narayanan-sc21-table1 --params gemm_max,hbm_eff --out $out/a100-sxm-80gb.json
"$bin" calibrate --gpu a100-sxm-40gb --sets fujii-2024-abci-a100 \
  --records tp4-cp1-pp2-mbs1-gpus8,tp4-cp1-pp2-mbs1-gpus16,tp4-cp1-pp2-mbs1-gpus32 --params gemm_max --out $out/a100-sxm-40gb.json
"$bin" calibrate --gpu h100-sxm-94gb --sets fujii-2024-tsubame-h100 --records tp2 --params gemm_max --out $out/h100-sxm-94gb.json
"$bin" calibrate --gpu h100-sxm-80gb --sets dgxc-h100-llama3 \
  --records llama3-70b-nemo-24.09-bf16,llama3-70b-nemo-24.12-bf16,llama3-70b-nemo-25.02-bf16 --params gemm_max \
  --out $out/h100-sxm-80gb.json
# The files are embedded in the binary: rebuild before fitting on top of (or deriving from) a new fit.
cmake --build "$build" -j2 --target stepsim > /dev/null
# FP8: gemm_fp8_max on the FP8 rows of the same table, gemm_max kept from the BF16 fit above.
"$bin" calibrate --gpu h100-sxm-80gb --base h100-sxm-80gb --sets dgxc-h100-llama3 \
  --records llama3-70b-nemo-24.09-fp8,llama3-70b-nemo-24.12-fp8,llama3-70b-nemo-25.02-fp8 --params gemm_fp8_max \
  --out $out/h100-sxm-80gb.json
cmake --build "$build" -j2 --target stepsim > /dev/null
for gpu in h200-sxm-141gb h200-nvl-141gb b200-180gb gb200-186gb b300-288gb gb300-288gb; do
  "$bin" calibrate --gpu $gpu --base h100-sxm-80gb --params none --out $out/$gpu.json
  sed -i '1a\  "kind": "derived",' $out/$gpu.json
done
cmake --build "$build" -j2 --target stepsim > /dev/null
grep -H '"gemm_max"' $out/*.json
