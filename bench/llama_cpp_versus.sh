#!/usr/bin/env bash
# vkstream's Vulkan runner and llama.cpp's Vulkan backend on the same device and GGUF, alternating
# run for run (machines here are shared and noisy: compare figures of the same round). Run by hand,
# from the project root, with node-llama-cpp installed as tools/llama_cpp_refs/README.md says:
#   bench/llama_cpp_versus.sh [--rounds 2] [--prompt 128] [--gen 32] [--batches 1,8,16] [--reps 3]
#                             [--timeout 300] MODEL.gguf [MODEL.gguf ...]
# Environment: BUILD (default build), NODE_LLAMA_CPP_DIR (default /tmp/nlc), VKSTREAM_DEVICE.
# On a CPU-type Vulkan device (lavapipe) llama.cpp must be told to use it (GGML_VK_VISIBLE_DEVICES=0),
# or it runs on the CPU without saying so; the script sets that when no GPU is listed.
# Prints both programs' own tables per model and round; a run past --timeout seconds is reported as
# such (llama.cpp's Vulkan backend on lavapipe can take minutes for one TinyLlama-size prefill).
set -uo pipefail
rounds=2 prompt=128 gen=32 batches=1,8,16 reps=3 limit=300
models=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || { echo "usage: $0 [options] MODEL.gguf ..." >&2; exit 2; }
B=${BUILD:-build}
nlc=${NODE_LLAMA_CPP_DIR:-/tmp/nlc}
root=$PWD
[ -x "$B/bench/vks_bench_vulkan_runner" ] || { echo "no $B/bench/vks_bench_vulkan_runner: build first" >&2; exit 2; }
[ -d "$nlc/node_modules/node-llama-cpp" ] || { echo "no node-llama-cpp in $nlc (tools/llama_cpp_refs/README.md)" >&2; exit 2; }
if ! "$B/clients/cli/vkstream" devices 2>/dev/null | grep -v '\[cpu\]' | grep -q '^\* '; then
  export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
fi
"$B/clients/cli/vkstream" devices
echo "prompt $prompt, gen $gen, batches $batches, reps $reps, $rounds rounds"
for ((r = 1; r <= rounds; ++r)); do
  for m in "${models[@]}"; do
    echo "== round $r: vkstream, $m"
    timeout "$limit" "$B/bench/vks_bench_vulkan_runner" "$m" --prompt "$prompt" --gen "$gen" --reps "$reps" \
      --batches ${batches//,/ } 2>&1 | sed -n '/^ceiling/p;/^| /p'
    if [ "${PIPESTATUS[0]}" = 124 ]; then echo "(no result within $limit s)"; fi
    echo "== round $r: llama.cpp Vulkan, $m"
    (cd "$nlc" && timeout "$limit" node "$root/tools/llama_cpp_refs/throughput.mjs" --model "$(realpath "$m")" \
      --gpu vulkan --prompt "$prompt" --gen "$gen" --reps "$reps" --batches "$batches") 2>&1 | tail -12
    if [ "${PIPESTATUS[0]}" = 124 ]; then echo "(no result within $limit s)"; fi
  done
done
