#!/usr/bin/env bash
# What a paper reproduction costs on this GPU, before and after the one-GPU settings, in one command.
#
#   OUT=results bash scripts/gpu_bench.sh          # a GPU machine with PyTorch + transformers: < 8 minutes
#   OUT=/tmp/x bash scripts/gpu_bench.sh --dry     # anywhere: a tiny model on the CPU, a test of this script
#
# Needs neither Ray nor MLflow (benchmarks/bench_paper.py imports neither). Stages, most valuable first, each
# given what is left of the time budget (GPU_BENCH_SECONDS, default 450), so that a slow stage costs the later
# ones and never the deadline:
#   1. step time at batch 32 on mul_format's padding_reverse 10-digit point (the paper's costliest kind of
#      trial) before and after: step_batch32.jsonl
#   2. the aggregate throughput of 1, 2 and 4 such trials side by side (separate processes) and one trial's
#      memory: gpu_packing.json (copy it to benchmarks/results/ to make it the paper scale's default packing)
#   3. the GPU-hours of the seven paper grids before and after (after with the measured packing):
#      paper_gpu_hours_{before,after}.{md,json}
# and summary.md, which names the device and says which stages finished.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_bench_out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# compiled graphs are cached on disk, so the packed processes and later stages reuse the first compilation
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/gpu_bench_inductor}
BUDGET=${GPU_BENCH_SECONDS:-450}

if [[ "${1:-}" == "--dry" ]]; then
  DEVICE=(--device cpu --preset tiny --probe 300 --set train.compile=false)
  STEP=(--steps 6 --warmup 1)
  TRIALS=1,2
  TABLE=(--steps 2 --warmup 1 --eval-samples 8 --grids mul_simple_case)
  BUDGET=${GPU_BENCH_SECONDS:-600}
else
  DEVICE=(--device cuda)
  STEP=(--steps 300 --warmup 3)
  TRIALS=1,2,4
  TABLE=(--steps 20 --warmup 2 --eval-samples 128)
fi
BENCH=("$PY" benchmarks/bench_paper.py)
START=$SECONDS
STATUS=()

stage() {  # stage NAME COMMAND...: run with the time that is left, note how it ended
  local name=$1 left=$((BUDGET - (SECONDS - START)))
  shift
  if ((left < 10)); then
    STATUS+=("$name: skipped (time budget spent)")
    return
  fi
  echo "== $name ($left s left)" >&2
  timeout "$left" "$@"
  local rc=$?
  if ((rc == 0)); then STATUS+=("$name: done"); else STATUS+=("$name: failed or timed out (exit $rc)"); fi
}

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
  "$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
} >"$OUT/device.txt"

for mode in before after; do
  stage "step $mode" "${BENCH[@]}" step --mode "$mode" --batch-size 32 "${DEVICE[@]}" "${STEP[@]}" \
    >>"$OUT/step_batch32.jsonl"
done
stage "packing" "${BENCH[@]}" pack --trials "$TRIALS" --out "$OUT" -- --mode after --batch-size 32 \
  "${DEVICE[@]}" "${STEP[@]}"
stage "table before" "${BENCH[@]}" table --mode before "${DEVICE[@]}" "${TABLE[@]}" --out "$OUT"
PACKING=()
[[ -f "$OUT/gpu_packing.json" ]] && PACKING=(--packing "$OUT/gpu_packing.json")
stage "table after" "${BENCH[@]}" table --mode after "${DEVICE[@]}" "${TABLE[@]}" "${PACKING[@]}" --out "$OUT"

{
  echo "# gpu_bench $(date -u +%FT%TZ), $((SECONDS - START)) s"
  echo
  sed 's/^/    /' "$OUT/device.txt"
  echo
  printf -- '- %s\n' "${STATUS[@]}"
  echo
  echo '## step time at batch 32 (mul_format padding_reverse, 10 digits)'
  echo
  sed 's/^/    /' "$OUT/step_batch32.jsonl" 2>/dev/null
  for mode in before after; do
    if [[ -f "$OUT/paper_gpu_hours_$mode.md" ]]; then
      echo
      echo "## GPU-hours, $mode"
      echo
      cat "$OUT/paper_gpu_hours_$mode.md"
    fi
  done
} >"$OUT/summary.md"
cat "$OUT/summary.md"
[[ "${STATUS[*]}" != *failed* ]]
