#!/usr/bin/env bash
# Prefill and decode tokens/s of the Vulkan runner for one model shape in several weight types
# (synthetic vks-make-model files, same shape and seed), with GB/s of weights streamed per decode
# token at batch 1 (weight bytes of the GGUF x decode tokens/s). Run from the build directory:
#   ../bench/vulkan_weight_types.sh [PRESET] [LAYERS] [TYPES...]
# defaults: tinyllama-1.1b, the preset's layer count, q4_k_m q6_K q4_0 q8_0. LAYERS keeps every
# matrix shape and only cuts the depth (tokens/s ratios between types are what matter).
set -euo pipefail
preset=${1:-tinyllama-1.1b}
layers=${2:-0}
shift $(( $# > 2 ? 2 : $# )) || true
types=("$@")
[ ${#types[@]} -eq 0 ] && types=(q4_k_m q6_K q4_0 q8_0)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
layer_arg=()
[ "$layers" != 0 ] && layer_arg=(--layers "$layers")
printf '| %-8s | %10s | %12s | %12s | %10s |\n' type "weights MB" "prefill t/s" "decode t/s" "decode GB/s"
printf '|----------|------------|--------------|--------------|-------------|\n'
for t in "${types[@]}"; do
  f="$dir/$t.gguf"
  ./tools/vks-make-model -q -o "$f" -p "$preset" -t "$t" "${layer_arg[@]}" --seed 7
  out=$(./bench/vks_bench_vulkan_runner "$f" --prompt 64 --gen 16 --batches 1 --reps 2 2>/dev/null)
  prefill=$(sed -n 's/^prefill: \([0-9.]*\) tokens\/s/\1/p' <<<"$out")
  decode=$(sed -n 's/^decode x1: \([0-9.]*\) tokens\/s/\1/p' <<<"$out")
  bytes=$(stat -c %s "$f")
  awk -v t="$t" -v b="$bytes" -v p="$prefill" -v d="$decode" \
    'BEGIN { printf "| %-8s | %10.1f | %12.2f | %12.2f | %10.2f |\n", t, b / 1e6, p, d, b * d / 1e9 }'
done
