#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# http_hello seen from the outside, as a user with curl would check it. Talks
# to 127.0.0.1 only; every wait is bounded and the server stops by itself.
#
#   examples/12_http_hello/from_outside.sh [path/to/http_hello]   (default build/examples/http_hello)
#
# 1. slowloris: under `ulimit -n 256`, 300 clients each send half a request
#    head and hold on; with --header-timeout 2 a normal curl is still answered
#    within a few seconds (it waits in the accept backlog until the timeout
#    frees the fds the slow clients held).
# 2. the obs-fold smuggling request gets 400 (and only that).
# 3. curl -H 'Expect: 100-continue' --data-binary @2MB ... --next ...: both
#    answered, on one connection.
set -euo pipefail
bin=${1:-build/examples/http_hello}
work=$(mktemp -d)
server=
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

( ulimit -n 256; exec "$bin" --port 0 --header-timeout 2 --max-seconds 120 ) >"$work/out" 2>"$work/err" &
server=$!
for _ in $(seq 100); do [[ -s $work/out ]] && break; sleep 0.1; done
read -r first <"$work/out"
echo "server: $first (ulimit -n 256)"
port=${first##*:}
port=${port%% *}

echo "--- 1. 300 half-sent heads, then a normal curl"
ulimit -n 1024  # this shell holds the 300 client sockets
slow=()
for _ in $(seq 300); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET / HTTP/1.1\r\nHost: slow\r\nX-Wait: ' >&"$fd"
  slow+=("$fd")
done
echo "300 slow clients connected and waiting"
start=$(date +%s%N)
curl -sS --max-time 20 -o /dev/null -w 'curl: HTTP %{http_code}' "http://127.0.0.1:$port/"
ms=$((($(date +%s%N) - start) / 1000000))
printf ' after %d.%01d s\n' $((ms / 1000)) $((ms % 1000 / 100))
timeout408=0
for fd in "${slow[@]}"; do
  if timeout 10 head -c 12 <&"$fd" | grep -q '408'; then timeout408=$((timeout408 + 1)); fi
  exec {fd}<&-
done
echo "slow clients answered 408 Request Timeout: $timeout408 of 300"

echo "--- 2. obs-fold smuggling"
exec {fd}<>"/dev/tcp/127.0.0.1/$port"
printf 'POST / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n Content-Length: 36\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n' >&"$fd"
reply=$(timeout 10 cat <&"$fd" | tr -d '\r')
exec {fd}<&-
echo "status line: $(head -1 <<<"$reply"); responses: $(grep -c '^HTTP/1.1' <<<"$reply")"

echo "--- 3. Expect: 100-continue with a 2 MB body, then a second request (--next)"
head -c 2000000 /dev/urandom >"$work/2MB"
curl -sS --max-time 20 -H 'Expect: 100-continue' --data-binary @"$work/2MB" "http://127.0.0.1:$port/" \
  -o /dev/null -w 'first:  HTTP %{http_code}, new connections: %{num_connects}\n' \
  --next --max-time 20 "http://127.0.0.1:$port/" -o /dev/null -w 'second: HTTP %{http_code}, new connections: %{num_connects}\n'

kill -TERM "$server"
wait "$server" 2>/dev/null || true
server=
echo "--- server stderr (first lines)"
head -5 "$work/err"
