#!/usr/bin/env bash
# Start (or reuse) a Docker engine for runbook's query sandbox, then print `export DOCKER_HOST=...`.
#
# Usage:  eval "$(scripts/docker-engine.sh)"        # engine state lives under $RUNBOOK_DOCKER_DIR (default /tmp/runbook-docker)
#         scripts/docker-engine.sh --stop           # stop the engine this script started
#
# The flags keep the host's network untouched: no iptables rules, no bridge, no forwarding. Containers then only
# have a loopback interface, and runbook still passes network_mode="none" to each one.
set -euo pipefail

W="${RUNBOOK_DOCKER_DIR:-/tmp/runbook-docker}"
SOCK="unix://$W/docker.sock"
log() { echo "docker-engine: $*" >&2; }

engine_answers() { DOCKER_HOST="$SOCK" docker info >/dev/null 2>&1; }

if [[ "${1:-}" == "--stop" ]]; then
  if [[ -f "$W/docker.pid" ]] && kill -0 "$(cat "$W/docker.pid")" 2>/dev/null; then
    kill "$(cat "$W/docker.pid")"; log "stopped dockerd $(cat "$W/docker.pid")"
  else
    log "no engine running under $W"
  fi
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  [[ $(id -u) -eq 0 ]] || { log "dockerd is missing; run as root (or: sudo apt-get install -y docker.io)"; exit 1; }
  log "installing docker.io from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q docker.io >&2
fi
# The docker CLI is what `docker info` and the build use; Debian's docker.io brings one if none is present.
command -v docker >/dev/null 2>&1 || { log "the docker CLI is missing: apt-get install -y docker.io"; exit 1; }

mkdir -p "$W"
if engine_answers; then
  log "reusing the engine already answering on $SOCK"
else
  # A stale pidfile from a crashed engine makes dockerd refuse to start; remove it only if its process is gone.
  if [[ -f "$W/docker.pid" ]] && ! kill -0 "$(cat "$W/docker.pid")" 2>/dev/null; then rm -f "$W/docker.pid"; fi
  log "starting dockerd (log: $W/dockerd.log)"
  # setsid detaches the engine from this shell so it outlives the caller (CI step, terminal).
  setsid dockerd --data-root "$W/data" --exec-root "$W/exec" --pidfile "$W/docker.pid" -H "$SOCK" \
    --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none --userland-proxy=false \
    >"$W/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 300); do   # up to 30 s; it usually answers in ~0.2 s
    engine_answers && break
    sleep 0.1
  done
  engine_answers || { log "dockerd did not answer within 30 s; see $W/dockerd.log:"; tail -20 "$W/dockerd.log" >&2; exit 1; }
  log "engine up"
fi
echo "export DOCKER_HOST=$SOCK"
