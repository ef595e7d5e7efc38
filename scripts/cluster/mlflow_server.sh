#!/usr/bin/env bash
# Start or stop the MLflow tracking server: SQLite backend in a local folder, artifacts proxied by the
# server to their destination (the S3 bucket on a cluster), so clients need no storage credentials.
#
#   mlflow_server.sh start | stop
#
# Settings (environment): POSDESC_MLFLOW_DIR (database, log and pid file; default ~/mlflow),
# POSDESC_MLFLOW_ARTIFACTS (default $POSDESC_BUCKET/mlflow-artifacts from ~/.posdesc_env),
# POSDESC_MLFLOW_HOST (default 0.0.0.0: the cluster's private network; the security group keeps it off the
# internet), POSDESC_MLFLOW_PORT (5000), POSDESC_MLFLOW_WORKERS (2).
# The server runs in its own process session, so `stop` ends it and all its workers together.
set -euo pipefail
ACTION=${1:?usage: mlflow_server.sh start|stop}
if [[ -z "${POSDESC_MLFLOW_ARTIFACTS:-}" && -f "$HOME/.posdesc_env" ]]; then
  # shellcheck source=/dev/null
  source "$HOME/.posdesc_env"
fi
DIR=${POSDESC_MLFLOW_DIR:-$HOME/mlflow}
HOST=${POSDESC_MLFLOW_HOST:-0.0.0.0}
PORT=${POSDESC_MLFLOW_PORT:-5000}
PID_FILE=$DIR/server.pid

stop() {
  if [[ -f "$PID_FILE" ]]; then
    local pid
    pid=$(cat "$PID_FILE")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$PID_FILE"
  fi
}

case "$ACTION" in
  stop) stop ;;
  start)
    : "${POSDESC_MLFLOW_ARTIFACTS:?set POSDESC_MLFLOW_ARTIFACTS (or run setup_node.sh first)}"
    stop
    mkdir -p "$DIR"
    # The job runner serves MLflow's GenAI features, which the project does not use.
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false} setsid mlflow server \
      --backend-store-uri "sqlite:///$DIR/mlflow.db" \
      --artifacts-destination "$POSDESC_MLFLOW_ARTIFACTS" \
      --host "$HOST" --port "$PORT" --workers "${POSDESC_MLFLOW_WORKERS:-2}" \
      >"$DIR/server.log" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    for _ in $(seq 120); do
      if python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2)" \
        2>/dev/null; then
        echo "mlflow_server: up on $HOST:$PORT (pid $(cat "$PID_FILE"), store $DIR/mlflow.db)"
        exit 0
      fi
      kill -0 "$(cat "$PID_FILE")" 2>/dev/null || break
      sleep 0.5
    done
    echo "mlflow_server: did not come up on port $PORT; its log, $DIR/server.log, ends with:" >&2
    tail -n 20 "$DIR/server.log" >&2
    stop
    exit 1
    ;;
  *) echo "usage: mlflow_server.sh start|stop (got '$ACTION')" >&2; exit 2 ;;
esac
