#!/usr/bin/env bash
# Cold vs warm start of vkstreamd: seconds until the socket answers (READY) and until a first
# one-token greedy request completes, first with an empty private cache, then with the cache the
# first start left (pipeline cache + Mesa shader cache under $XDG_CACHE_HOME/vkstream). On Vulkan
# (--vulkan) even where the backend rule would pick the CPU reference: the pipelines are what it times.
#   bench/cold_start.sh [BUILD_DIR] [MODEL]   (run from the project root)
set -eu
B=${1:-build}
M=${2:-${VKSTREAM_MODELS:-../shared/models}/stories260K.gguf}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache MESA_SHADER_CACHE_DIR=
start() {
  local t0 t1 t2
  t0=$(date +%s.%N)
  "$B/server/vkstreamd" --model "$M" --vulkan --socket "$T/s.sock" --router "ipc://$T/r.zmq" --pub "ipc://$T/p.zmq" >"$T/log.$1" 2>&1 &
  local pid=$!
  until "$B/clients/cli/vkstream" hello --socket "$T/s.sock" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "vkstreamd exited:" >&2; cat "$T/log.$1" >&2; exit 1; }
    sleep 0.05
  done
  t1=$(date +%s.%N)
  "$B/clients/cli/vkstream" generate --socket "$T/s.sock" -n 1 -t 0 "Once upon a time" >/dev/null
  t2=$(date +%s.%N)
  printf '%s start: ready after %.2f s, first request %.3f s; %s\n' "$1" "$(echo "$t1 - $t0" | bc)" \
    "$(echo "$t2 - $t1" | bc)" "$(grep -o 'warmed up in [0-9]* ms' "$T/log.$1" || echo 'no warm-up logged')"
  kill -TERM "$pid"
  wait "$pid"
}
start cold
start warm
