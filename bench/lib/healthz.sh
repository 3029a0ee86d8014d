# Sourced by the bench scripts that start servers.
#
# wait_healthz PORT [TRIES] [PAUSE]: waits until 127.0.0.1:PORT answers GET /healthz with a
# 2xx; fails (status 1) after TRIES tries PAUSE seconds apart (100 and 0.1 by default).
wait_healthz() {
  local port=$1 tries=${2:-100} pause=${3:-0.1}
  for _ in $(seq "$tries"); do
    answers_healthz "$port" && return 0
    sleep "$pause"
  done
  return 1
}

# answers_healthz PORT: whether 127.0.0.1:PORT answers GET /healthz with a 2xx now. Asked
# before a server is started on PORT as well: a stale server's answer would pass wait_healthz
# for the new one, which then fails to bind and is never measured.
answers_healthz() {
  curl -fs -o /dev/null "http://127.0.0.1:$1/healthz"
}
