#!/usr/bin/env bash
# Runs on a machine with a real GPU, from the repository root, over the tarballs of
# bench/real_gpu/pack.sh (in .gpu/). Writes its logs to /tmp/real_gpu_logs and, at the end, all of them
# as one $OUT/MODE.tgz (the device tool returns at most 8 files).
#   run.sh tests   the Vulkan test binaries, `vkstream devices`, the fixtures through vkstreamd with
#                  `vkstream generate --json --logprobs 20 -t 0`, and the kernel benchmark
#   run.sh profile per-op GPU time of TinyLlama-shape Q4_0 and Q4_K_M steps, and the engine's step
#                  against the runner's (engine_load), from tests.tar.xz alone
#   run.sh versus  the older build pack.sh took from BASE_BUILD and this one, alternating: runner bench at
#                  1,024 tokens of context and engine_load; then this build and llama.cpp (nlc.tar.xz)
#                  on TinyLlama-shape Q4_0
#   run.sh bench   synthetic TinyLlama-shape models (Q4_0, Q8_0, F16, Q4_K_M, Q6_K) and stories260K:
#                  vks_bench_vulkan_runner and llama.cpp's Vulkan backend (node-llama-cpp) on each
#                  file, one after the other; Llama-3.2-1B-shape Q4_0 and Q4_K_M with vkstream alone
#   run.sh prefill the lanes kernels' and the runner's GPU tests (lanes kernels only: the rows family
#                  compiles for minutes on NVIDIA), then the lanes family's wide token tiles
#                  (VKSTREAM_LANES_TILE 8, 32, 16 alternating) against llama.cpp at prefill 128 and
#                  2,048 on TinyLlama-shape Q4_0, per-op GPU time of a 512-token prefill and a batch-1
#                  decode step, and tiles 8 and 32 against llama.cpp on Q4_K_M and F16
#   run.sh dot     the int8 dot-product family (VKSTREAM_MATMUL_KERNELS=dot): its kernel and runner
#                  tests on the GPU, then dot and lanes alternating with llama.cpp at prefill 128
#                  (batches 1 and 16) on TinyLlama-shape Q4_0 and Q4_K_M, and at prefill 2,048 on Q4_0
#   run.sh replay  replayed decode steps and the one-dispatch lanes attention: their runner tests on
#                  the GPU, then the runner bench with and without replay (--no-replay) alternating at
#                  16 and 1,024 tokens of context, and llama.cpp, on TinyLlama-shape Q4_0
#   run.sh context decode at 1,024 against 8,192 and 32,768 tokens of context (vks_bench_context_decode,
#                  sequences placed, not prefilled), F16 and Q8_0 KV, on Llama-3.2-1B-shape Q4_0
#   run.sh splits  the lanes attention's split size (--attn-split-keys 128, 256, 512, 1,024; the default
#                  is 128) at 8,192 and 32,768 tokens of context against 1,024, the same model, F16 KV:
#                  which size this GPU should take (vk::attention_split_keys_for)
set -uo pipefail
modes="tests|profile|versus|bench|prefill|dot|replay|context|splits"
mode=${1:?usage: run.sh $modes}
case "|$modes|" in *"|$mode|"*) ;; *) echo "usage: run.sh $modes" >&2; exit 2 ;; esac
out=/tmp/real_gpu_logs
mkdir -p "$out" /tmp/m
# The logs so far, also after each suite: a call killed at the device's limit skips the EXIT trap.
save_logs() { tar -C "$out" -czf "${OUT:-/tmp}/$mode.tgz" . 2> /dev/null; }
trap save_logs EXIT
rm -rf /tmp/vks  # what an earlier call on a warm machine unpacked (fixtures included) is not this call's
for t in .gpu/*.tar.xz; do [ -f "$t" ] || continue; tar -C /tmp -xJf "$t"; done
export LD_LIBRARY_PATH=/tmp/vks/lib
# The CUDA image has NVIDIA's Vulkan ICD but neither the loader nor libglvnd, which its
# libGLX_nvidia.so.0 needs ("Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr'"
# otherwise): pack.sh carries both in lib/.
for icd in /usr/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
  [ -f "$icd" ] && export VK_DRIVER_FILES=$icd && break
done
export VKSTREAM_MODELS=/tmp/vks/models XDG_CACHE_HOME=/tmp/cache VKSTREAM_REQUIRE_VULKAN=1
bin=/tmp/vks/bin
step() { echo "== $*"; }
voc=/tmp/vks/models/llama2-vocab.gguf
# mk NAME PRESET TYPE [VOCAB_GGUF]: /tmp/m/NAME.gguf from vks-make-model, once per machine.
mk() { [ -f "/tmp/m/$1.gguf" ] || "$bin/vks-make-model" -q -p "$2" -t "$3" ${4:+--vocab-from "$4"} -o "/tmp/m/$1.gguf"; }
# vks_bench NAME FILE [ENV...]: the runner benchmark (prompt 128, 32 steps, batches 1/8/16; VKS_BENCH_ARGS
# replaces those) into vks-NAME.txt.
vks_bench() {
  local name=$1 file=$2; shift 2
  step "vkstream $name"
  env "$@" timeout 120 "$bin/vks_bench_vulkan_runner" "$file" ${VKS_BENCH_ARGS:---prompt 128 --gen 32 --reps 3 --batches 1 8 16} \
    > "$out/vks-$name.txt" 2>&1
  echo "exit $?"; grep -E '^\| (prefill|decode)' "$out/vks-$name.txt"
}
# llama_bench NAME FILE: llama.cpp's Vulkan backend on the same work (LLAMA_BENCH_ARGS replaces
# prompt 128, 32 steps, batches 1/8/16), into llama-NAME.{txt,json}.
llama_bench() {
  [ -x /tmp/nlc/bin/node ] || return 0
  step "llama.cpp $1"
  (cd /tmp/nlc && PATH=/tmp/nlc/bin:$PATH timeout 150 node "$OLDPWD/tools/llama_cpp_refs/throughput.mjs" --model "$2" \
    --gpu vulkan ${LLAMA_BENCH_ARGS:---prompt 128 --gen 32 --reps 3 --batches 1,8,16} --json "$out/llama-$1.json") > "$out/llama-$1.txt" 2>&1
  echo "exit $?"; tail -3 "$out/llama-$1.txt"
}
# engine_run PROGRAM NAME FILE: engine_load's step against the runner's (32 requests at once, 16 a step).
engine_run() {
  step "$1 $2"
  timeout 90 "$bin/$1" "$3" --requests 32 --rate 0 --prompt-min 64 --prompt-max 128 --out-min 64 --out-max 64 \
    --no-prefix > "$out/$1-$2.txt" 2>&1
  echo "exit $?"; tail -1 "$out/$1-$2.txt"
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
nproc
# Without a GPU the Vulkan tests skip and "pass": stop here instead of measuring nothing.
# (The listing is read before grep: a crash at exit would otherwise fail the pipeline, as it once did.)
if [ -x "$bin/vkstream" ]; then
  devices=$("$bin/vkstream" devices 2>&1); rc=$?
  echo "$devices"; [ "$rc" = 0 ] || echo "vkstream devices exited $rc" >&2
  # VKS_ALLOW_CPU_DEVICE=1 lets the script run on lavapipe, to try it out before spending device time.
  if [ "${VKS_ALLOW_CPU_DEVICE:-0}" != 1 ] && ! grep -v '\[cpu\]' <<< "$devices" | grep -q '^\* 0:'; then
    echo "no GPU Vulkan device: fix the driver set-up above before spending device time" >&2
    exit 2
  fi
fi

# gtest_suite NAME SECONDS [FILTER]: one test binary into NAME.log, its summary and failures on stdout.
# Run from a folder laid out like the build tree (some tests call ./tools/vks-make-model).
mkdir -p /tmp/vks/run/tools && ln -sf "$bin/vks-make-model" /tmp/vks/run/tools/vks-make-model
linebuf=""; command -v stdbuf > /dev/null && linebuf="stdbuf -oL"
gtest_suite() {
  local t=$1 filter=${3:-*}
  step "$t $filter"
  # Line-buffered, every test named: a suite stopped by its timeout still says how far it got.
  (cd /tmp/vks/run && timeout "$2" $linebuf "$bin/$t" --gtest_filter="$filter") > "$out/$t.log" 2>&1
  local rc=$?
  # gtest's totals only (not the per-test SKIPPED/FAILED lines of a run without --gtest_brief).
  echo "exit $rc: $(grep -c '^\[       OK' "$out/$t.log") ok $(grep -E '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ tests?|test suites? ran' "$out/$t.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [^0-9]' "$out/$t.log" | sed -E 's/( \(|, where ).*//' | sort -u | head -20
  [ "$rc" = 124 ] && echo "stopped by its limit in: $(grep '^\[ RUN' "$out/$t.log" | tail -1 | cut -c14-)"
  save_logs
}

# Fixtures pack.sh left out (FIXTURES) are left out of the runner tests too: every fixture with a
# reference, as the runner suites name their cases (the file stem, '_floatref' for float64 references).
runner_skip=""
for name in $(ls /tmp/vks/models/reference | sed 's/\..*//' | sort -u); do
  [ -f "/tmp/vks/models/$name.gguf" ] || runner_skip="$runner_skip:*/${name//-/_}:*/${name//-/_}_floatref"
done
[ -n "$runner_skip" ] && runner_skip="-${runner_skip#:}"

if [ "$mode" = prefill ]; then
  gtest_suite vks_vulkan_kernels_tests 70 '*lanes*:*Lanes*'
  # The runner at the device's own tile (32 on a GPU): batched, chunked and alone give the same bits.
  gtest_suite vks_vulkan_runner_tests 80 "RunnerBatch.*:WeightTypes/*:Models/*$runner_skip"
  mk tl-q4_0 tinyllama-1.1b q4_0 "$voc"; mk tl-q4_k_m tinyllama-1.1b q4_k_m "$voc"; mk tl-f16 tinyllama-1.1b f16 "$voc"
  export VKS_BENCH_ARGS="--prompt 128 --gen 16 --reps 3 --batches 1 16"
  i=0; for tile in 8 32 16 32 8; do i=$((i + 1)); vks_bench "tl-q4_0-t$tile-r$i" /tmp/m/tl-q4_0.gguf VKSTREAM_LANES_TILE=$tile; done
  LLAMA_BENCH_ARGS="--prompt 128 --gen 16 --reps 3 --batches 1,16" llama_bench tl-q4_0 /tmp/m/tl-q4_0.gguf
  VKS_BENCH_ARGS="--prompt 2048 --gen 8 --reps 2 --batches 1"
  for tile in 8 32; do vks_bench "tl-q4_0-2048-t$tile" /tmp/m/tl-q4_0.gguf VKSTREAM_LANES_TILE=$tile; done
  LLAMA_BENCH_ARGS="--prompt 2048 --gen 8 --reps 2 --batches 1" llama_bench tl-q4_0-2048 /tmp/m/tl-q4_0.gguf
  VKS_BENCH_ARGS="--prompt 512 --gen 4 --reps 2 --batches 1 --profile" vks_bench tl-q4_0-profile /tmp/m/tl-q4_0.gguf
  grep -A30 'prefill 512' "$out"/vks-tl-q4_0-profile.txt | head -32
  # Where a batch-1 decode step's time goes (the dispatch floor against the weight reads).
  VKS_BENCH_ARGS="--prompt 128 --gen 16 --reps 1 --batches 1 --profile" vks_bench tl-q4_0-decode-profile /tmp/m/tl-q4_0.gguf
  grep -A30 'decode batch 1' "$out"/vks-tl-q4_0-decode-profile.txt | head -32
  VKS_BENCH_ARGS="--prompt 128 --gen 16 --reps 3 --batches 1 16"
  for m in tl-q4_k_m tl-f16; do
    for tile in 8 32; do vks_bench "$m-t$tile" /tmp/m/$m.gguf VKSTREAM_LANES_TILE=$tile; done
    LLAMA_BENCH_ARGS="--prompt 128 --gen 16 --reps 3 --batches 1,16" llama_bench "$m" /tmp/m/$m.gguf
  done
fi

if [ "$mode" = dot ]; then
  gtest_suite vks_vulkan_kernels_tests 90 'Dot/*'
  gtest_suite vks_vulkan_runner_tests 60 'RunnerSynthetic.Dot*'
  mk tl-q4_0 tinyllama-1.1b q4_0 "$voc"; mk tl-q4_k_m tinyllama-1.1b q4_k_m "$voc"
  export VKS_BENCH_ARGS="--prompt 128 --gen 16 --reps 3 --batches 1 16"
  for m in tl-q4_0 tl-q4_k_m; do
    i=0; for family in lanes dot lanes dot; do
      i=$((i + 1)); vks_bench "$m-$family-r$i" /tmp/m/$m.gguf VKSTREAM_MATMUL_KERNELS=$family
    done
    LLAMA_BENCH_ARGS="--prompt 128 --gen 16 --reps 3 --batches 1,16" llama_bench "$m" /tmp/m/$m.gguf
  done
  VKS_BENCH_ARGS="--prompt 2048 --gen 8 --reps 2 --batches 1"
  for family in lanes dot; do vks_bench "tl-q4_0-2048-$family" /tmp/m/tl-q4_0.gguf VKSTREAM_MATMUL_KERNELS=$family; done
  LLAMA_BENCH_ARGS="--prompt 2048 --gen 8 --reps 2 --batches 1" llama_bench tl-q4_0-2048 /tmp/m/tl-q4_0.gguf
fi

if [ "$mode" = replay ]; then
  gtest_suite vks_vulkan_runner_tests 90 'RunnerReplay.*:StepReplay*:Families/RunnerAttention.*/lanes'
  mk tl-q4_0 tinyllama-1.1b q4_0 "$voc"
  for context in 16 1024; do
    for r in 1 2; do
      for replay in replay record; do
        flag=; [ $replay = record ] && flag=--no-replay
        VKS_BENCH_ARGS="--prompt 128 --gen 32 --reps 2 --batches 1 16 --context $context $flag" \
          vks_bench "tl-q4_0-ctx$context-$replay-r$r" /tmp/m/tl-q4_0.gguf
      done
    done
  done
  LLAMA_BENCH_ARGS="--prompt 128 --gen 32 --reps 2 --batches 1,16" llama_bench tl-q4_0 /tmp/m/tl-q4_0.gguf
fi

if [ "$mode" = context ]; then
  mk l32-q4_0 llama-3.2-1b q4_0
  for long in 8192 32768; do
    for kv in f16 q8_0; do
      step "context decode 1024 vs $long, KV $kv"
      timeout 150 "$bin/vks_bench_context_decode" /tmp/m/l32-q4_0.gguf --short 1024 --long "$long" --gen 16 \
        --rounds 3 --backend vulkan --kv-type "$kv" > "$out/context-$long-$kv.txt" 2>&1
      echo "exit $?"; tail -4 "$out/context-$long-$kv.txt"
    done
  done
fi

if [ "$mode" = splits ]; then
  mk l32-q4_0 llama-3.2-1b q4_0
  for long in 8192 32768; do
    for keys in 128 256 512 1024; do
      step "context decode 1024 vs $long, $keys keys per attention split"
      timeout 100 "$bin/vks_bench_context_decode" /tmp/m/l32-q4_0.gguf --short 1024 --long "$long" --gen 16 \
        --rounds 2 --backend vulkan --attn-split-keys "$keys" > "$out/splits-$long-$keys.txt" 2>&1
      echo "exit $?"; tail -4 "$out/splits-$long-$keys.txt"
    done
  done
fi

if [ "$mode" = tests ]; then
  step devices; "$bin/vkstream" devices 2>&1 | tee "$out/devices.txt"
  gtest_suite vks_vulkan_runner_tests 150 "*$runner_skip"
  for t in sched_engine_vulkan_test sched_engine_embed_vulkan_test; do gtest_suite "$t" 150; done
  step "fixtures through vkstreamd on the GPU"
  long="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends every day."
  for f in /tmp/vks/models/kquant-*.gguf /tmp/vks/models/qwen2-tiny.gguf /tmp/vks/models/llama3-rope-freqs-tiny.gguf; do
    [ -f "$f" ] || continue
    name=$(basename "$f" .gguf); d=/tmp/d-$name; mkdir -p "$d"
    prompt="Once upon a time"; [ "$name" = llama3-rope-freqs-tiny ] && prompt=$long
    "$bin/vkstreamd" --model "$f" --no-cpu-fallback --socket "$d/s" --zmq "ipc://$d/r" --pub "ipc://$d/p" \
      --log-level warn > "$d/log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do [ -S "$d/s" ] && break; sleep 0.1; done
    timeout 60 "$bin/vkstream" generate --socket "$d/s" --json --logprobs 20 -t 0 -n 8 "$prompt" > "$out/gen-$name.jsonl" 2>> "$d/log"
    echo "$name: exit $? $(grep -c '"type":"token"' "$out/gen-$name.jsonl") tokens"
    kill "$pid"; wait "$pid"
    grep -v "chat template" "$d/log" | head -3
  done
  save_logs
  # Last and with the longest limit: on NVIDIA's compiler the rows family's pipelines (the CPU
  # devices' kernels, tested on every device) take seconds each; 204 of the 214 tests ran in 90 s
  # on an H100.
  gtest_suite vks_vulkan_kernels_tests 300
  if [ "${VKS_KERNEL_BENCH:-1}" = 1 ]; then
    step kernels; timeout 90 "$bin/vks_bench_vulkan_kernels" > "$out/kernels.txt" 2>&1; echo "exit $?"; tail -40 "$out/kernels.txt"
  fi
fi

if [ "$mode" = profile ]; then  # where a step's time goes: per-op GPU time, and the engine around the runner
  mk p-q4_0 tinyllama-1.1b q4_0; mk p-q4_k_m tinyllama-1.1b q4_k_m
  for m in p-q4_0 p-q4_k_m; do
    step "vkstream $m --profile"
    timeout 60 "$bin/vks_bench_vulkan_runner" /tmp/m/$m.gguf --prompt 128 --gen 16 --reps 2 --batches 1 16 --profile \
      > "$out/profile-$m.txt" 2>&1
    echo "exit $?"; grep -A40 'decode batch 1' "$out/profile-$m.txt" | head -45
  done
  engine_run engine_load p-q4_0 /tmp/m/p-q4_0.gguf
fi

if [ "$mode" = versus ]; then  # pack.sh's BASE_BUILD (bin/base-*) and this build alternating, then llama.cpp
  mk p-q4_0 tinyllama-1.1b q4_0; m=/tmp/m/p-q4_0.gguf
  for round in 1 2; do
    for b in base- ""; do
      tag=${b:-new-}
      step "${tag}runner at 1,024 tokens of context, round $round"
      timeout 60 "$bin/${b}vks_bench_vulkan_runner" "$m" --prompt 128 --gen 16 --reps 2 --batches 1 16 --context 1024 \
        > "$out/versus-${tag}runner-$round.txt" 2>&1
      echo "exit $?"; grep -E '^\| (prefill|decode)' "$out/versus-${tag}runner-$round.txt"
      engine_run "${b}engine_load" "p-q4_0-$round" "$m"
    done
  done
  if [ -x /tmp/nlc/bin/node ] && [ -f "$voc" ]; then
    mk tl-q4_0 tinyllama-1.1b q4_0 "$voc"
    vks_bench tl-q4_0 /tmp/m/tl-q4_0.gguf
    llama_bench tl-q4_0 /tmp/m/tl-q4_0.gguf
  fi
fi

if [ "$mode" = bench ]; then
  step models
  mk tl-q4_0 tinyllama-1.1b q4_0 "$voc"; mk tl-q8_0 tinyllama-1.1b q8_0 "$voc"; mk tl-f16 tinyllama-1.1b f16 "$voc"
  mk tl-q4_k_m tinyllama-1.1b q4_k_m "$voc"; mk tl-q6_k tinyllama-1.1b q6_K "$voc"
  mk l32-q4_0 llama-3.2-1b q4_0; mk l32-q4_k_m llama-3.2-1b q4_k_m
  ls -la /tmp/m
  for m in tl-q4_0 tl-q8_0 tl-f16 tl-q4_k_m tl-q6_k stories260K l32-q4_0 l32-q4_k_m; do
    f=/tmp/m/$m.gguf; [ "$m" = stories260K ] && f=/tmp/vks/models/stories260K.gguf
    vks_bench "$m" "$f"
    # The CPU devices' kernel family on the same GPU, for the ratio.
    [ "$m" = tl-q4_0 ] && vks_bench "$m-rows" "$f" VKSTREAM_MATMUL_KERNELS=rows
    case $m in l32-*) continue ;; esac
    llama_bench "$m" "$f"
  done
fi
