#!/usr/bin/env bash
# The newcomer's path, checked: a fresh virtual environment, a plain `pip install .` (no flags, no extras), then
# `runbook insert` of the sample and one query with each method, run from outside the checkout so that only the
# installed package (its programs and Dockerfile as package data) is used. Method C needs a sandbox: a Docker engine
# (DOCKER_HOST) or bubblewrap.
#
# Usage: bash scripts/check-fresh-install.sh [VENV_DIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$(mktemp -d /tmp/runbook-fresh-XXXXXX)/venv}"
work="$(mktemp -d /tmp/runbook-fresh-work-XXXXXX)"
trap 'rm -rf "$work"' EXIT

# the lowest Python the package declares (requires-python), so a newer interpreter cannot hide an import it lacks
lowest="$(sed -n 's/^requires-python = ">=\([0-9.]*\)"/\1/p' "$repo/pyproject.toml")"
python="$(command -v "python$lowest" || command -v python3)"
have="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[[ "$have" == "$lowest" ]] || { echo "fresh-install: python $lowest (requires-python) is not installed; $python is $have" >&2; exit 1; }
echo "fresh-install: $python ($have, the lowest declared) -m venv $venv" >&2
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >&2
echo "fresh-install: pip install $repo" >&2
"$venv/bin/python" -m pip install -q "$repo" >&2

cd "$work"   # not the checkout: `import runbook` must find the installed package
rb() { "$venv/bin/runbook" --store "$work/store" "$@"; }
installed="$("$venv/bin/python" -c 'import runbook, os; print(os.path.dirname(runbook.__file__))')"
case "$installed" in "$repo"*) echo "fresh-install: runbook imported from the checkout ($installed)" >&2; exit 1;; esac

rb insert "$repo/trajectories/"
rb stats
question="What must be set before the Bestsellers report shows any data?"
runs=("r" "bm25" "c")
command -v bwrap >/dev/null 2>&1 && runs+=("c --sandbox bwrap")
for run in "${runs[@]}"; do
  echo "fresh-install: query --method $run" >&2
  # shellcheck disable=SC2086  # $run holds the method and its options
  rb query "$question" --budget 2k --method $run --json > "$work/result.json"
  "$venv/bin/python" - "$work/result.json" "$run" <<'EOF'
import json, sys
result = json.load(open(sys.argv[1]))
items = result["items"]
assert items, f"method {sys.argv[2]} returned no evidence"
assert result["tokens"] <= result["budget"], result
print(f"fresh-install: method {sys.argv[2]}: {len(items)} items, {result['tokens']} of {result['budget']} tokens, "
      f"{result['latency_s']:.2f} s", file=sys.stderr)
EOF
done

# the bench on a Ray cluster is an extra: without it, `--ray` says how to get it (exit 1) and the bench runs here
"$venv/bin/runbook" generate "$work/gen" --trajectories 6 --no-screenshots >/dev/null
printf 'name = "fresh"\nquestions = ["%s"]\n[[methods]]\nlabel = "R"\nmethod = "r"\n' "$work/gen" > "$work/bench.toml"
if "$venv/bin/runbook" bench run "$work/bench.toml" --ray > "$work/ray.out" 2>&1; then
  echo "fresh-install: bench run --ray succeeded without the ray extra" >&2; exit 1
fi
grep -q "pip install 'runbook\[ray\]'" "$work/ray.out" || { cat "$work/ray.out" >&2; exit 1; }
"$venv/bin/runbook" bench run "$work/bench.toml" --limit 3 >/dev/null
echo "fresh-install: bench run --ray names the extra; bench run without it works" >&2
echo "fresh-install: ok" >&2
