#!/usr/bin/env bash
# A Redis Cluster of three masters on free loopback ports, in a directory of its own, for the
# tests (never the machine's Redis): Debian's redis-server in cluster mode.
# Usage: bash scripts/redis_cluster.sh start DIR   # prints the cluster's REDIS_URL
#        bash scripts/redis_cluster.sh stop DIR
set -euo pipefail

free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
# a node also listens on its port + 10000 (the cluster bus): keep both free
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

start() {
  local dir="$1" ports=() port nodes=()
  mkdir -p "$dir"
  while [ "${#ports[@]}" -lt 3 ]; do
    for port in $(free_ports 6); do
      [ "$port" -lt 55535 ] && [ "${#ports[@]}" -lt 3 ] && ports+=("$port")
    done
  done
  for port in "${ports[@]}"; do
    mkdir -p "$dir/$port"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$port" --daemonize yes \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --appendonly yes --appendfsync always --save "" \
      --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log"
    nodes+=("127.0.0.1:$port")
  done
  for port in "${ports[@]}"; do
    for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log"
  for _ in $(seq 1 100); do
    if redis-cli -p "${ports[0]}" cluster info | grep -q "cluster_state:ok"; then
      echo "redis+cluster://${nodes[0]},${nodes[1]},${nodes[2]}"
      return 0
    fi
    sleep 0.1
  done
  echo "the Redis Cluster in $dir did not come up" >&2
  return 1
}

stop() {
  local dir="$1" pidfile
  for pidfile in "$dir"/*/redis.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  rm -rf "$dir"
}

"$1" "$2"
