#!/usr/bin/env bash
# Prefill and decode tokens/s of the Vulkan runner for one model shape in several weight types
# (synthetic vks-make-model files, same shape and seed), with GB/s of weights streamed per decode
# token at batch 1 (weight bytes of the GGUF x decode tokens/s), then Q4_K_M's decode speed against
# each Q4_0 file measured step for step in one process (vks_bench_vulkan_versus: wall time and
# process CPU time; separate runs minutes apart drift with a shared machine's load). Run from the
# build directory:
#   ../bench/vulkan_weight_types.sh [PRESET] [LAYERS] [TYPES...]
# defaults: tinyllama-1.1b, the preset's layer count, q4_k_m q6_K q4_0 q4_0:q6_K q8_0. TYPE:OUTPUT
# writes the output matrix (token embeddings when tied) as OUTPUT: q4_0:q6_K is the Q4_0 file
# llama-quantize writes by default, plain q4_0 is its --pure. LAYERS keeps every matrix shape and
# only cuts the depth (tokens/s ratios between types are what matter).
set -euo pipefail
preset=${1:-tinyllama-1.1b}
layers=${2:-0}
shift $(( $# > 2 ? 2 : $# )) || true
types=("$@")
[ ${#types[@]} -eq 0 ] && types=(q4_k_m q6_K q4_0 q4_0:q6_K q8_0)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
layer_arg=()
[ "$layers" != 0 ] && layer_arg=(--layers "$layers")
printf '| %-10s | %10s | %12s | %12s | %10s |\n' type "weights MB" "prefill t/s" "decode t/s" "decode GB/s"
printf '|------------|------------|--------------|--------------|-------------|\n'
for t in "${types[@]}"; do
  f="$dir/$t.gguf"
  output_arg=()
  [[ "$t" == *:* ]] && output_arg=(--output-type "${t#*:}")
  ./tools/vks-make-model -q -o "$f" -p "$preset" -t "${t%%:*}" "${output_arg[@]}" "${layer_arg[@]}" --seed 7
  out=$(./bench/vks_bench_vulkan_runner "$f" --prompt 64 --gen 16 --batches 1 --reps 2 2>/dev/null)
  prefill=$(sed -n 's/^prefill: \([0-9.]*\) tokens\/s/\1/p' <<<"$out")
  decode=$(sed -n 's/^decode x1: \([0-9.]*\) tokens\/s/\1/p' <<<"$out")
  bytes=$(stat -c %s "$f")
  awk -v t="$t" -v b="$bytes" -v p="$prefill" -v d="$decode" \
    'BEGIN { printf "| %-10s | %10.1f | %12.2f | %12.2f | %10.2f |\n", t, b / 1e6, p, d, b * d / 1e9 }'
done
if [ -f "$dir/q4_k_m.gguf" ]; then
  for t in "${types[@]}"; do
    [[ "${t%%:*}" == q4_0 ]] || continue
    echo
    echo "q4_k_m against $t, step for step (file bytes $(stat -c %s "$dir/$t.gguf") / $(stat -c %s "$dir/q4_k_m.gguf")):"
    ./bench/vks_bench_vulkan_versus "$dir/$t.gguf" "$dir/q4_k_m.gguf" --prompt 16 --rounds 2 --gen 64 2>/dev/null |
      grep 'OTHER/BASE'
  done
fi
