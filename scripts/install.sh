#!/usr/bin/env bash
# Install runbook and what it needs on a fresh Debian/Ubuntu machine: ripgrep and bubblewrap (the daemon-less
# sandbox) from the system's packages, then the package itself with its test extras. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
missing=()
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# the bwrap sandbox runs the system's python3: Pillow there lets a query compare a question's image with screenshots
[[ -x /usr/bin/python3 ]] && ! /usr/bin/python3 -c "import PIL" 2>/dev/null && missing+=(python3-pil)
if ((${#missing[@]})) && command -v apt-get >/dev/null 2>&1; then
  echo "install.sh: installing ${missing[*]} from the system's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >&2
  $SUDO apt-get install -y -q "${missing[@]}" >&2
fi
python3 -m pip install -q --upgrade pip >&2 || true
# the ripgrep wheel must come prebuilt: its source build needs the Rust crate registry
python3 -m pip install -q --only-binary=ripgrep -e ".[test]" >&2
echo "install.sh: runbook $(python3 -c 'import runbook; print(runbook.__version__)') installed" >&2
