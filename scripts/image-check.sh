#!/usr/bin/env bash
# `npm run image:check`: builds the Docker image and checks it as production runs it: a
# read-only root filesystem with a /data volume. Needs a Docker daemon, so it is not part of
# `npm test` (docs/testing.md#the-docker-image). Exits non-zero naming the first check that fails.
#
#   1. build (IMAGE, default medmmv:image-check; extra `docker build` arguments in BUILD_ARGS)
#   2. `--help` in a --read-only container: under 300 ms of Node's own time (HELP_BUDGET_MS)
#   3. `serve` --read-only with a volume: /healthz answers 200 within 2 s of the start (HEALTHZ_BUDGET_MS)
#   4. the demo --read-only into the volume: exit 0, its results in /data/out
#   5. the demo under an arbitrary uid in group 0 (OpenShift) into a fresh volume: exit 0
#   6. the demo into a read-only /data: exit 2 with the clear message, no raw EACCES/EROFS
#   7. stop and remove what it started
#
# RUN_NETWORK=host runs the containers on the host's network (a daemon started without a
# bridge, `dockerd --bridge=none`); serve then listens on a free loopback port of the host.
set -euo pipefail

IMAGE="${IMAGE:-medmmv:image-check}"
HELP_BUDGET_MS="${HELP_BUDGET_MS:-300}"
HEALTHZ_BUDGET_MS="${HEALTHZ_BUDGET_MS:-2000}"
RUN_ID="medmmv-check-$$"
VOLUME="$RUN_ID-data"
VOLUME_GROUP0="$RUN_ID-group0"
CONTAINER="$RUN_ID-serve"
cd "$(dirname "$0")/.."

now_ms() { date +%s%3N; }
NET=()
[ "${RUN_NETWORK:-}" = "" ] || NET=(--network "$RUN_NETWORK")
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'image:check FAILED: %s\n' "$*" >&2; exit 1; }
cleanup() {
  docker rm -f "$CONTAINER" >/dev/null 2>&1 || true
  docker volume rm -f "$VOLUME" "$VOLUME_GROUP0" >/dev/null 2>&1 || true
}
trap cleanup EXIT

docker info >/dev/null 2>&1 || fail "no Docker daemon answers (docker info); start one, or set DOCKER_HOST"

step "1. build $IMAGE"
if [ -n "${SKIP_BUILD:-}" ]; then
  echo "SKIP_BUILD: checking the existing $IMAGE"
else
  # shellcheck disable=SC2086
  docker build ${BUILD_ARGS:-} -t "$IMAGE" .
fi
docker image inspect "$IMAGE" --format 'size: {{.Size}} bytes, user: {{.Config.User}}'
[ "$(docker image inspect "$IMAGE" --format '{{.Config.User}}')" = "node" ] || fail "the image does not run as node"
docker volume create "$VOLUME" >/dev/null

step "2. --help, read-only"
# Node's own time inside the container (the container's start is the runtime's, not ours), then the whole run.
help_ms=$(docker run "${NET[@]}" --rm --read-only -v "$VOLUME:/data" --entrypoint sh "$IMAGE" -c \
  's=$(date +%s%3N); node /app/bin/medmmv.js --help >/dev/null || exit 3; e=$(date +%s%3N); echo $((e - s))') || fail "--help failed in a read-only container"
t0=$(now_ms); docker run "${NET[@]}" --rm --read-only -v "$VOLUME:/data" "$IMAGE" --help >/dev/null; t1=$(now_ms)
echo "--help: ${help_ms} ms in the container (budget ${HELP_BUDGET_MS} ms); $((t1 - t0)) ms for the whole docker run"
[ "$help_ms" -lt "$HELP_BUDGET_MS" ] || fail "--help took ${help_ms} ms (budget ${HELP_BUDGET_MS} ms): is the CLI bundle in the image?"

step "3. serve, read-only, with a volume: /healthz"
KEY="image-check-key-$(date +%s%N)-0123456789abcdef"
t0=$(now_ms)
if [ "${RUN_NETWORK:-}" = "host" ]; then
  port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  docker run -d --name "$CONTAINER" --network host --read-only -v "$VOLUME:/data" -e HOST=127.0.0.1 -e PORT="$port" -e MEDMMV_API_KEYS="$KEY" "$IMAGE" serve >/dev/null
else
  docker run -d --name "$CONTAINER" "${NET[@]}" --read-only -v "$VOLUME:/data" -p 127.0.0.1::8787 -e MEDMMV_API_KEYS="$KEY" "$IMAGE" serve >/dev/null
  port=$(docker port "$CONTAINER" 8787/tcp | head -n1 | sed 's/.*://')
fi
healthy=""
deadline=$(( $(now_ms) + 30000 ))
while [ "$(now_ms)" -lt "$deadline" ]; do
  if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then healthy=$(now_ms); break; fi
  [ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER")" = "true" ] || { docker logs "$CONTAINER" >&2; fail "serve exited"; }
  sleep 0.05
done
[ -n "$healthy" ] || { docker logs "$CONTAINER" >&2; fail "/healthz never answered within 30 s"; }
# From the container's start (the runtime's own setup, e.g. a vfs storage driver copying the
# image, is not the image's), and from `docker run` for the whole picture.
started=$(date -d "$(docker inspect -f '{{.State.StartedAt}}' "$CONTAINER")" +%s%3N)
healthz_ms=$((healthy - started))
echo "/healthz: 200 after ${healthz_ms} ms from the container's start (budget ${HEALTHZ_BUDGET_MS} ms); $((healthy - t0)) ms from docker run"
if docker logs "$CONTAINER" 2>&1 | grep -q "tsx"; then fail "serve mentions tsx: it is not running from the bundle"; fi
docker stop -t 20 "$CONTAINER" >/dev/null
[ "$healthz_ms" -lt "$HEALTHZ_BUDGET_MS" ] || fail "/healthz took ${healthz_ms} ms (budget ${HEALTHZ_BUDGET_MS} ms)"

step "4. the demo, read-only, into the volume"
docker run "${NET[@]}" --rm --read-only -v "$VOLUME:/data" "$IMAGE" demo --out /data/out/demo-result.json >/dev/null || fail "the demo failed in a read-only container"
docker run "${NET[@]}" --rm --read-only -v "$VOLUME:/data" --entrypoint ls "$IMAGE" /data/out | grep -qx demo-result.json || fail "the demo wrote no /data/out/demo-result.json"
echo "demo: results in the volume"

step "5. the demo as an arbitrary uid in group 0 (OpenShift), into a fresh volume"
docker run "${NET[@]}" --rm --read-only --user 1000770000:0 -v "$VOLUME_GROUP0:/data" "$IMAGE" demo --out /data/out/demo-result.json >/dev/null || fail "uid 1000770000 in group 0 cannot write /data"
echo "demo: ok as uid 1000770000, gid 0"

step "6. the demo into a read-only /data: the clear message"
set +e
out=$(docker run "${NET[@]}" --rm --read-only -v "$VOLUME:/data:ro" "$IMAGE" demo --out /data/out/demo-result.json 2>&1)
code=$?
set -e
echo "$out" | tail -n 3
[ "$code" -eq 2 ] || fail "expected exit 2 for an unwritable /data, got $code"
echo "$out" | grep -q "cannot write the demo's results to /data/out" || fail "no clear message for an unwritable /data"
if echo "$out" | grep -Eq "^(Error|.*at .*\(node:)|EACCES:|EROFS:"; then fail "a raw error reached the user"; fi

step "7. done"
echo "image:check passed: --help ${help_ms} ms, /healthz ${healthz_ms} ms, demo read-only, group 0, clear message"
