#!/usr/bin/env bash
# The GPU jobs of more than one command, each command a named configuration (`irlens list --configs`,
# docs/configs.md); one command alone needs no job: `python -m irlens.cli.configs NAME`. Run from the
# repository root with the GPU environment active. The configurations write under $IRLENS_RESULTS
# (default results-gpu/), and so does this script: a log per command and, in times.txt, each
# command's exit status and wall time.
#
#   bash scripts/gpu_jobs.sh run NAME...        # configurations one after another, with the NCCL settings below
#   bash scripts/gpu_jobs.sh bench-cold-warm    # one GPU: bf16 fwd from empty caches, then from the caches it left,
#                                               # then the whole bench filling caches of its own for bench-1gpu-warm
#   bash scripts/gpu_jobs.sh gpu-checks         # one GPU: the GPU test groups, then the gelu cross grid
#   bash scripts/gpu_jobs.sh bench-4gpu-checks  # 4 GPUs: bench-4gpu; the checks start on a GPU once it has left it
#   bash scripts/gpu_jobs.sh zoo-shards NAME    # every GPU: a zoo configuration's models shared out, then joined
set -u
export IRLENS_RESULTS=${IRLENS_RESULTS:-results-gpu}
R=$IRLENS_RESULTS
mkdir -p "$R"
# NVLink multicast off: async TP's symmetric memory then copies peer to peer (docs/parallelism.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

run() {  # a configuration: its NAME, the name of its log, then arguments that replace its own
  local name=$1 log=$2 t0=$SECONDS
  shift 2
  python -m irlens.cli.configs "$name" "$@" > "$R/$log.log" 2>&1
  echo "$log: rc=$? wall $((SECONDS - t0)) s" | tee -a "$R/times.txt"
}

gpu_checks() {  # the test groups (CUPTI: one profiler per process), the roofline's alone after them: it times kernels
  run gpu-tests-nvfuser gpu-tests-nvfuser & run gpu-tests-inductor gpu-tests-inductor & run gpu-tests gpu-tests
  wait
  run gpu-tests-roofline gpu-tests-roofline
}

wait_idle() {  # until no process computes on GPU $1 (after the bench has had time to start there)
  sleep 90
  while [ -n "$(nvidia-smi -i "$1" --query-compute-apps=pid --format=csv,noheader)" ]; do sleep 5; done
}

case "${1:-}" in
  run)
    shift
    for name in "$@"; do run "$name" "$name"; done ;;
  bench-cold-warm)
    rm -rf /tmp/irlens-bench-cache  # the one-GPU bench configurations' cache_dir
    run bench-1gpu-bf16-fwd bench-1gpu-bf16-fwd
    run bench-1gpu-bf16-fwd-warm bench-1gpu-bf16-fwd-warm
    run bench-1gpu bench-1gpu ;;
  gpu-checks)
    gpu_checks
    run cross-gpu-gelu cross-gpu-gelu ;;
  bench-4gpu-checks)
    run bench-4gpu bench-4gpu &
    (wait_idle 0; CUDA_VISIBLE_DEVICES=0 gpu_checks) &
    (wait_idle 2; export CUDA_VISIBLE_DEVICES=2
     for name in cross-gpu-gelu cross-gpu-block gpu-tests-parallel; do run "$name" "$name"; done) &
    wait ;;
  zoo-shards)
    name=${2:?a zoo configuration} n=$(nvidia-smi -L | wc -l)
    for k in $(seq 0 $((n - 1))); do
      CUDA_VISIBLE_DEVICES=$k OMP_NUM_THREADS=4 run "$name" "$name-$k" --shard "$k/$n" --out "$R/$name-$k" &
    done
    wait
    python -m irlens zoo --from "$R/$name"-[0-9]*/zoo.json --out "$R/$name" > "$R/$name.log" 2>&1
    echo "$name joined: rc=$?" | tee -a "$R/times.txt" ;;
  *)
    echo "usage: $0 run NAME...|bench-cold-warm|gpu-checks|bench-4gpu-checks|zoo-shards NAME" >&2
    exit 2 ;;
esac
