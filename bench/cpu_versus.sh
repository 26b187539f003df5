#!/usr/bin/env bash
# vkstream's CPU backend (the CpuRunner the daemon serves with) and llama.cpp's CPU backend on the
# same GGUF files and thread counts, alternating run for run (machines here are shared and noisy:
# compare figures of the same round). Run by hand, from the project root, with node-llama-cpp
# installed as tools/llama_cpp_refs/README.md says:
#   bench/cpu_versus.sh [--rounds 2] [--prompt 128] [--gen 32] [--seqs 8,16] [--threads 1,2] [--reps 3]
#                       [--timeout 600] [--llama-variant NAME] [--busy] MODEL.gguf [MODEL.gguf ...]
# Environment: BUILD (default build), NODE_LLAMA_CPP_DIR (default /tmp/nlc), VKSTREAM_CPU_ISA (to
# force a lower kernel level).
# --llama-variant NAME: llama.cpp loads the best of its CPU builds the CPU runs (libggml-cpu-NAME.so,
# e.g. zen4, haswell); NAME makes it run that one only, from a copy of the install
# ($NODE_LLAMA_CPP_DIR-NAME, made once) that holds no other. For a CPU with AVX but no AVX2 (this
# project's CI machine kind) compare with sandybridge (AVX), ivybridge (+F16C) or piledriver
# (+F16C, FMA: what llama.cpp picks on such a CPU), e.g. on any newer CPU:
#   VKSTREAM_CPU_ISA=avx bench/cpu_versus.sh --llama-variant piledriver MODEL.gguf
# The features llama.cpp reports for the build it loaded are printed; for those three variants the
# script stops if they include AVX2.
# --busy: every figure twice, quiet and then beside a busy process (a shell loop spinning on one core,
# started before and killed after the program): issue 34's "loaded machine" ratio, for both backends.
# Prints, per round, model and thread count, vkstream's table (prefill, decode batch 1, aggregate
# decode at --seqs, decode GB/s against a plain-C read probe of that thread count) and llama.cpp's.
set -uo pipefail
rounds=2 prompt=128 gen=32 seqs=8,16 threads=1,2 reps=3 limit=600 variant= conditions=quiet
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
    --llama-variant) variant=$2; shift 2 ;;
    --busy) conditions="quiet busy"; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || { echo "usage: $0 [options] MODEL.gguf ..." >&2; exit 2; }
B=${BUILD:-build}
nlc=${NODE_LLAMA_CPP_DIR:-/tmp/nlc}
root=$PWD
[ -x "$B/bench/vks_bench_cpu_reference" ] || { echo "no $B/bench/vks_bench_cpu_reference: build first" >&2; exit 2; }
[ -d "$nlc/node_modules/node-llama-cpp" ] || { echo "no node-llama-cpp in $nlc (tools/llama_cpp_refs/README.md)" >&2; exit 2; }
if [ -n "$variant" ]; then
  # A copy whose bins folders hold libggml-cpu-$variant.so as the only CPU build (ggml loads the best
  # one present that the CPU runs, so this one or none).
  copy="${nlc%/}-$variant"
  if [ ! -d "$copy/node_modules/node-llama-cpp" ]; then
    ls "$nlc"/node_modules/@node-llama-cpp/*/bins/*/libggml-cpu-"$variant".so >/dev/null 2>&1 ||
      { echo "no libggml-cpu-$variant.so in $nlc/node_modules/@node-llama-cpp/*/bins" >&2; exit 2; }
    echo "making $copy: a copy of $nlc with llama.cpp's $variant CPU build only"
    rm -rf "$copy.tmp" && cp -a "$nlc" "$copy.tmp" || exit 2
    find "$copy.tmp/node_modules/@node-llama-cpp" -name 'libggml-cpu-*.so' ! -name "libggml-cpu-$variant.so" -delete
    mv "$copy.tmp" "$copy"
  fi
  nlc=$copy
fi
# What llama.cpp's CPU backend reports for the build it loaded (ggml's system info). From a file:
# node-llama-cpp tests its binary in a child process that inherits node's flags, which `-e` breaks.
probe=$(mktemp --suffix=.mjs) && trap 'rm -f "$probe"' EXIT
cat >"$probe" <<EOF
const m = await import("$root/tools/llama_cpp_refs/load_node_llama_cpp.mjs");
const {build} = await m.cpuLlama(await m.importNodeLlamaCpp());
console.log(build.system_info.split("\\n").find((l) => l.includes("CPU :")) ?? build.system_info);
EOF
features=$(cd "$nlc" && NODE_LLAMA_CPP_DIR="$nlc" node "$probe" 2>/dev/null) ||
  { echo "llama.cpp from $nlc does not load (run: cd $nlc && node $probe)" >&2; exit 2; }
echo "llama.cpp from $nlc: $features"
case "$variant:$features" in
  sandybridge:*AVX2*|ivybridge:*AVX2*|piledriver:*AVX2*)
    echo "llama.cpp reports AVX2 with the $variant build: not the variant asked for" >&2; exit 2 ;;
esac
echo "vkstream kernel level: ${VKSTREAM_CPU_ISA:-the default for this CPU (vkstream devices names it)}"
echo "prompt $prompt, gen $gen, seqs $seqs, threads $threads, reps $reps, $rounds rounds; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# Runs "$@" beside a process spinning on one core when the condition is busy.
busy_pid=
start_condition() {
  if [ "$1" = busy ]; then
    sh -c 'while :; do :; done' &
    busy_pid=$!
  fi
}
stop_condition() {
  if [ -n "$busy_pid" ]; then kill "$busy_pid" 2>/dev/null; wait "$busy_pid" 2>/dev/null; busy_pid=; fi
}
trap 'stop_condition; rm -f "$probe"' EXIT
for ((r = 1; r <= rounds; ++r)); do
  for m in "${models[@]}"; do
    for t in ${threads//,/ }; do
      for c in $conditions; do
        echo "== round $r, $t thread(s), $c: vkstream CPU, $m"
        start_condition "$c"
        timeout "$limit" "$B/bench/vks_bench_cpu_reference" "$m" --threads "$t" --prompt "$prompt" --generate "$gen" \
          --seqs ${seqs//,/ } --reps "$reps" --no-reference --probe 2>&1 | sed -n '/^CpuRunner/p;/^decode reads/p'
        if [ "${PIPESTATUS[0]}" = 124 ]; then echo "(no result within $limit s)"; fi
        stop_condition
        echo "== round $r, $t thread(s), $c: llama.cpp CPU, $m"
        start_condition "$c"
        (cd "$nlc" && timeout "$limit" node "$root/tools/llama_cpp_refs/throughput.mjs" --model "$(realpath "$m")" \
          --gpu false --threads "$t" --prompt "$prompt" --gen "$gen" --reps "$reps" --batches "1,$seqs") 2>&1 | tail -8
        if [ "${PIPESTATUS[0]}" = 124 ]; then echo "(no result within $limit s)"; fi
        stop_condition
      done
    done
  done
done
