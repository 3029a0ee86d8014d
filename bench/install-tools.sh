#!/usr/bin/env bash
# Installs the load tools the benchmarks use that do not come with the machine, from Debian's
# packages: wrk (the driver of the wrk-based peer harness, ../shared/bench/peers/run.sh) and
# nginx (the balancer of bench/fleet.sh, as in deploy/).
# valgrind (bench/instructions.sh) and taskset (util-linux) are on the machine already; the
# script checks them too. Idempotent: a tool already present is left as it is.
#
# usage: bench/install-tools.sh      (as root, or with sudo available)
set -euo pipefail

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v taskset >/dev/null || missing+=(util-linux)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
((${#missing[@]} == 0)) && { echo "bench tools present: wrk, valgrind, taskset, nginx"; exit 0; }

sudo=()
[[ $(id -u) == 0 ]] || sudo=(sudo)
echo "== installing from Debian's packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" ||
  { "${sudo[@]}" apt-get update -q && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }
