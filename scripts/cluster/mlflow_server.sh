#!/usr/bin/env bash
# Start or stop the MLflow tracking server: runs in a database, artifacts proxied by the server to their
# destination (the S3 bucket on a cluster), so clients need no storage credentials.
#
#   mlflow_server.sh start | stop
#
# Settings (environment): POSDESC_MLFLOW_DB, where runs live: `head` = the head's PostgreSQL service
# (scripts/cluster/postgres_service.sh), a database URI (an external PostgreSQL such as RDS:
# postgresql://USER@HOST:5432/mlflow, its credential in ~/.pgpass), or unset = SQLite in
# POSDESC_MLFLOW_DIR (a single machine, the tests). POSDESC_MLFLOW_DIR (log, pid file and the SQLite
# database; default ~/mlflow),
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
    case "${POSDESC_MLFLOW_DB:-}" in
      "") BACKEND="sqlite:///$DIR/mlflow.db" ;;
      head) BACKEND="postgresql+psycopg2://postgres@127.0.0.1:5432/mlflow" ;;
      postgresql://*) BACKEND="postgresql+psycopg2://${POSDESC_MLFLOW_DB#postgresql://}" ;;
      *) BACKEND="$POSDESC_MLFLOW_DB" ;;
    esac
    # The job runner serves MLflow's GenAI features, which the project does not use.
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false} setsid mlflow server \
      --backend-store-uri "$BACKEND" \
      --artifacts-destination "$POSDESC_MLFLOW_ARTIFACTS" \
      --host "$HOST" --port "$PORT" --workers "${POSDESC_MLFLOW_WORKERS:-2}" \
      >"$DIR/server.log" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    for _ in $(seq 120); do
      if python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2)" \
        2>/dev/null; then
        echo "mlflow_server: up on $HOST:$PORT (pid $(cat "$PID_FILE"), store ${POSDESC_MLFLOW_DB:-$BACKEND})"
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
