#!/usr/bin/env bash
# Throughput through a load balancer: the same nginx (per-request round robin, keep-alive to
# the workers, as deploy/nginx/roundtrip.conf) in front of 3 `roundtrip serve` workers and in
# front of 1, both up at once and measured in alternating rounds, so the two are compared in
# the same run. Workers share one Redis (key rings, single-use claims, legacy sessions,
# limits) and each has its own SQLite store with the same demo key and master key.
#
# Modes (`roundtrip bench --mode`): call (echo), mrtr (sealed two-round flows, whose rounds
# land on different workers), legacy (shim flows on 2025-11-25 sessions, whose requests are
# forwarded to the worker holding the session when they land elsewhere).
#
# On a two-core machine 3 workers cannot go faster than 1 (nginx, the driver and the workers
# share the cores): read the ratio as the cost of spreading the same work over processes.
#
# usage: bench/fleet.sh   env: BIN (target/release/roundtrip) DURATION (10s) ROUNDS (2)
#        CONNS (32) MODES ("call mrtr legacy") REDIS_URL (redis://127.0.0.1:6379)
# needs: nginx (bench/install-tools.sh)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BIN=${BIN:-$ROOT/target/release/roundtrip}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-2}
CONNS=${CONNS:-32}
MODES=${MODES:-call mrtr legacy}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $BIN ]] || { echo "no $BIN: cargo build --release first" >&2; exit 1; }
[[ -x $NGINX ]] || { echo "no nginx: bench/install-tools.sh" >&2; exit 1; }

# shellcheck source=bench/lib/fleet_workers.sh
source "$HERE/lib/fleet_workers.sh"
start_workers

# balancer NAME PORT UPSTREAM_PORT...: an nginx in front of those workers.
balancer() {
  local name=$1 port=$2
  shift 2
  local servers=""
  for p in "$@"; do servers+="    server 127.0.0.1:$p;"$'\n'; done
  mkdir -p "$SCRATCH/$name"
  cat >"$SCRATCH/$name/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $SCRATCH/$name/nginx.pid;
error_log $SCRATCH/$name/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $SCRATCH/$name;
  proxy_temp_path $SCRATCH/$name;
  upstream workers {
$servers    keepalive 64;
  }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://workers;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
CONF
  "$NGINX" -c "$SCRATCH/$name/nginx.conf" -p "$SCRATCH/$name" 2>"$SCRATCH/$name/start.log" &
  PIDS+=("$!")
  wait_healthz "$port" && return 0
  echo "nginx $name did not start: $(cat "$SCRATCH/$name/start.log")" >&2
  exit 1
}
LB3=$(free_port)
LB1=$(free_port)
balancer three "$LB3" "${WORKERS[@]}"
balancer one "$LB1" "${WORKERS[0]}"

# run LB MODE: req/s of one measured window.
run() {
  "$BIN" bench --url "http://127.0.0.1:$1/t/demo/mcp" --mode "$2" -c "$CONNS" \
    --duration "$DURATION" --key bench-key 2>&1 | tee -a "$SCRATCH/bench.log" |
    sed -nE 's/.* requests \(([0-9]+)\/s\).*/\1/p' | head -1
}

echo "fleet through nginx | 3 workers vs 1 behind the same balancer | $CONNS connections, $DURATION x $ROUNDS rounds, alternating | $(date -u +%FT%TZ)"
printf '%-8s %-28s %-28s %s\n' mode "3 workers req/s (rounds)" "1 worker req/s (rounds)" "3/1"
for mode in $MODES; do
  three=() one=()
  for _ in $(seq 1 "$ROUNDS"); do
    three+=("$(run "$LB3" "$mode")")
    one+=("$(run "$LB1" "$mode")")
  done
  best3=$(printf '%s\n' "${three[@]}" | sort -g | tail -1)
  best1=$(printf '%s\n' "${one[@]}" | sort -g | tail -1)
  best3=${best3:-0} best1=${best1:-0}
  printf '%-8s %-28s %-28s %s\n' "$mode" "$best3 (${three[*]})" "$best1 (${one[*]})" \
    "$(python3 -c "print(f'{$best3 / $best1:.3f}' if $best1 else 'n/a')")"
done
echo "(best round of each; a flow's two rounds count as two requests)"
