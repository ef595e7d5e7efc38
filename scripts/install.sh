#!/usr/bin/env bash
# Create .venv and install the project with its dev extras.
# On a machine without an NVIDIA GPU, install a CPU build of torch first, so that pip does not
# resolve `torch` to the multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
# system_package PACKAGE WHAT: install a system package the tests need from the system's packages (when
# this runs as root with apt-get), else say which test fails without it. The caller checks it is missing.
system_package() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install: $1 missing, installing it (apt-get install $1)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
  else
    echo "install: $1 not found and not root: $2 will fail; install the '$1' package" >&2
  fi
}
# PostgreSQL: the fault tests (tests/test_faults.py) start their own server, as the cluster's MLflow
# store runs on one.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  system_package postgresql "the PostgreSQL fault test"
fi
# Chromium: the browser test (tests/test_demo_report.py) opens the MLflow UI and the HTML report in it
# headless, as `make screenshots` does.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  system_package chromium "the browser test"
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
