#!/usr/bin/env bash
# Create the benchmark's own virtualenv (default /tmp/bench-venv): this checkout, pure-ldp and
# multi-freq-ldpy from PyPI. The two libraries are never dependencies of the product.
# Usage: bash bench/utility/setup.sh [VENV_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${1:-/tmp/bench-venv}"
python="${PYTHON:-python3}"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e "$repo" -r "$here/requirements.txt"
"$venv/bin/python" -c "import pure_ldp, multi_freq_ldpy, survey; print('bench venv ready:', '$venv')"
echo "run: $venv/bin/python $here/run.py --quick"
