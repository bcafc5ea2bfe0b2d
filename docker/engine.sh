#!/usr/bin/env bash
# A container engine on demand, for the testcontainers tests and docker/compose.yaml.
#
# - DOCKER_HOST=tcp://host:port (TLS when DOCKER_TLS_VERIFY is set, certificates in
#   DOCKER_CERT_PATH): used as it is; exit 0 when it answers, 1 when not. Nothing is changed.
# - A Docker engine already answers (DOCKER_HOST=unix://..., or /var/run/docker.sock): nothing is
#   changed.
# - A podman service answering on the socket (DOCKER_HOST's unix path, else
#   /run/podman/podman.sock) must also start a container (`true` in a local image): one that
#   answers its ping but cannot (seen: "write child: broken pipe" after the process that started
#   it was killed) is restarted when this script started it, else reported.
# - Otherwise, as root on Debian/Ubuntu: podman + runc are installed from the distribution's
#   packages if missing (and debootstrap, which builds the images: docker/images/build.py),
#   /etc/containers/containers.conf gets the settings this kind of machine needs (written only
#   when the file does not exist), and `podman system service` serves the Docker API on the socket
#   (its pid in <socket>.pid, its log in <socket>.log).
# Prints one line saying what it did and exits 0 when an engine answers, 1 when none can be had
# (the suite then runs on the JVM-process broker). The default socket is where
# integration_tests/broker_containers.py looks when DOCKER_HOST is unset.
set -uo pipefail

DOCKER_SOCK=/var/run/docker.sock
CONF=/etc/containers/containers.conf
case "${DOCKER_HOST:-}" in
  unix://*) SOCK=${DOCKER_HOST#unix://} ;;
  *) SOCK=/run/podman/podman.sock ;;
esac
PIDFILE="$SOCK.pid"
LOG="$SOCK.log"

say() { echo "container engine: $*"; }

ping_unix() {  # $1 = unix socket; prints the response headers when it answers
  [ -S "$1" ] && curl -sfi --max-time 3 --unix-socket "$1" http://d/_ping 2>/dev/null
}

ping_tcp() {  # $1 = host:port
  local certs=${DOCKER_CERT_PATH:-$HOME/.docker}
  if [ -n "${DOCKER_TLS_VERIFY:-}" ]; then
    curl -sf --max-time 3 --cacert "$certs/ca.pem" --cert "$certs/cert.pem" --key "$certs/key.pem" \
      "https://$1/_ping" >/dev/null 2>&1
  else
    curl -sf --max-time 3 "http://$1/_ping" >/dev/null 2>&1
  fi
}

is_podman() { ping_unix "$1" | grep -qi '^libpod-api-version'; }

try_start() {  # $1 = podman socket; prints what a real container start gave; fails when it failed
  local remote=(podman --remote --url "unix://$1") images image out
  if ! images=$(timeout 60 "${remote[@]}" images --format '{{.Repository}}:{{.Tag}}' 2>&1); then
    echo "${images##*$'\n'}"; return 1
  fi
  images=$(grep -v '<none>' <<<"$images")
  image=$(grep -m1 kafka-eos-base <<<"$images" || head -1 <<<"$images")
  if [ -z "$image" ]; then echo "no local image to try a container start with"; return 0; fi
  if out=$(timeout 60 "${remote[@]}" run --rm --pull=never --network=none --entrypoint /bin/true "$image" 2>&1); then
    echo "a container started"; return 0
  fi
  echo "${out##*$'\n'}"; return 1
}

ours() {  # $1 = socket; prints the pid of the podman service this script started on it
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) && [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$1" \
    && { echo "$pid"; return 0; }
  pgrep -f -x "podman system service --time=0 unix://$1" | head -1 | grep .   # started before the pid file
}

stop_ours() {  # $1 = pid
  kill "$1" 2>/dev/null
  for _ in $(seq 1 20); do kill -0 "$1" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$1" 2>/dev/null
  rm -f "$SOCK" "$PIDFILE"
}

case "${DOCKER_HOST:-}" in
  tcp://*)
    if ping_tcp "${DOCKER_HOST#tcp://}"; then say "$DOCKER_HOST answers; nothing changed"; exit 0; fi
    say "none ($DOCKER_HOST does not answer; this script serves podman on unix sockets only: unset DOCKER_HOST or point it at unix://...)"
    exit 1 ;;
  ""|unix://*) ;;
  *) say "none (DOCKER_HOST=$DOCKER_HOST: only unix:// and tcp:// are supported here)"; exit 1 ;;
esac

did=()
if [ -z "${DOCKER_HOST:-}" ] && ping_unix "$DOCKER_SOCK" >/dev/null; then
  say "unix://$DOCKER_SOCK answers; nothing changed"; exit 0
fi
if ping_unix "$SOCK" >/dev/null; then
  if ! is_podman "$SOCK"; then say "unix://$SOCK answers; nothing changed"; exit 0; fi
  if why=$(try_start "$SOCK"); then
    say "podman's Docker API already serves unix://$SOCK ($why); nothing changed"; exit 0
  fi
  if ! pid=$(ours "$SOCK"); then
    say "none (podman on unix://$SOCK answers but cannot start a container: $why; this script did not start it: restart it)"
    exit 1
  fi
  stop_ours "$pid"
  did+=("stopped podman's service on unix://$SOCK (pid $pid): it answered but could not start a container ($why)")
elif [ "$SOCK" = "$DOCKER_SOCK" ]; then
  say "none (DOCKER_HOST=$DOCKER_HOST does not answer: start Docker, or unset DOCKER_HOST for podman)"; exit 1
elif pid=$(ours "$SOCK"); then
  stop_ours "$pid"
  did+=("stopped podman's service on unix://$SOCK (pid $pid): it did not answer")
fi

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

mkdir -p "$(dirname "$SOCK")"
# its own session, no terminal, output to a file: nothing it inherits can break when we exit
setsid nohup podman system service --time=0 "unix://$SOCK" >"$LOG" 2>&1 </dev/null &
echo $! >"$PIDFILE"
for _ in $(seq 1 60); do
  ping_unix "$SOCK" >/dev/null && break
  sleep 0.5
done
if ! ping_unix "$SOCK" >/dev/null; then
  say "none (podman system service did not answer on $SOCK; see $LOG)"; exit 1
fi
if ! why=$(try_start "$SOCK"); then
  say "none (podman on unix://$SOCK answers but cannot start a container: $why; see $LOG)"; exit 1
fi
did+=("started podman's Docker API on unix://$SOCK (pid $(cat "$PIDFILE"))")
say "$(IFS=';'; echo "${did[*]}" | sed 's/;/; /g')"
