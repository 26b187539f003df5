#!/usr/bin/env bash
# Cold vs warm start of vkstreamd: seconds until the socket answers (READY) and until a first
# one-token greedy request completes, first with an empty private cache, then RUNS times with the
# cache the first start left (pipeline cache + Mesa shader cache under $XDG_CACHE_HOME/vkstream),
# and the median of those warm starts. Also the daemon's CPU seconds (user + system) until READY,
# which a loaded machine disturbs less than the wall time, and the load average.
#   bench/cold_start.sh [BUILD_DIR] [MODEL] [BACKEND] [RUNS]   (run from the project root)
# BACKEND: vulkan (default: --vulkan, even where the backend rule would pick the CPU reference: the
# pipelines are what it times), cpu (--cpu) or auto (the daemon's own choice).
set -eu
B=${1:-build}
M=${2:-${VKSTREAM_MODELS:-../shared/models}/stories260K.gguf}
BACKEND=${3:-vulkan}
RUNS=${4:-3}
case "$BACKEND" in
  vulkan) FLAG=--vulkan ;;
  cpu) FLAG=--cpu ;;
  auto) FLAG= ;;
  *) echo "backend must be vulkan, cpu or auto, not '$BACKEND'" >&2; exit 2 ;;
esac
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache MESA_SHADER_CACHE_DIR=
TICKS=$(getconf CLK_TCK)
start() {
  local t0 t1 t2 cpu
  t0=$(date +%s.%N)
  "$B/server/vkstreamd" --model "$M" $FLAG --socket "$T/s.sock" --router "ipc://$T/r.zmq" --pub "ipc://$T/p.zmq" >"$T/log.$1" 2>&1 &
  local pid=$!
  until "$B/clients/cli/vkstream" hello --socket "$T/s.sock" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "vkstreamd exited:" >&2; cat "$T/log.$1" >&2; exit 1; }
    sleep 0.05
  done
  t1=$(date +%s.%N)
  cpu=$(awk -v t="$TICKS" '{printf "%.2f", ($14 + $15) / t}' "/proc/$pid/stat")
  "$B/clients/cli/vkstream" generate --socket "$T/s.sock" -n 1 -t 0 "Once upon a time" >/dev/null
  t2=$(date +%s.%N)
  READY=$(echo "$t1 - $t0" | bc)
  printf '%s start: ready after %.2f s (%s CPU s), first request %.3f s; %s\n' "$1" "$READY" "$cpu" \
    "$(echo "$t2 - $t1" | bc)" "$(grep -o 'warmed up in [0-9]* ms\|warm-up skipped' "$T/log.$1" || echo 'no warm-up logged')"
  kill -TERM "$pid"
  wait "$pid"
}
echo "model $M, backend $BACKEND, load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
start cold
warm=()
for i in $(seq 1 "$RUNS"); do
  start "warm$i"
  warm+=("$READY")
done
printf 'median warm ready: %.2f s of %s (load average now %s)\n' \
  "$(printf '%s\n' "${warm[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')" \
  "$RUNS" "$(cut -d' ' -f1-3 /proc/loadavg)"
