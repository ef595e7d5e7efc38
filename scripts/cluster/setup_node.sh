#!/usr/bin/env bash
# Prepare one cluster node (run by `ray up` on every node, inside the rayproject/ray container):
# write the environment every Ray process of the node inherits, then install the project with its pinned
# dependencies on top of the image's Python and Ray. Safe to run again (`ray up` reruns it on changes).
set -euo pipefail
REPO=${POSDESC_REPO:-$HOME/posdesc}
ENV_FILE=$HOME/.posdesc_env

# shellcheck source=/dev/null
source "$HOME/.posdesc_bucket"  # POSDESC_BUCKET and POSDESC_MLFLOW_DB, from cluster.yaml's first setup command
if [[ -z "${POSDESC_BUCKET:-}" || "$POSDESC_BUCKET" == *CHANGE-ME* ]]; then
  echo "setup_node: set your S3 bucket in cluster.yaml (the POSDESC_BUCKET line near the top)" >&2
  exit 1
fi
if [[ ! -s "$HOME/.ray/auth_token" ]]; then
  echo "setup_node: no Ray auth token on this node; run 'ray get-auth-token --generate' on your machine," \
    "then 'ray up cluster.yaml' again (file_mounts copies ~/.ray/auth_token)" >&2
  exit 1
fi

# Workers get the head's address from the launcher; on the head it is this node's private address.
HEAD_IP=${RAY_HEAD_IP:-$(hostname -I 2>/dev/null | awk '{print $1}')}
HEAD_IP=${HEAD_IP:-$(python -c 'import ray.util; print(ray.util.get_node_ip_address())')}
cat > "$ENV_FILE" <<ENV
export POSDESC_BUCKET=$POSDESC_BUCKET
export POSDESC_STORAGE_PATH=$POSDESC_BUCKET/ray_results
export POSDESC_MLFLOW_ARTIFACTS=$POSDESC_BUCKET/mlflow-artifacts
export POSDESC_MLFLOW_DB=${POSDESC_MLFLOW_DB:-head}
export MLFLOW_TRACKING_URI=http://$HEAD_IP:5000
export RAY_AUTH_MODE=token
# sweeps/run.py (started by `ray submit` on the head) joins this cluster instead of starting a local Ray
export RAY_ADDRESS=$HEAD_IP:6379
ENV
grep -qs 'posdesc_env' "$HOME/.bashrc" || echo "source $ENV_FILE" >> "$HOME/.bashrc"

# torch: the CUDA build (PyPI's default Linux wheel) where there is a GPU, the CPU build elsewhere; the
# version range is pyproject.toml's, so every node resolves what the project's own install resolves.
TORCH_SPEC=$(python - "$REPO/pyproject.toml" <<'PY'
import sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
print(next(d for d in deps if d.startswith("torch")))
PY
)
if nvidia-smi -L >/dev/null 2>&1; then
  pip install -q "$TORCH_SPEC"
else
  pip install -q --index-url https://download.pytorch.org/whl/cpu "$TORCH_SPEC"
fi
pip install -q -e "$REPO"
python -c 'import torch, ray, mlflow, transformers; print(f"setup_node: torch {torch.__version__} (cuda={torch.cuda.is_available()}), ray {ray.__version__}, mlflow {mlflow.__version__}, transformers {transformers.__version__}")'
