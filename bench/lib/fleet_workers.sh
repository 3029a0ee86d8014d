# Sourced by bench/fleet.sh and bench/forwarding.sh: three `roundtrip serve` workers as a
# fleet (one Redis under a prefix of their own; each its own SQLite store with the same demo
# key, `bench-key`, and master key), and what stops them.
#
# Needs BIN and REDIS_URL; sets SCRATCH (removed at exit), PIDS (stopped at exit) and
# WORKERS (their ports); `free_port` prints a free TCP port, and `wait_healthz` (lib/healthz.sh)
# waits for a server.

SCRATCH=$(mktemp -d /tmp/roundtrip-bench-fleet.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
# shellcheck source=bench/lib/healthz.sh
source "$(dirname "${BASH_SOURCE[0]}")/healthz.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_workers() {
  local master prefix i port
  master=$(head -c 32 /dev/urandom | base64)
  prefix="bench-fleet-$$"
  WORKERS=()
  for i in 0 1 2; do
    port=$(free_port)
    WORKERS+=("$port")
    mkdir -p "$SCRATCH/w$i"
    ROUNDTRIP_DATA_DIR="$SCRATCH/w$i" ROUNDTRIP_REDIS_URL="$REDIS_URL" ROUNDTRIP_REDIS_PREFIX="$prefix" \
    ROUNDTRIP_MASTER_KEY="$master" ROUNDTRIP_DEMO_API_KEY=bench-key ROUNDTRIP_LOG=warn \
      "$BIN" serve --listen "127.0.0.1:$port" --workers 1 >"$SCRATCH/w$i.log" 2>&1 &
    PIDS+=("$!")
  done
  for i in "${!WORKERS[@]}"; do
    wait_healthz "${WORKERS[$i]}" ||
      { echo "worker $i did not start: $(tail -3 "$SCRATCH/w$i.log")" >&2; exit 1; }
  done
}
