#!/usr/bin/env bash
# The same over plain HTTP with curl: open a trajectory, post each recorded step as it is, close it.
#   bash docs/examples/stream_steps.sh docs/examples/browser_use_steps.json http://127.0.0.1:8765
set -euo pipefail
steps=$1
url=${2:-http://127.0.0.1:8765}
id="curl-run-$$"
curl -sS --fail-with-body "$url/trajectories" -H 'Content-Type: application/json' -d "{\"id\": \"$id\", \"stream\": true, \"goal\": \"an example run\"}"
echo
python3 -c 'import json, sys; [print(json.dumps(s)) for s in json.load(open(sys.argv[1]))]' "$steps" |
while read -r step; do
    curl -sS --fail-with-body "$url/trajectories/$id/states" -H 'Content-Type: application/json' -d "$step"
    echo
done
curl -sS --fail-with-body -X POST "$url/trajectories/$id/close" -H 'Content-Type: application/json' -d '{"outcome": "success (reward 1.0)"}'
echo
