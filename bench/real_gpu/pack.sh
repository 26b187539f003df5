#!/usr/bin/env bash
# Packs what bench/real_gpu/run.sh needs on a machine that has a real GPU but none of this project's
# Debian libraries (the workplace's `device` tool: a CUDA image, no network). Writes DEST (default
# .gpu/, which .git/info/exclude must ignore) with:
#   tests.tar.xz the Vulkan test binaries, daemon, CLI, model writer, kernel/runner/engine benches, every shared library they need
#                except glibc/libstdc++ (the target's are newer), and the small test models with references
#   bench.tar.xz vks-make-model and the runner bench with their libraries, stories260K, the Llama 2 vocab
#   nlc.tar.xz   node and node-llama-cpp with only its Vulkan prebuilt binaries (llama.cpp's Vulkan
#                backend, for the side-by-side figures), when NLC_DIR (default /tmp/nlc) holds it
# With BASE_BUILD set (a build of an older commit), tests.tar.xz also holds that build's runner bench
# and engine_load as bin/base-*, for `run.sh versus`; with FIXTURES set (file names in the models
# folder; stories260K.gguf among them), only those fixtures travel, so that tests.tar.xz fits beside
# nlc.tar.xz (run.sh then skips the runner tests of the missing ones).
# Usage: bench/real_gpu/pack.sh [BUILD_DIR] [DEST]
set -euo pipefail
build=${1:-build}
dest=${2:-.gpu}
models=${VKSTREAM_MODELS:-../shared/models}
nlc=${NLC_DIR:-/tmp/nlc}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The older build's programs that tests.tar.xz carries as bin/base-* (BASE_BUILD, for run.sh versus).
base_bins=()
[ -n "${BASE_BUILD:-}" ] && base_bins=("$BASE_BUILD/bench/vks_bench_vulkan_runner" "$BASE_BUILD/bench/engine_load")
mkdir -p "$dest"
# pack_vks TARBALL "BINARIES" "MODEL FILES": a vks/ folder with bin/, lib/ and models/.
pack_vks() {
  local tarball=$1 b lib
  local -a bins=($2)  # word-split on purpose: the list spans lines
  rm -rf "$stage/vks"
  mkdir -p "$stage/vks/bin" "$stage/vks/lib" "$stage/vks/models/reference"
  for b in "${bins[@]}"; do cp "$build/$b" "$stage/vks/bin/"; done
  # Every resolved dependency except the C and C++ runtimes, which the target has in newer versions.
  local -a base=()
  [ "$tarball" = tests.tar.xz ] && base=("${base_bins[@]}")
  local -a all=("${bins[@]/#/$build/}" "${base[@]}")
  for b in "${all[@]}"; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/vks/lib/"; done
  # libglvnd, which NVIDIA's Vulkan ICD (libGLX_nvidia.so.0) loads and the CUDA image lacks.
  for lib in libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libOpenGL.so.0; do
    cp -L "/lib/x86_64-linux-gnu/$lib" "$stage/vks/lib/" 2>/dev/null || echo "pack.sh: no $lib here (apt-get install libglvnd0)" >&2
  done
  for b in $3; do cp "$models/$b" "$stage/vks/models/"; done
  for b in "${base[@]}"; do cp "$b" "$stage/vks/bin/base-$(basename "$b")"; done
  cp "$models"/README.md "$stage/vks/models/"
  cp -r "$models"/reference/. "$stage/vks/models/reference/"
  tar -C "$stage" -cJf "$dest/$tarball" vks
}
# tests.tar.xz: everything `run.sh tests` runs, with the fixtures.
pack_vks tests.tar.xz "server/vkstreamd clients/cli/vkstream tools/vks-gguf-info tools/vks-make-model
  bench/vks_bench_vulkan_kernels bench/vks_bench_vulkan_runner bench/vks_bench_vulkan_versus bench/engine_load bench/vks_bench_device_probe bench/vks_bench_context_decode tests/vulkan/vks_vulkan_kernels_tests tests/vulkan/vks_vulkan_runner_tests
  tests/sched/sched_engine_vulkan_test tests/sched/sched_engine_embed_vulkan_test" \
  "${FIXTURES:-$(cd "$models" && echo stories260K.gguf kquant-*.gguf qwen2-tiny.gguf llama3-rope-freqs-tiny.gguf)}"
# bench.tar.xz: the model writer and the runner benchmark, small enough to travel beside nlc.tar.xz.
pack_vks bench.tar.xz "tools/vks-make-model bench/vks_bench_vulkan_runner" "stories260K.gguf llama2-vocab.gguf"
if [ -d "$nlc/node_modules/node-llama-cpp" ]; then
  mkdir -p "$stage/nlc/bin"
  cp "$(command -v node)" "$stage/nlc/bin/"
  tar -C "$nlc" -cf - --exclude='node_modules/@node-llama-cpp/linux-arm64' \
      --exclude='node_modules/@node-llama-cpp/linux-armv7l' --exclude='node_modules/@node-llama-cpp/linux-x64' \
      --exclude='node_modules/@node-llama-cpp/linux-x64-cuda' --exclude='node_modules/@node-llama-cpp/linux-x64-cuda-ext' \
      --exclude='node_modules/node-llama-cpp/llama/gitRelease.bundle' node_modules | tar -C "$stage/nlc" -xf -
  tar -C "$stage" -cf - nlc | xz -T0 -6 > "$dest/nlc.tar.xz"
fi
du -sh "$dest"/*
