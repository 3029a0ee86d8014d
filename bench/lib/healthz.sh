# Sourced by the bench scripts that start servers.
#
# wait_healthz PORT [TRIES] [PAUSE]: waits until 127.0.0.1:PORT answers GET /healthz with a
# 2xx; fails (status 1) after TRIES tries PAUSE seconds apart (100 and 0.1 by default).
wait_healthz() {
  local port=$1 tries=${2:-100} pause=${3:-0.1}
  for _ in $(seq "$tries"); do
    curl -fs -o /dev/null "http://127.0.0.1:$port/healthz" && return 0
    sleep "$pause"
  done
  return 1
}

# port_taken PORT: whether something already listens on 127.0.0.1:PORT (a connection to it
# opens). Asked before a server is started on PORT: a stale server there would answer in the
# new one's place (its /healthz would pass wait_healthz) while the new one fails to bind.
port_taken() {
  (exec 3<> "/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
