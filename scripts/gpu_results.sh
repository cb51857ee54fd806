#!/usr/bin/env bash
# Everything under docs/results/ that needs a GPU, by job, on a host with 4 H200s
# where the jobs share the GPUs out; any one job runs alone on a 1-GPU host
# with its GPU lists changed. Run from the repo root with the GPU environment active
# (`source .gpu/activate.sh`); results go to $R (default: results-gpu/).
#
#   bash scripts/gpu_results.sh single       # bench (GPUs 0-3), then GPU tests (0) and cross grid (2)
#   bash scripts/gpu_results.sh parallel2         # 2 GPUs, <= 9 min: llama3:1B DP2, TP2 with and without sequence
#                                                 # parallelism, async TP on TP2, the gradient reduce dtype
#   bash scripts/gpu_results.sh parallel2-checks  # 2 GPUs, ~4 min: the TP GPU tests (SP and async TP against eager)
#   bash scripts/gpu_results.sh parallel          # 4 GPUs, <= 9 min: llama3:1B DP4, DP2 x TP2, TP4 (+ async TP)
#   bash scripts/gpu_results.sh parallel-8b       # 4 GPUs, <= 9 min: llama3:8B-shaped, 32 layers, DP2 x TP2 with FSDP
#   bash scripts/gpu_results.sh parallel-moe      # 4 GPUs, <= 9 min: deepseek_v3:2B with EP (the all-to-all's share)
#   bash scripts/gpu_results.sh parallel8         # 8 GPUs, <= 9 min: llama3:8B-shaped DP2 x TP4
#   bash scripts/gpu_results.sh single1      # ONE GPU, ~9 min: a bench subset (bf16, built-ins and ordinary code),
#                                            # then the roofline's GPU tests
#   bash scripts/gpu_results.sh checks1      # ONE GPU, ~6 min: the other GPU-marked tests, then the gelu cross grid
#   bash scripts/gpu_results.sh parallel1    # ONE GPU, ~8 min: llama3:1B eager vs compiled, then llama3:8B --n-layers 4
#   bash scripts/gpu_results.sh bench1-cold  # ONE GPU, <= 9.5 min: bf16 fwd alone cold then warm, then the whole
#                                            # bench with empty caches for 250 s (filling them)
#   bash scripts/gpu_results.sh bench1-warm  # ONE GPU, <= 9.5 min, on the same machine after bench1-cold: the whole
#                                            # bench again, the compilers' caches and the ceilings kept (docs/bench.md)
#   bash scripts/gpu_results.sh ncu1         # ONE GPU, <= 9 min: Nsight Compute's counters beside the kernel model
#   bash scripts/gpu_results.sh zoo4-fwd     # 4 GPUs, <= 9.5 min: 16 zoo models at bench size, bf16, forward: a stack
#                                            # per GPU (eager + Inductor, Thunder, nvFuser, XLA)
#   bash scripts/gpu_results.sh zoo4-fwdbwd  # the same, forward and backward
#   bash scripts/gpu_results.sh zoo4-thunder # 4 GPUs, <= 9.5 min: Thunder fwd+bwd of the same models, all at once
#                                            # (cells of 450 s) beside eager; the GPU checks on GPU 0 beside them
#   bash scripts/gpu_results.sh zoo4-nvfuser # the same for nvFuser
#   bash scripts/gpu_results.sh zoo4-thunder-nvfuser  # 4 GPUs, <= 8.5 min: Thunder's and nvFuser's fwd+bwd at once
#   bash scripts/gpu_results.sh zoo4-xla     # 4 GPUs, <= 9.5 min: XLA fwd and fwd+bwd of the same models, then
#                                            # three GPU checks where the zoo has left a GPU
#   bash scripts/gpu_results.sh zoo4-rest    # <= 8.5 min: fwd+bwd cells, few per GPU; ZOO_PLAN says which
#   bash scripts/gpu_results.sh zoo4-fill    # every GPU, <= 9 min: the cells the H200 page has never run, its models
#                                            # over the GPUs (join: docs/results/zoo-h200-bench/README.md)
#   bash scripts/gpu_results.sh repro-minigpt        # ONE GPU, <= 6 min: the nvFuser minigpt fwd+bwd crash, reduced
#   bash scripts/gpu_results.sh repro-cross-entropy  # ONE GPU, <= 6 min: the nvFuser cross-entropy fwd+bwd assert, reduced
#   bash scripts/gpu_results.sh repro-zoo            # ONE GPU, <= 8.5 min: the zoo page's nvFuser failures (ZOO_REPRO), reduced
# The parallel tables profile each row (--profile: where the step time goes); each table's logs go
# into one tar.gz (the traces stay out: too large to copy back). Presets: scripts/parallel_table.py's TABLES.
set -u
R=${R:-results-gpu}
mkdir -p "$R"
# NVLink multicast stays off on these hosts (async TP's symmetric memory then copies peer to peer)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > "$R/nvidia-smi.csv" 2>&1
# the tables' file names say the GPU: h100, h200
GPU=${GPU:-$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | grep -oE 'H[0-9]+|A[0-9]+' | head -1 | tr 'A-Z' 'a-z')}
GPU=${GPU:-gpu}

# Only the bench's times are reported as performance: the other jobs check numerics and kernels,
# and start on a GPU once the bench has left it.
bench() {  # the whole matrix, one dtype x mode per GPU, each beside its own measured ceilings
  timeout 520 python -m irlens bench --gpus 0,1,2,3 --jobs 6 --timeout 170 --budget-s 300 \
    --json "$R/h200.json.gz" --md "$R/h200.md" > "$R/bench.out" 2> "$R/bench.log"
  echo "bench rc=$?"
}

zoo_left() {  # until the zoo process writing $R/$1 has ended (after 20 s, for it to have started)
  sleep 20
  while pgrep -f -- "--out $R/$1 " > /dev/null; do sleep 5; done
}

wait_idle() {  # until no process computes on GPU $1 (after the bench has had time to start there)
  sleep 90
  while [ -n "$(nvidia-smi -i "$1" --query-compute-apps=pid --format=csv,noheader)" ]; do sleep 5; done
}

gpu_marked_tests() {  # the GPU-marked tests but the roofline's and the parallel path's.
  # CUPTI takes one subscriber per process: the Thunder facts need nvFuser's own profiler, Inductor's
  # kernel timing torch's; each group runs in pytest processes of its own
  local nv="tests/test_compare_thunder_facts.py tests/test_thunder.py" ind="tests/test_compare_inductor_facts.py"
  CUDA_VISIBLE_DEVICES=$1 timeout $2 python -m pytest -m gpu -rA -p no:cacheprovider $nv > "$R/gpu-tests-nvfuser.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=$1 timeout $2 python -m pytest -m gpu -rA -p no:cacheprovider $ind > "$R/gpu-tests-inductor.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=$1 timeout $2 python -m pytest -m gpu -rA -n 4 -p no:cacheprovider tests \
    $(for f in $nv $ind tests/test_roofline_gpu.py tests/test_parallel.py tests/test_parallel_moe.py; do echo --ignore=$f; done) \
    > "$R/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?"
  wait
  echo "gpu nvfuser and inductor tests done"
}

gpu_tests() {  # the GPU-marked tests, then the roofline's checks (Nsight Compute, the ceilings, a small
  # bench), which time kernels: alone after the others
  gpu_marked_tests $1 300
  CUDA_VISIBLE_DEVICES=$1 timeout 480 python -m pytest -m gpu -rA -p no:cacheprovider tests/test_roofline_gpu.py > "$R/gpu-tests-roofline.log" 2>&1
  echo "gpu roofline tests rc=$?"
}

cross() {  # the 3 x 3 grid for gelu and block, fwd and fwd+bwd
  for wl in gelu block; do
    CUDA_VISIBLE_DEVICES=$1 timeout 200 python -m irlens compare --cross --workloads $wl --device cuda --timeout 100 \
      --json "$R/cross-h200-$wl.json" > "$R/cross-h200-$wl.txt" 2> "$R/cross-h200-$wl.log"
    echo "cross $wl rc=$?"
  done
}

table() {  # one parallel_table.py run, every row profiled; its logs in one tar.gz
  name=$1; shift
  python scripts/parallel_table.py --profile --out "$R/parallel-$GPU-$name" "$@" 2> "$R/parallel-$GPU-$name.log"
  echo "$name table rc=$?"
  tar czf "$R/parallel-$GPU-$name-logs.tar.gz" --exclude='trace-rank*' -C "$R" "parallel-$GPU-$name-logs" \
    && rm -rf "$R/parallel-$GPU-$name-logs"
}

# A job's files go to $R/<job>/; what did not happen (nothing crashed, a budget ran out) is in its logs.
left() {  # seconds left of a job's $1 seconds since $2 (at least 30)
  local s=$(($1 - (SECONDS - $2)))
  echo $((s > 30 ? s : 30))
}

bench_timed() {  # one `irlens bench` on one GPU, its wall time in $R/times.txt. Args: name, cache
  # folder, seconds it may take (its cells stop starting a minute before), then more options
  local name=$1 cache=$2 limit=$3 t0=$SECONDS
  shift 3
  local state=empty
  [ -n "$(ls -A "$cache" 2>/dev/null)" ] && state="holding $(du -sh "$cache" | cut -f1)"
  timeout "$limit" python -m irlens bench --cache-dir "$cache" --jobs "${BENCH_JOBS:-3}" \
    --compile-jobs "${COMPILE_JOBS:-4}" --timeout "${CELL_TIMEOUT:-240}" --budget-s $((limit - 60)) \
    --json "$R/$name.json.gz" "$@" > "$R/$name.log" 2>&1
  local rc=$?
  local rows
  rows=$(python -c "from irlens.matrix import read_document as r; d = r('$R/$name.json.gz'); \
print(sum(x.status == 'ok' for x in d.rows), 'of', len(d.rows), 'rows ok')" 2>/dev/null || echo "no document")
  echo "$name: rc=$rc, wall $((SECONDS - t0)) s, cache $cache $state before; $rows" | tee -a "$R/times.txt"
}

repro_minigpt() {  # minigpt fwd+bwd, bench size, bf16, through Thunder + nvFuser
  local d="$R/repro-minigpt" t0=$SECONDS
  mkdir -p "$d"
  # the flight recorder at once (--no-run): thunder.jit of the module as irlens's cell runs it, each nvFuser
  # region written down before it runs; the one that never finishes -> a standalone nvFuser file, then reduced
  # (its compile alone takes over 150 s on an H100: REPRO_TIMEOUT_S gives the recorded run longer)
  local t=${REPRO_TIMEOUT_S:-150}
  timeout $((t + 90)) python -m irlens repro minigpt --backend nvfuser --mode fwdbwd --dtype bfloat16 --device cuda \
    --preset bench --no-run --reduce --budget-s 90 --timeout "$t" --out "$d" --json "$d/repro.json" \
    > "$d/repro.out" 2> "$d/repro.log"
  echo "repro rc=$? after $((SECONDS - t0)) s" | tee -a "$d/repro.out"
  local region
  region=$(ls "$d"/*-nvFusion*.py 2>/dev/null | head -1)
  if [ -n "$region" ]; then  # which kernel faults, and where
    (cd "$d" && timeout "$(left $((t + 190)) $t0)" /usr/local/cuda/bin/compute-sanitizer --print-limit 5 \
      python "$(basename "$region")" > sanitizer.txt 2>&1; echo "compute-sanitizer rc=$?" >> sanitizer.txt)
  else  # nothing crashed there: does irlens's own cell crash here (its kernel recorder reruns each region
    # under nvFuser's profiler)? The bench cell adds device timing, where the crash was first seen (H200).
    timeout "$(left $((t + 190)) $t0)" python -m irlens compare --workloads minigpt --backends nvfuser --mode fwdbwd \
      --dtype bfloat16 --device cuda --preset bench --timeout 250 --json "$d/cell.json" > "$d/cell.txt" 2> "$d/cell.log"
    echo "cell rc=$? after $((SECONDS - t0)) s" | tee -a "$d/cell.txt"
  fi
}

repro_cross_entropy() {  # cross-entropy with int64 targets, bf16, through nvFuser
  local d="$R/repro-cross-entropy" t0=$SECONDS ce=examples/cross_entropy.py:cross_entropy
  mkdir -p "$d"
  # the cells: fwd shows Thunder's torchcompile_xentropy region as one kernel (it failed the cell before),
  # fwdbwd the nvFuser assert; lm_cross_entropy is the corpus's LM head + cross-entropy (its loss: its output)
  timeout 170 python -m irlens compare --workloads $ce,lm_cross_entropy --backends eager,nvfuser --dtype bfloat16 \
    --device cuda --timeout 120 --json "$d/cells.json" > "$d/cells.txt" 2> "$d/cells.log"
  echo "cells rc=$? after $((SECONDS - t0)) s" | tee -a "$d/cells.txt"
  # reduce the first workload whose nvFuser fwd+bwd failed (the user workload where none did: its file then says ok)
  local wl
  wl=$(python - "$d/cells.json" "$ce" <<'PY' 2>/dev/null || echo "$ce"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
failed = [r["workload"] for r in rows if r["backend"] == "nvfuser" and r["mode"] == "fwdbwd" and r["status"] == "failed"]
print(sys.argv[2] if not failed or failed[0] == "cross_entropy" else failed[0])
PY
)
  timeout "$(left 340 $t0)" python -m irlens repro "$wl" --backend nvfuser --mode fwdbwd --dtype bfloat16 \
    --device cuda --reduce --budget-s 90 --timeout 90 --out "$d" --json "$d/repro.json" > "$d/repro.out" 2> "$d/repro.log"
  echo "repro of $wl rc=$? after $((SECONDS - t0)) s" | tee -a "$d/repro.out"
}

repro_zoo() {  # reducers of the H200 zoo page's nvFuser failures, every cell at once on one GPU.
  # ZOO_REPRO: "model|mode;..."; each `irlens repro --reduce` within ZOO_REPRO_S seconds, its reducer
  # given what the cell's own run (at most 240 s) leaves of them
  local d="$R/repro-zoo" limit=${ZOO_REPRO_S:-500} e wl mode
  local cells=${ZOO_REPRO:-"timm_coatnet|fwd;timm_mobilenetv3|fwd;hf_bart|fwdbwd"}
  IFS=';' read -ra entries <<< "$cells"
  for e in "${entries[@]}"; do
    IFS='|' read -r wl mode <<< "$e"
    mkdir -p "$d/$wl-$mode"
    timeout "$limit" python -m irlens repro "$wl" --backend nvfuser --mode "$mode" --dtype bfloat16 --device cuda \
      --preset bench --reduce --budget-s $((limit - 290)) --timeout 240 --out "$d/$wl-$mode" \
      --json "$d/$wl-$mode/repro.json" > "$d/$wl-$mode/repro.out" 2> "$d/$wl-$mode/repro.log" &
  done
  wait
  tar czf "$R/repro-zoo.tar.gz" -C "$R" repro-zoo && rm -rf "$d"
}

zoo_on_gpu() {  # one `irlens zoo` at bench size on GPU $1, in the background, within $ZOO_LIMIT seconds,
  # cells of $ZOO_CELL seconds: cells stop starting when a last one still ends within the limit, so
  # every process writes its document. Args: GPU, name (its folder and log under $R), then zoo's options
  local gpu=$1 name=$2 budget=$((ZOO_LIMIT - ZOO_CELL - 40))
  shift 2
  CUDA_VISIBLE_DEVICES=$gpu OMP_NUM_THREADS=4 timeout "$ZOO_LIMIT" python -m irlens zoo --device cuda --preset bench \
    --timeout "$ZOO_CELL" --budget-s $((budget > 30 ? budget : 30)) --out "$R/$name" "$@" > /dev/null 2> "$R/$name.log" &
}

pack_zoo() {  # one file per call (at most 8 come back): the folders and logs $R/$1-<GPU>* of a zoo job, each
  # GPU's folder holding its zoo.json, page and report, in $R/zoo-$GPU-<$1 less "zoo-">.tar.gz
  tar czf "$R/${1/zoo-/zoo-$GPU-}.tar.gz" -C "$R" $(cd "$R" && ls -d "$1"-[0-9]*) && rm -rf "$R/$1"-[0-9]*
}

zoo4() {  # the zoo at bench size in bf16, one mode, on 4 GPUs: a stack per GPU (eager beside
  # Inductor, its speedups' base); the four documents join with `irlens zoo --from` (docs/results/zoo-*-bench)
  local mode=$1 gpu=0 stacks
  ZOO_LIMIT=${ZOO_LIMIT_S:-570} ZOO_CELL=${ZOO_CELL_S:-170}
  # a model per family and kind; the ones slowest to compile last (a budget then cuts those)
  local models=${ZOO_MODELS:-hf_gpt2,hf_vit,timm_resnet50,timm_convnext,timm_vit,timm_efficientnet,timm_mobilenetv3,timm_swin,hf_bert,hf_whisper_encoder,hf_wav2vec2,hf_qwen2,hf_llama,hf_t5,hf_mixtral,hf_mamba}
  for stacks in eager,inductor thunder+torchcompile nvfuser xla; do
    zoo_on_gpu $gpu "zoo-$mode-$gpu" --mode "$mode" --models "$models" --backends "$stacks" --jobs 2 \
      --json "$R/zoo-$GPU-$mode-$gpu.json.gz"
    gpu=$((gpu + 1))
  done
  wait
  pack_zoo "zoo-$mode"
}

zoo4_split() {  # stacks at bench size in bf16, in modes $1 (fwd, fwdbwd or both), the models spread
  # over the GPUs beside eager (their speedups' base, on the same GPU, in the same process: a process's cells
  # take turns for timings): the transformers models over ZOO_HF_GPUS (--shard K/N), timm's over ZOO_TIMM_GPUS,
  # every model's cells started at once (ZOO_JOBS). Thunder's capture for the transformers models is
  # ZOO_HF_CAPTURE (thunder.jit fails on each of them after tracing it whole: docs/thunderfx.md)
  local mode=$1 stacks=$2 tag=${ZOO_TAG:-$2} i
  tag=${tag//[+,]/_}  # the device returns no file names with + or ,
  ZOO_LIMIT=${ZOO_LIMIT_S:-570} ZOO_CELL=${ZOO_CELL_S:-450}
  local hf=${ZOO_HF:-hf_gpt2,hf_vit,hf_bert,hf_whisper_encoder,hf_wav2vec2,hf_qwen2,hf_llama,hf_t5,hf_mixtral,hf_mamba}
  local timm=${ZOO_TIMM:-timm_resnet50,timm_convnext,timm_vit,timm_efficientnet,timm_mobilenetv3,timm_swin}
  # an empty GPU list (ZOO_TIMM_GPUS=) leaves that family out
  local hf_gpus=(${ZOO_HF_GPUS-0 1 2}) timm_gpus=(${ZOO_TIMM_GPUS-3}) name="zoo-$tag-${mode//,/_}"
  for i in "${!hf_gpus[@]}"; do
    zoo_on_gpu "${hf_gpus[i]}" "$name-${hf_gpus[i]}" --mode "$mode" --models "$hf" --shard "$i/${#hf_gpus[@]}" \
      --thunder-capture "${ZOO_HF_CAPTURE:-auto}" --backends "eager,$stacks" --jobs "${ZOO_JOBS:-8}"
  done
  for i in "${!timm_gpus[@]}"; do
    zoo_on_gpu "${timm_gpus[i]}" "$name-${timm_gpus[i]}" --mode "$mode" --models "$timm" --shard "$i/${#timm_gpus[@]}" \
      --backends "eager,$stacks" --jobs "${ZOO_JOBS:-8}"
  done
  wait
  pack_zoo "$name"
}

checks_after_zoo() {  # the GPU checks of the zoo's and the typed configs' code that had not run on a GPU, one after another
  local t=$1
  CUDA_VISIBLE_DEVICES=$t timeout 240 python -m pytest -m gpu -rA -p no:cacheprovider tests/test_jax_gpu_calls.py \
    tests/test_lowering_ops.py tests/test_jax.py > "$R/gpu-tests-lowering.log" 2>&1
  echo "lowering gpu tests rc=$?" | tee -a "$R/times.txt"
  CUDA_VISIBLE_DEVICES=$t timeout 200 python -m pytest -m gpu -rA -p no:cacheprovider tests/test_parallel.py \
    -k "full_inductor_cudagraph_and_flex or cudagraph_fits" > "$R/gpu-tests-parallel-typed.log" 2>&1
  echo "parallel gpu tests rc=$?" | tee -a "$R/times.txt"
}

case "${1:-}" in
  single)  # the bench, then the tests and the cross grid where it has finished
    bench &
    (wait_idle 0; gpu_tests 0) &
    (wait_idle 2; cross 2; CUDA_VISIBLE_DEVICES=2 timeout 300 python -m pytest -m gpu -rA -p no:cacheprovider \
      tests/test_parallel.py > "$R/gpu-tests-parallel.log" 2>&1; echo "parallel gpu test rc=$?") &
    wait ;;
  # the parallel tables, one preset each (rows in order of importance, each within its time budget);
  # ROWS (comma-separated [MESH/]NAME[+MODIFIER][@BATCH]) replaces a preset's rows
  parallel2) table llama3-1b-2gpu --table llama3-1b-2gpu ${ROWS:+--rows "$ROWS"} ;;
  parallel2-checks)  # SP and async TP against eager on 2 NCCL ranks, with the real fused ops
    timeout 420 python -m pytest -m gpu -rA -p no:cacheprovider tests/test_parallel_tp.py > "$R/gpu-tests-tp.log" 2>&1
    echo "tp gpu tests rc=$?" ;;
  parallel) table llama3-1b-4gpu --table llama3-1b-4gpu ${ROWS:+--rows "$ROWS"} ;;
  parallel-8b) table llama3-8b-4gpu --table llama3-8b-4gpu ${ROWS:+--rows "$ROWS"} ;;
  parallel-moe) table deepseek-2b-4gpu --table deepseek-2b-4gpu ${ROWS:+--rows "$ROWS"} ;;
  zoo4-fwd) zoo4 fwd ;;
  zoo4-fwdbwd) zoo4 fwdbwd ;;
  zoo4-thunder)  # Thunder's fwd+bwd, every model's cells at once; the checks on GPU 0 beside them
    ZOO_HF_CAPTURE=thunderfx zoo4_split fwdbwd thunder+torchcompile & ([ -n "${ZOO_NO_CHECKS:-}" ] || (sleep 60; checks_after_zoo 0)) & wait ;;
  zoo4-nvfuser) ZOO_HF_CAPTURE=thunderfx zoo4_split fwdbwd nvfuser ;;
  zoo4-thunder-nvfuser)  # Thunder's and nvFuser's fwd+bwd in one process per GPU: the transformers models
    # over GPUs 0-1, timm's over 2-3; 6 cells at once (with 15, a timing waited for every other cell's compile
    # and cells starved: docs/results/zoo-h200-bench), cells of 300 s starting within the first 150 s, the
    # process done by 490 s (the device's 600 s hold the environment's start and the packing too)
    ZOO_HF_CAPTURE=thunderfx ZOO_HF_GPUS="0 1" ZOO_TIMM_GPUS="2 3" ZOO_JOBS=${ZOO_JOBS:-6} ZOO_CELL_S=${ZOO_CELL_S:-300} \
      ZOO_LIMIT_S=${ZOO_LIMIT_S:-490} zoo4_split fwdbwd thunder+torchcompile,nvfuser ;;
  zoo4-xla)  # XLA's forward and fwd+bwd in one process per GPU (cells of 180 s); then, on each GPU its zoo
    # process has left, a check of code the GPU had not run: the JAX HLO reader's GPU forms, Inductor's
    # bf16 CNN mismatches rerun with eager's roundings, Thunder's convolution gradient (each within the call)
    t0=$SECONDS
    ZOO_TAG=xla ZOO_LIMIT_S=${ZOO_LIMIT_S:-380} ZOO_CELL_S=${ZOO_CELL_S:-180} ZOO_JOBS=${ZOO_JOBS:-12} \
      ZOO_HF_GPUS="${ZOO_HF_GPUS-0 1}" ZOO_TIMM_GPUS="${ZOO_TIMM_GPUS-2 3}" zoo4_split fwd,fwdbwd xla &
    mkdir -p "$R/checks"
    (zoo_left zoo-xla-fwd_fwdbwd-0; CUDA_VISIBLE_DEVICES=0 timeout "$(left 520 $t0)" python -m pytest -m gpu -rA -p no:cacheprovider \
      tests/test_jax_gpu_calls.py > "$R/checks/gpu-tests-jax-calls.log" 2>&1
      echo "jax gpu call tests rc=$? at $((SECONDS - t0)) s" | tee -a "$R/times.txt") &
    (zoo_left zoo-xla-fwd_fwdbwd-1; CUDA_VISIBLE_DEVICES=1 timeout "$(left 520 $t0)" python -m irlens compare --workloads \
      timm_resnet50,timm_mobilenetv3 --backends eager,inductor --mode fwdbwd --dtype bfloat16 --preset bench \
      --device cuda --timeout 200 --json "$R/checks/eager-roundings.json" > "$R/checks/eager-roundings.txt" \
      2> "$R/checks/eager-roundings.log"
      echo "eager roundings recheck rc=$? at $((SECONDS - t0)) s" | tee -a "$R/times.txt") &
    (zoo_left zoo-xla-fwd_fwdbwd-2; c=docs/results/repro-thunder-conv-backward/thunder_conv_bwd_repro.py
      for shape in "" "64 256 56 1 1 1"; do
        echo "\$ python $c $shape"
        CUDA_VISIBLE_DEVICES=2 timeout "$(left 520 $t0)" python "$c" $shape 2>&1
      done > "$R/checks/thunder-conv-bwd.txt"
      echo "thunder conv script done at $((SECONDS - t0)) s" | tee -a "$R/times.txt") &
    wait
    tar czf "$R/checks-$GPU.tar.gz" -C "$R" checks && rm -rf "$R/checks" ;;
  zoo4-rest)  # the GPUs ZOO_PLAN names, <= 8.5 min: fwd+bwd cells the GPU page lacks, a process per entry, few cells at once
    # (fewer compiles for a timing to wait behind). ZOO_PLAN: "GPU|models|stacks[|more zoo options];..."; by
    # default nvFuser on the transformers models (GPUs 0-1), Thunder and nvFuser on three timm models (2),
    # Thunder on hf_bert and hf_mamba (3). Cells a budget leaves are rows saying so; a later call with a plan
    # of them fills them (an entry's `--fill DOC` runs only the cells DOC has no ok row for; join with
    # `irlens zoo --from DOC ... --rerun`)
    ZOO_LIMIT=${ZOO_LIMIT_S:-490} ZOO_CELL=${ZOO_CELL_S:-300}
    hf=hf_gpt2,hf_vit,hf_bert,hf_whisper_encoder,hf_wav2vec2,hf_qwen2,hf_llama,hf_t5,hf_mixtral,hf_mamba
    plan=${ZOO_PLAN:-"0|$hf|nvfuser|--shard 0/2 --thunder-capture thunderfx;1|$hf|nvfuser|--shard 1/2 --thunder-capture thunderfx;\
2|timm_mobilenetv3,timm_swin,timm_efficientnet|thunder+torchcompile,nvfuser;\
3|hf_bert,hf_mamba|thunder+torchcompile|--thunder-capture thunderfx"}
    IFS=';' read -ra entries <<< "$plan"
    for k in "${!entries[@]}"; do
      IFS='|' read -r gpu models stacks more <<< "${entries[k]}"
      gpu=${gpu//[[:space:]]/} models=${models//[[:space:]]/} stacks=${stacks//[[:space:]]/}
      # one folder per entry (zoo-rest-<entry>): two entries may share a GPU (their cells' timings
      # then do not wait for each other's compiles: give such a pair few cells)
      # shellcheck disable=SC2086  # $more: zoo options, split on spaces
      zoo_on_gpu "$gpu" "zoo-rest-$k" --mode fwdbwd --models "$models" --backends "eager,$stacks" \
        --jobs "${ZOO_JOBS:-3}" $more
    done
    wait
    pack_zoo zoo-rest ;;
  zoo4-fill)  # every GPU of the host, <= 9 min: every cell the page ($ZOO_FILL, default the H200 page) holds no row that ran
    # for (never run, left by a budget, starved), the zoo's models spread over the GPUs (--shard K/N), each
    # process 4 cells at once, eager beside them; its failures are not run again (a zoo4-rest plan does that).
    # ZOO_BACKENDS (e.g. eager,inductor,xla): only those stacks' cells, the quick ones in a call of their own
    ZOO_LIMIT=${ZOO_LIMIT_S:-540} ZOO_CELL=${ZOO_CELL_S:-180}
    fill=${ZOO_FILL:-docs/results/zoo-h200-bench/zoo.json.gz} gpus=$(nvidia-smi -L | wc -l)
    for gpu in $(seq 0 $((gpus - 1))); do
      zoo_on_gpu "$gpu" "zoo-fill-$gpu" --mode fwd,fwdbwd --shard "$gpu/$gpus" --fill "$fill" --fill-not-run \
        --jobs "${ZOO_JOBS:-4}" --thunder-capture "${ZOO_THUNDER_CAPTURE:-auto}" ${ZOO_BACKENDS:+--backends "$ZOO_BACKENDS"}
    done
    wait
    pack_zoo zoo-fill ;;
  parallel8) table llama3-8b-8gpu --table llama3-8b-8gpu ${ROWS:+--rows "$ROWS"} ;;
  parallel1)  # one GPU, about 8 minutes on an H100 (rows run in order until each table's budget is spent):
    # llama3:1B at the preset's batch 8 (16k tokens) eager vs compiled, then batch 2 and 16; then
    # llama3:8B's shapes with 4 layers (8k tokens). Full Inductor rows before their cudagraph twins
    # reuse their compiled code (Inductor's FX graph cache)
    export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    table llama3-1gpu --model llama3:1B --steps 8 --timeout 150 --budget-s 330 \
      --rows "${LLAMA3_ROWS:-eager@8,full_inductor@8,full_inductor_cudagraph@8,compiled@8,eager@2,full_inductor_cudagraph@2,sac_full_inductor_cudagraph@16}"
    table llama3-8b-1gpu --model llama3:8B --n-layers 4 --steps 6 --timeout 120 --budget-s 140 \
      --rows "${LLAMA8B_ROWS:-eager,full_inductor_cudagraph}" ;;
  single1)  # one GPU, about 9 minutes: the bench on built-ins and ordinary code in bfloat16, each beside
    # its measured ceilings (BENCH_WORKLOADS, BENCH_BUDGET_S: the cells' share, after the ceilings);
    # then the roofline's GPU tests
    export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    budget=${BENCH_BUDGET_S:-210}
    timeout $((budget + 90)) python -m irlens bench --jobs 4 --timeout 150 --budget-s "$budget" --dtypes bfloat16 \
      --workloads "${BENCH_WORKLOADS:-gelu,attention,block,llama_block,llama_rmsnorm,lm_cross_entropy,moe_topk}" \
      --json "$R/$GPU.json.gz" --md "$R/$GPU.md" > "$R/bench.out" 2> "$R/bench.log"
    echo "bench rc=$?"
    timeout 200 python -m pytest -m gpu -rA -p no:cacheprovider tests/test_roofline_gpu.py > "$R/gpu-tests-roofline.log" 2>&1
    echo "gpu roofline tests rc=$?" ;;
  checks1)  # one GPU, about 6 minutes: the other GPU-marked tests, then the gelu cross grid
    export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    gpu_marked_tests "$CUDA_VISIBLE_DEVICES" 240  # the GPU chosen above, not always 0
    timeout 200 python -m irlens compare --cross --workloads gelu --device cuda --timeout 90 \
      --json "$R/cross-$GPU-gelu.json" > "$R/cross-$GPU-gelu.txt" 2> "$R/cross-$GPU-gelu.log"
    echo "cross gelu rc=$?" ;;
  bench1-cold)  # bf16 fwd alone with empty caches, then again with them kept; then the whole built-in
    # bench with empty caches of its own, for what fits (it fills them for bench1-warm)
    export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    cache=${BENCH_CACHE:-/tmp/irlens-bench-cache}
    rm -rf "$cache"
    bench_timed bench-fwd-cold "$cache/fwd" 180 --dtypes bfloat16 --mode fwd
    bench_timed bench-fwd-warm "$cache/fwd" 120 --dtypes bfloat16 --mode fwd
    bench_timed bench-cold "$cache/all" 250 ;;
  bench1-warm)  # after bench1-cold on the same machine: the whole bench, its caches and ceilings kept
    export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    bench_timed bench-warm "${BENCH_CACHE:-/tmp/irlens-bench-cache}/all" 560 ;;
  ncu1)  # Nsight Compute's DRAM bytes and flops beside irlens's model, >= 10 kernels per backend
    export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    timeout 540 python scripts/ncu_check.py --out "$R/ncu" --budget-s 420 > "$R/ncu-check.log" 2>&1
    echo "ncu check rc=$?" | tee -a "$R/times.txt" ;;
  repro-minigpt) export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}; repro_minigpt ;;
  repro-cross-entropy) export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}; repro_cross_entropy ;;
  repro-zoo) export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}; repro_zoo ;;
  *) echo "usage: $0 single|single1|checks1|parallel2|parallel2-checks|parallel|parallel-8b|parallel-moe|parallel8|parallel1|bench1-cold|bench1-warm|ncu1|zoo4-fwd|zoo4-fwdbwd|zoo4-thunder|zoo4-nvfuser|zoo4-thunder-nvfuser|zoo4-xla|zoo4-rest|zoo4-fill|repro-minigpt|repro-cross-entropy|repro-zoo" >&2; exit 2 ;;
esac
