#!/usr/bin/env bash
# Create .venv and install the project with its dev extras.
# On a machine without an NVIDIA GPU, install a CPU build of torch first, so that pip does not
# resolve `torch` to the multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
# PostgreSQL: the fault tests (tests/test_faults.py) start their own server, as the cluster's MLflow
# store runs on one. Installed from the system's packages when missing and this runs as root.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install: PostgreSQL missing, installing it (apt-get install postgresql)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "install: PostgreSQL not found and not root: the PostgreSQL fault test will fail;" \
      "install the 'postgresql' package" >&2
  fi
fi
# Chromium: the browser test (tests/test_demo_report.py) opens the MLflow UI and the HTML report in it
# headless, as `make screenshots` does. Installed from the system's packages when missing and this runs
# as root.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install: Chromium missing, installing it (apt-get install chromium)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "install: Chromium not found and not root: the browser test will fail;" \
      "install the 'chromium' package" >&2
  fi
fi
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
$PIP install -q --upgrade pip
if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "install: NVIDIA GPU found, installing the default (CUDA) torch build"
  else
    echo "install: no NVIDIA GPU, installing a CPU build of torch"
    $PIP install -q "torch==2.13.0+cpu" 2>/dev/null \
      || $PIP install -q --index-url https://download.pytorch.org/whl/cpu "torch<=2.14.1" 2>/dev/null \
      || { echo "install: no CPU wheel found, falling back to PyPI's torch"; $PIP install -q "torch<=2.14.1"; }
  fi
fi
$PIP install -q -e ".[dev]"
"$VENV/bin/python" -c 'import torch, transformers, ray, mlflow; print(f"install: torch {torch.__version__}, transformers {transformers.__version__}, ray {ray.__version__}, mlflow {mlflow.__version__}")'
