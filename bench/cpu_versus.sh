#!/usr/bin/env bash
# vkstream's CPU backend (the CpuRunner the daemon serves with) and llama.cpp's CPU backend on the
# same GGUF files and thread counts, alternating run for run (machines here are shared and noisy:
# compare figures of the same round). Run by hand, from the project root, with node-llama-cpp
# installed as tools/llama_cpp_refs/README.md says:
#   bench/cpu_versus.sh [--rounds 2] [--prompt 128] [--gen 32] [--seqs 8,16] [--threads 1,2] [--reps 3]
#                       [--timeout 600] MODEL.gguf [MODEL.gguf ...]
# Environment: BUILD (default build), NODE_LLAMA_CPP_DIR (default /tmp/nlc), VKSTREAM_CPU_ISA (to
# force a lower kernel level).
# Prints, per round, model and thread count, vkstream's table (prefill, decode batch 1, aggregate
# decode at --seqs, decode GB/s against a plain-C read probe of that thread count) and llama.cpp's.
set -uo pipefail
rounds=2 prompt=128 gen=32 seqs=8,16 threads=1,2 reps=3 limit=600
models=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --seqs) seqs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || { echo "usage: $0 [options] MODEL.gguf ..." >&2; exit 2; }
B=${BUILD:-build}
nlc=${NODE_LLAMA_CPP_DIR:-/tmp/nlc}
root=$PWD
[ -x "$B/bench/vks_bench_cpu_reference" ] || { echo "no $B/bench/vks_bench_cpu_reference: build first" >&2; exit 2; }
[ -d "$nlc/node_modules/node-llama-cpp" ] || { echo "no node-llama-cpp in $nlc (tools/llama_cpp_refs/README.md)" >&2; exit 2; }
echo "prompt $prompt, gen $gen, seqs $seqs, threads $threads, reps $reps, $rounds rounds; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  for m in "${models[@]}"; do
    for t in ${threads//,/ }; do
      echo "== round $r, $t thread(s): vkstream CPU, $m"
      timeout "$limit" "$B/bench/vks_bench_cpu_reference" "$m" --threads "$t" --prompt "$prompt" --generate "$gen" \
        --seqs ${seqs//,/ } --reps "$reps" --no-reference --probe 2>&1 | sed -n '/^CpuRunner/p;/^decode reads/p'
      if [ "${PIPESTATUS[0]}" = 124 ]; then echo "(no result within $limit s)"; fi
      echo "== round $r, $t thread(s): llama.cpp CPU, $m"
      (cd "$nlc" && timeout "$limit" node "$root/tools/llama_cpp_refs/throughput.mjs" --model "$(realpath "$m")" \
        --gpu false --threads "$t" --prompt "$prompt" --gen "$gen" --reps "$reps" --batches "1,$seqs") 2>&1 | tail -8
      if [ "${PIPESTATUS[0]}" = 124 ]; then echo "(no result within $limit s)"; fi
    done
  done
done
