#!/usr/bin/env bash
# Everything under docs/results/ that needs a GPU, by job, on a host with 4 H200s
# (nvidia-h200-x4) where the jobs share the GPUs out; any one job runs alone on a 1-GPU host
# with its GPU lists changed. Run from the repo root with the GPU environment active
# (`source .gpu/activate.sh`); results go to $R (default: results-gpu/).
#
#   bash scripts/gpu_results.sh single   # bench (GPUs 0,1) | GPU tests (3) | cross grid (2) | parallel smoke (2,3)
#   bash scripts/gpu_results.sh llama3   # the llama3 table, DP2 x TP2 on GPUs 0-3
#   bash scripts/gpu_results.sh deepseek # the deepseek_v3 table, DP2 x TP2 x EP2 on GPUs 0-3, and its GPU test
set -u
R=${R:-results-gpu}
mkdir -p "$R"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > "$R/nvidia-smi.csv" 2>&1

# The jobs sharing GPUs 2 and 3 check numerics and kernels; only the bench's times are reported
# as performance, and it has GPUs 0 and 1 to itself.
bench() {  # issue 4: the whole matrix, bf16 on GPU 0 and fp32 on GPU 1, each beside its own measured ceilings
  timeout 520 python -m irlens bench --gpus 0,1 --jobs 10 --timeout 170 --budget-s 300 \
    --json "$R/h200.json" --md "$R/h200.md" > "$R/bench.out" 2> "$R/bench.log"
  echo "bench rc=$?"
}

gpu_tests() {  # issues 4, 5, 10: the GPU-marked tests (the parallel ones have their own jobs)
  CUDA_VISIBLE_DEVICES=3 timeout 300 python -m pytest -m gpu -rA -n 4 -p no:cacheprovider tests \
    --ignore=tests/test_parallel.py --ignore=tests/test_parallel_moe.py > "$R/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?"
  CUDA_VISIBLE_DEVICES=3 timeout 200 python -m pytest -m gpu -rA -p no:cacheprovider tests/test_parallel.py \
    > "$R/gpu-tests-parallel.log" 2>&1
  echo "gpu parallel test rc=$?"
}

cross() {  # issue 10: the 3 x 3 grid for gelu and block, fwd and fwd+bwd
  for wl in gelu block; do
    CUDA_VISIBLE_DEVICES=$1 timeout 240 python -m irlens compare --cross --workloads $wl --device cuda --timeout 120 \
      --json "$R/cross-h200-$wl.json" > "$R/cross-h200-$wl.txt" 2> "$R/cross-h200-$wl.log"
    echo "cross $wl rc=$?"
  done
}

parallel_smoke() {  # every pass of the parallel path once on 2 NCCL ranks, debug size
  CUDA_VISIBLE_DEVICES=2,3 timeout 300 python scripts/parallel_table.py --model llama3:debug --dp-shard 2 --steps 4 \
    --timeout 120 --out "$R/smoke-llama3" \
    --rows eager,compiled,sac_reshard_block_bucketing,autobucketing_full_inductor_cudagraph,flex_block_bucketing_regional_cudagraph \
    2> "$R/smoke-llama3.log"
  CUDA_VISIBLE_DEVICES=2,3 timeout 200 python scripts/parallel_table.py --model deepseek_v3:debug --dp-shard 2 --ep 2 --steps 4 \
    --timeout 120 --out "$R/smoke-deepseek" --rows eager,compiled,autobucketing_full_inductor_cudagraph \
    2> "$R/smoke-deepseek.log"
  echo "parallel smoke done"
}

case "${1:-}" in
  single)
    bench &
    gpu_tests &
    cross 2 &
    parallel_smoke &
    wait ;;
  llama3)
    python scripts/parallel_table.py --model llama3:1B --dp-shard 2 --tp 2 --steps 12 --timeout 150 \
      --out "$R/parallel-h200-llama3" ${ROWS:+--rows $ROWS} 2> "$R/parallel-h200-llama3.log" ;;
  deepseek)
    python scripts/parallel_table.py --model deepseek_v3:2B --dp-shard 2 --tp 2 --ep 2 --steps 12 --timeout 150 \
      --out "$R/parallel-h200-deepseek" ${ROWS:+--rows $ROWS} 2> "$R/parallel-h200-deepseek.log" ;;
  *) echo "usage: $0 single|llama3|deepseek" >&2; exit 2 ;;
esac
