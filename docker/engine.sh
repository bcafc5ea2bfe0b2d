#!/usr/bin/env bash
# A container engine on demand, for the testcontainers tests and docker/compose.yaml.
#
# - A Docker engine already answers (DOCKER_HOST, or /var/run/docker.sock): nothing is changed.
# - Otherwise, as root on Debian/Ubuntu: podman + runc are installed from the distribution's
#   packages if missing (and debootstrap, which builds the images: docker/images/build.py), /etc/containers/containers.conf gets the settings this kind of machine
#   needs (written only when the file does not exist), and `podman system service` serves the
#   Docker API on unix:///run/podman/podman.sock.
# Prints one line saying what it did and exits 0 when an engine answers, 1 when none can be had
# (the suite then runs on the JVM-process broker). The socket it serves is where
# integration_tests/providers.py looks when DOCKER_HOST is unset.
set -uo pipefail

PODMAN_SOCK=/run/podman/podman.sock
CONF=/etc/containers/containers.conf
LOG=/run/podman/service.log

answers() {  # $1 = path of a unix socket speaking the Docker API
  [ -S "$1" ] && curl -sf --max-time 3 --unix-socket "$1" http://d/_ping >/dev/null 2>&1
}

say() { echo "container engine: $*"; }

if [ -n "${DOCKER_HOST:-}" ] && answers "${DOCKER_HOST#unix://}"; then
  say "$DOCKER_HOST answers; nothing changed"; exit 0
fi
if answers /var/run/docker.sock; then
  say "unix:///var/run/docker.sock answers; nothing changed"; exit 0
fi
if answers "$PODMAN_SOCK"; then
  say "podman's Docker API already serves unix://$PODMAN_SOCK; nothing changed"; exit 0
fi

did=()
if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v curl >/dev/null \
   || ! command -v debootstrap >/dev/null; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "none (no Docker engine, no podman, and installing one needs root and apt-get)"; exit 1
  fi
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc curl debootstrap; } >/tmp/kafka-eos-engine-apt.log 2>&1; then
    say "none (apt-get install podman runc failed; see /tmp/kafka-eos-engine-apt.log)"; exit 1
  fi
  did+=("installed podman $(podman --version | awk '{print $3}') + runc + debootstrap (builds the images)")
fi

if [ ! -e "$CONF" ]; then
  # crun refuses hybrid cgroup v1/v2 hierarchies and setting RLIMIT_NPROC/NOFILE is not permitted
  # in this kind of VM: runc, cgroupfs and no default ulimits work everywhere podman does.
  mkdir -p "$(dirname "$CONF")"
  cat >"$CONF" <<'EOF'
# written by kafka-eos docker/engine.sh
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  did+=("wrote $CONF")
fi

mkdir -p "$(dirname "$PODMAN_SOCK")"
setsid nohup podman system service --time=0 "unix://$PODMAN_SOCK" >"$LOG" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  answers "$PODMAN_SOCK" && break
  sleep 0.5
done
if ! answers "$PODMAN_SOCK"; then
  say "none (podman system service did not answer on $PODMAN_SOCK; see $LOG)"; exit 1
fi
did+=("started podman's Docker API on unix://$PODMAN_SOCK (pid $!)")
say "$(IFS=';'; echo "${did[*]}" | sed 's/;/; /g')"
