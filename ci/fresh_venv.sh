#!/usr/bin/env bash
# The README's two commands as a new user runs them: a fresh venv made from a base Python that
# holds only pip and its bundled setuptools (Python 3.11: setuptools 65.5, no `wheel`), the
# project installed into it with `pip install -e '.[dev]'`, then its test command. Nothing is
# installed into the base Python, and no test may depend on what it holds.
#
#   bash ci/fresh_venv.sh /path/to/python3.11                 # the whole suite: python3 -m pytest -q
#   bash ci/fresh_venv.sh /path/to/python3.11 tests/workflow/test_installed.py   # some tests
#
# The venv is made under $FRESH_VENV_DIR (default: a new temporary folder) and left there.
set -euo pipefail
base=${1:?usage: ci/fresh_venv.sh BASE_PYTHON [PYTEST_ARGS...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${FRESH_VENV_DIR:-$(mktemp -d)}/venv
unset PYTHONPATH PYTHONHOME  # the caller's checkout or environment must not leak in

echo "base: $("$base" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$base" -m venv "$venv"
echo "venv: $venv, before the install: $("$venv/bin/python" -m pip list 2>/dev/null \
  | grep -iE '^(setuptools|wheel) ' | tr -s ' ' | paste -sd ',' -)"
export PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv"  # as `source $venv/bin/activate` does
cd "$root"
python3 -m pip install -q -e '.[dev]'
python3 -m pytest -q "$@"
