#!/usr/bin/env bash
# Cross-compiles neondot_kernels_check.cpp with the neondot level's sources for aarch64 and runs it
# under qemu-aarch64: on a CPU with the dot product (-cpu max: every kernel against the scalar
# level's bits, and the detection) and on one without (-cpu cortex-a53: the detection falls back
# to scalar). Usage: run_neondot_check.sh SOURCE_DIR CXX QEMU OUT_DIR
set -euo pipefail
src=$1 cxx=$2 qemu=$3 out=$4
mkdir -p "$out"
q="$src/engine/cpu/quant"
"$cxx" -std=c++20 -O2 -Wall -Wextra -Werror -ffp-contract=off -static -I"$src" \
  "$q/isa.cpp" "$q/act_quant.cpp" "$q/kernels_scalar.cpp" "$q/kernels_neondot.cpp" \
  "$src/tests/cpu/cross/neondot_kernels_check.cpp" -o "$out/neondot_kernels_check"
EXPECT_ISA=neondot "$qemu" -cpu max "$out/neondot_kernels_check"
EXPECT_ISA=scalar "$qemu" -cpu cortex-a53 "$out/neondot_kernels_check"
