#!/usr/bin/env bash
# The head's PostgreSQL for MLflow (POSDESC_MLFLOW_DB=head): its own Docker service beside the Ray
# container, run by the head's initialization_commands on the host (outside the Ray container), so that
#   - its data lives in a host folder (POSDESC_PG_DATA, default /var/lib/posdesc-postgres) that outlives the
#     Ray container (`ray up --restart-only`, a crashed or replaced container) and a reboot of the head;
#   - Docker restarts it when it stops (`--restart unless-stopped`), the head's reboot included.
# It listens on 127.0.0.1:5432 of the head only (host network; the Ray container shares it), with trust
# authentication for that loopback address: nothing off the head can reach it. Safe to run again.
set -euo pipefail
DATA=${POSDESC_PG_DATA:-/var/lib/posdesc-postgres}
IMAGE=${POSDESC_PG_IMAGE:-postgres:16}
NAME=posdesc-postgres
DOCKER="docker"
$DOCKER info >/dev/null 2>&1 || DOCKER="sudo docker"
sudo mkdir -p "$DATA"
if $DOCKER inspect "$NAME" >/dev/null 2>&1; then
  $DOCKER start "$NAME" >/dev/null
else
  $DOCKER run -d --name "$NAME" --restart unless-stopped --network host \
    -v "$DATA:/var/lib/postgresql/data" \
    -e POSTGRES_DB=mlflow -e POSTGRES_HOST_AUTH_METHOD=trust \
    "$IMAGE" -c listen_addresses=127.0.0.1 -c port=5432 >/dev/null
fi
for _ in $(seq 60); do
  if $DOCKER exec "$NAME" pg_isready -h 127.0.0.1 -p 5432 -U postgres >/dev/null 2>&1; then
    echo "postgres_service: up on 127.0.0.1:5432 (data in $DATA, restart policy unless-stopped)"
    exit 0
  fi
  sleep 1
done
echo "postgres_service: PostgreSQL did not come up; docker logs $NAME:" >&2
$DOCKER logs --tail 20 "$NAME" >&2
exit 1
