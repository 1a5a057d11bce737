#!/usr/bin/env bash
# Creates the project's virtual environment from nothing but the package registries.
#   tools/make_env.sh PYTHON VENV_DIR
# The environment is complete only when VENV_DIR/.complete exists; a partial one is rebuilt.
set -euo pipefail
py="${1:-python3.11}"
venv="${2:-.venv}"
here="$(cd "$(dirname "$0")/.." && pwd)"

if ! command -v "$py" >/dev/null 2>&1; then
  echo "make_env: no '$py' on PATH. federated_vision needs Python 3.11 (TensorFlow 2.14 / TFF 0.87.0);" >&2
  echo "make_env: install it or run 'make PYTHON=/path/to/python3.11 ...'." >&2
  exit 2
fi
ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$ver" != "3.11" ]; then
  echo "make_env: '$py' is Python $ver, but federated_vision needs Python 3.11 (TensorFlow 2.14 / TFF 0.87.0 have no wheels for $ver)." >&2
  echo "make_env: run 'make PYTHON=/path/to/python3.11 ...'." >&2
  exit 2
fi

if [ -d "$venv" ] && [ ! -f "$venv/.complete" ]; then
  echo "make_env: removing incomplete environment $venv"
  rm -rf "$venv"
fi
if [ -f "$venv/.complete" ]; then
  exit 0
fi

echo "make_env: creating $venv with $py ($ver)"
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
quiet() {  # Drops this machine's noisy "Location ... is ignored" pip warnings, keeps the status.
  "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  return "${PIPESTATUS[0]}"
}
# The lock pins every package; --no-deps keeps pip from "upgrading" around its known conflicts.
# pip freeze leaves out the build tools; they are pinned here.
quiet "${pip[@]}" install --no-deps "setuptools==69.5.1" "wheel==0.42.0"
quiet "${pip[@]}" install --no-deps -r "$here/requirements.lock"
quiet "${pip[@]}" install --no-deps "tensorflow-federated==0.87.0"
quiet "${pip[@]}" install --no-deps --no-build-isolation -e "$here"
"$venv/bin/python" - <<'PY'
import importlib, sys
from federated_vision import runtime
runtime.install(signal_handlers=False)  # Managed TFF context; TFF's import-time one retired at exit.
for mod in ("tensorflow", "tensorflow_federated", "tensorflow_datasets", "s2sphere",
            "sklearn", "matplotlib", "absl", "federated_vision"):
    importlib.import_module(mod)
import tensorflow as tf, tensorflow_federated as tff
assert tf.__version__.startswith("2.14."), tf.__version__
assert tff.__version__ == "0.87.0", tff.__version__
print("make_env: environment OK (tensorflow %s, tensorflow-federated %s)" % (tf.__version__, tff.__version__))
PY
touch "$venv/.complete"
