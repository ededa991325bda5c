#!/usr/bin/env bash
# Prepare a real Docker engine for the docker end-to-end tests (test/docker/), idempotently, on a
# Debian 12 machine without internet access apart from Debian's package mirrors. Run as root.
#   - docker.io, docker-registry, busybox-static from bookworm
#   - the Compose v2 plugin, taken from trixie's docker-compose package (a static Go binary)
#   - dockerd started by hand (no systemd) and waited for
#   - a local registry on 127.0.0.1:5000 with storage in a temp dir
#   - the base image stackgen-test/busybox:latest (FROM scratch + busybox-static)
set -euo pipefail

log() { echo "[setup-docker] $*" >&2; }

if [ "$(id -u)" != 0 ]; then
  echo "setup-docker.sh must run as root" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# 1. Debian packages.
missing=()
for pkg in docker.io docker-registry busybox-static; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. Compose v2 plugin (bookworm only has compose v1). Any docker CLI on PATH finds it here.
plugin_dir=/usr/libexec/docker/cli-plugins
if ! docker compose version >/dev/null 2>&1; then
  log "fetching docker-compose v2 from trixie"
  work=$(mktemp -d)
  chmod 755 "$work"  # apt downloads as user _apt
  echo 'deb http://deb.debian.org/debian trixie main' > "$work/trixie.list"
  mkdir -p "$work/lists/partial"
  apt_opts=(-o "Dir::Etc::sourcelist=$work/trixie.list" -o Dir::Etc::sourceparts=/dev/null
            -o "Dir::State::Lists=$work/lists")
  apt-get "${apt_opts[@]}" update -qq
  (cd "$work" && apt-get "${apt_opts[@]}" download docker-compose >/dev/null)
  dpkg -x "$work"/docker-compose_*.deb "$work/pkg"
  mkdir -p "$plugin_dir"
  install -m 0755 "$work/pkg/usr/libexec/docker/cli-plugins/docker-compose" "$plugin_dir/docker-compose"
  rm -rf "$work"
fi
docker compose version >&2

# 3. The engine.
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  (setsid dockerd >/tmp/dockerd.log 2>&1 < /dev/null &)
  for _ in $(seq 90); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    log "dockerd did not come up; last log lines:"
    tail -n 30 /tmp/dockerd.log >&2 || true
    exit 1
  fi
fi
log "engine $(docker version --format '{{.Server.Version}}')"

# 4. Local registry on 127.0.0.1:5000 (the engine treats 127.0.0.0/8 registries as insecure).
registry_up() { curl -fsS -o /dev/null http://127.0.0.1:5000/v2/ 2>/dev/null || \
  (exec 3<>/dev/tcp/127.0.0.1/5000) 2>/dev/null; }
if ! registry_up; then
  log "starting local registry on 127.0.0.1:5000"
  storage=$(mktemp -d /tmp/stackgen-registry.XXXXXX)
  cat > "$storage.yml" <<YML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:5000
YML
  (setsid docker-registry serve "$storage.yml" >/tmp/stackgen-registry.log 2>&1 < /dev/null &)
  for _ in $(seq 30); do
    registry_up && break
    sleep 1
  done
  registry_up || { log "registry did not start"; tail -n 20 /tmp/stackgen-registry.log >&2; exit 1; }
fi

# 5. Base image: busybox-static in an otherwise empty image.
base=stackgen-test/busybox:latest
if ! docker image inspect "$base" >/dev/null 2>&1; then
  log "building $base"
  ctx=$(mktemp -d)
  cp /bin/busybox "$ctx/busybox"
  printf 'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox","--install","-s","/bin"]\nCMD ["sleep","3600"]\n' > "$ctx/Dockerfile"
  docker build -q -t "$base" "$ctx" >/dev/null
  rm -rf "$ctx"
fi
log "ready: engine, compose v2, registry 127.0.0.1:5000, image $base"
