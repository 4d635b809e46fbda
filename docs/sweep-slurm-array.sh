#!/usr/bin/env bash
# One sweep split over a Slurm job array: array task I of N runs `stepsim sweep --shard I/N` into
# its own directory OUT/shard-I (one writer per directory); once every task has ended, a job that
# depends on the array merges the shards into OUT/results.jsonl and OUT/summary.md.
#
#   jobid=$(sbatch --parsable --array=0-15 docs/sweep-slurm-array.sh SWEEP.json OUT)
#   sbatch --dependency=afterok:$jobid --wrap "stepsim merge OUT/shard-* --out OUT/results.jsonl --summary OUT/summary.md"
#
# STEPSIM names the executable (default: stepsim on PATH). Each task uses the CPUs Slurm gives it
# (-j); `--max-candidates` applies per shard. A task that was cut short continues its shard when
# run again (--resume).
#SBATCH --job-name=stepsim-sweep
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00
#SBATCH --output=stepsim-sweep-%A_%a.log
set -euo pipefail
sweep="${1:?usage: sbatch --array=0-(N-1) sweep-slurm-array.sh SWEEP.json OUT_DIR}"
out="${2:?usage: sbatch --array=0-(N-1) sweep-slurm-array.sh SWEEP.json OUT_DIR}"
stepsim="${STEPSIM:-stepsim}"
index=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-0}))
count="${SLURM_ARRAY_TASK_COUNT:?run it as an array job: sbatch --array=0-(N-1)}"
resume=()
[ -e "$out/shard-$index/results.shard-$index-of-$count.jsonl" ] && resume=(--resume)
"$stepsim" sweep "$sweep" --shard "$index/$count" -j "${SLURM_CPUS_PER_TASK:-1}" -q "${resume[@]}" --out "$out/shard-$index"
