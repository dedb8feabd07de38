#!/usr/bin/env bash
# Install runbook and what it needs on a fresh Debian/Ubuntu machine: ripgrep, bubblewrap (the daemon-less
# sandbox) and debootstrap (the offline image build) from the system's packages, then the package itself with
# its test extras. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
missing=()
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# with no image registry reachable, the docker sandbox's image is built from Debian packages with debootstrap
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
# the bwrap sandbox runs the system's python3: Pillow there lets a query compare a question's image with screenshots
[[ -x /usr/bin/python3 ]] && ! /usr/bin/python3 -c "import PIL" 2>/dev/null && missing+=(python3-pil)
# ... and numpy there lets the `recall` tool read method R's pools
[[ -x /usr/bin/python3 ]] && ! /usr/bin/python3 -c "import numpy" 2>/dev/null && missing+=(python3-numpy)
if ((${#missing[@]})) && command -v apt-get >/dev/null 2>&1; then
  echo "install.sh: installing ${missing[*]} from the system's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >&2
  $SUDO apt-get install -y -q "${missing[@]}" >&2
fi
python3 -m pip install -q --upgrade pip >&2 || true
python3 -m pip install -q -e ".[test]" >&2
echo "install.sh: runbook $(python3 -c 'import runbook; print(runbook.__version__)') installed" >&2
