"""Builds kafka-eos' container images on this machine, from Debian packages and Maven Central jars.

No registry is needed: every image comes from here.
- ``base``: a Debian bookworm ``--variant=minbase`` root filesystem (debootstrap) with a Java 17
  JRE, Python 3, tini and procps, imported as ``localhost/kafka-eos-base:<key>``.
- ``broker``: the base + the pinned Kafka version's jars (the same Maven cache the JVM-process
  broker uses, ``kafka_eos.connectors.dev.java_env``) + ``broker-entrypoint.sh``: one KRaft node
  configured from ``KAFKA_*`` environment variables -> ``localhost/kafka-eos-broker:<kafka>-<key>``.

What this module enforces: an image's tag carries a hash of all its inputs (package list, files,
Kafka version), an image whose tag exists is never rebuilt, and the root filesystem tarball is
cached under ``$KAFKA_EOS_CACHE/images`` keyed the same way and written create-only (a temporary
name, renamed when complete). Each build prints what it built and how long it took.

- ``job``: ``docker/Dockerfile`` with ``BASE`` = the base above, also tagged ``kafka-eos-job:latest``
  (the name docker/compose.yaml uses).
- ``prometheus``: ``images/prometheus.Containerfile`` on the base: Debian's ``prometheus`` package,
  entrypoint the binary like ``prom/prometheus`` -> ``localhost/kafka-eos-prometheus:<key>``.

Usage: ``python docker/images/build.py base|broker|prometheus|job`` prints the image's tag as its last line.
The engine CLI is ``podman`` where installed, else ``docker`` (``KAFKA_EOS_ENGINE_CLI`` overrides).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = "bookworm"
MIRROR = os.environ.get("KAFKA_EOS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_PACKAGES = ("openjdk-17-jre-headless", "python3", "python3-venv", "tini", "procps", "ca-certificates")
BASE_FORMAT = "1"      # bump when the way the base is assembled changes
BROKER_FORMAT = "1"


class ImageBuildError(RuntimeError):
    """An image could not be built; the message names the step and what to do."""


def engine_cli() -> str:
    chosen = os.environ.get("KAFKA_EOS_ENGINE_CLI") or shutil.which("podman") or shutil.which("docker")
    if not chosen:
        raise ImageBuildError("no container engine CLI (podman or docker): run docker/engine.sh first")
    return chosen


def cache_dir() -> Path:
    root = Path(os.environ.get("KAFKA_EOS_CACHE", Path.home() / ".cache" / "kafka-eos"))
    return root / "images"


def _key(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def _run(cmd: list[str], step: str, **kwargs: object) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise ImageBuildError(f"{step} failed (exit {proc.returncode}): {' '.join(cmd[:4])} ...\n{tail}")
    return proc


def image_exists(tag: str) -> bool:
    return subprocess.run([engine_cli(), "image", "inspect", tag], capture_output=True).returncode == 0


def _timed(name: str, tag: str, build) -> str:  # noqa: ANN001 - a zero-argument callable
    if image_exists(tag):
        print(f"image {name}: {tag} cached", file=sys.stderr)
        return tag
    started = time.monotonic()
    build()
    print(f"image {name}: built {tag} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return tag


# ---- base: debootstrap rootfs -> tarball (cached) -> imported image ----

def base_key() -> str:
    return _key(BASE_FORMAT, SUITE, MIRROR, *BASE_PACKAGES)


def base_tag() -> str:
    return f"localhost/kafka-eos-base:{base_key()}"


def rootfs_tarball() -> Path:
    """The base root filesystem as a tarball, made once per key (debootstrap needs root)."""
    tarball = cache_dir() / f"rootfs-{SUITE}-{base_key()}.tar"
    if tarball.exists():
        return tarball
    if not shutil.which("debootstrap"):
        raise ImageBuildError("debootstrap not found: `apt-get install debootstrap` (as root) builds the base image")
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tarball.parent) as work:
        root = Path(work) / "rootfs"
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
              SUITE, str(root), MIRROR], "debootstrap")
        _slim(root)
        partial = Path(work) / "rootfs.tar"
        _run(["tar", "--numeric-owner", "--exclude=./proc/*", "--exclude=./sys/*", "-C", str(root),
              "-cf", str(partial), "."], "tar rootfs")
        os.link(partial, tarball)  # create-only: fails rather than replace a finished tarball
    return tarball


def _slim(root: Path) -> None:
    """Drop what a container never uses: apt's downloaded packages and lists, docs, man pages."""
    for sub in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"):
        target = root / sub
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and child.name != "partial":
                    shutil.rmtree(child, ignore_errors=True)
                elif child.is_file():
                    child.unlink()


def build_base() -> str:
    def build() -> None:
        tarball = rootfs_tarball()
        java_home = "/usr/lib/jvm/java-17-openjdk-amd64"
        _run([engine_cli(), "import",
              "--change", f"ENV JAVA_HOME={java_home}",
              "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              "--change", "CMD [\"/bin/bash\"]",
              str(tarball), base_tag()], "import base rootfs")
    return _timed("base", base_tag(), build)


# ---- broker: base + Kafka jars + entrypoint ----

def _kafka() -> tuple[str, Path]:
    sys.path.insert(0, str(HERE.parents[1]))
    from kafka_eos.connectors.dev.java_env import broker_classpath, kafka_version
    return kafka_version(), Path(broker_classpath().rstrip("*"))


def _log4j() -> str:
    """The JVM broker's log settings (one copy, in local_kafka), for the image's broker too."""
    from kafka_eos.connectors.dev.local_kafka import LOG4J
    return LOG4J


def broker_tag() -> str:
    version, jars = _kafka()
    names = sorted(p.name for p in jars.glob("*.jar"))
    entry = (HERE / "broker-entrypoint.sh").read_bytes()
    key = _key(BROKER_FORMAT, base_key(), version, entry, _log4j(), *names)
    return f"localhost/kafka-eos-broker:{version}-{key}"


def build_broker() -> str:
    tag = broker_tag()

    def build() -> None:
        base = build_base()
        version, jars = _kafka()
        with tempfile.TemporaryDirectory(prefix="kafka-eos-broker-") as context:
            ctx = Path(context)
            shutil.copytree(jars, ctx / "libs", ignore=shutil.ignore_patterns(".complete"))
            shutil.copy(HERE / "broker-entrypoint.sh", ctx / "entrypoint.sh")
            (ctx / "log4j2.properties").write_text(_log4j())
            (ctx / "Containerfile").write_text(
                f"FROM {base}\n"
                "COPY libs/ /opt/kafka/libs/\n"
                "COPY entrypoint.sh /opt/kafka/entrypoint.sh\n"
                "COPY log4j2.properties /opt/kafka/config/log4j2.properties\n"
                f"LABEL org.opencontainers.image.title=kafka-eos-broker kafka.version={version}\n"
                "EXPOSE 9092\n"
                'ENTRYPOINT ["/usr/bin/tini", "--", "/bin/sh", "/opt/kafka/entrypoint.sh"]\n')
            _run([engine_cli(), "build", "-q", "-t", tag, "-f", str(ctx / "Containerfile"), str(ctx)], "build broker image")
    return _timed("broker", tag, build)


# ---- prometheus: base + Debian's prometheus package (images/prometheus.Containerfile) ----

PROMETHEUS_FILE = HERE / "prometheus.Containerfile"


def prometheus_tag() -> str:
    return f"localhost/kafka-eos-prometheus:{_key(base_key(), PROMETHEUS_FILE.read_bytes())}"


def build_prometheus() -> str:
    tag = prometheus_tag()

    def build() -> None:
        base = build_base()
        with tempfile.TemporaryDirectory(prefix="kafka-eos-prometheus-") as context:
            _run([engine_cli(), "build", "-q", "-t", tag, "-f", str(PROMETHEUS_FILE), "--build-arg", f"BASE={base}",
                  context], "build prometheus image")
    return _timed("prometheus", tag, build)


# ---- job: docker/Dockerfile on the base built here ----

REPO = HERE.parents[1]
JOB_INPUTS = ("pyproject.toml", "README.md", "docker/Dockerfile", "docker/Dockerfile.dockerignore",
              "connectors", "txn", "offsets", "config", "serde", "kafka_eos")


def _files(entry: str) -> list[Path]:
    path = REPO / entry
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def job_tag() -> str:
    digest = [BASE_FORMAT, base_key()]
    for entry in JOB_INPUTS:
        digest += [f"{p.relative_to(REPO)}:{hashlib.sha256(p.read_bytes()).hexdigest()}" for p in _files(entry)]
    return f"localhost/kafka-eos-job:{_key(*digest)}"


def _host_trust() -> list[str]:
    """The host's CA bundle and pip settings, mounted read-only for the build only: behind a
    TLS-inspecting proxy pip inside the build trusts what the host's pip trusts."""
    mounts = []
    for path in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf"):
        if Path(path).is_file():
            mounts += ["-v", f"{path}:{path}:ro"]
    return mounts


def build_job() -> str:
    """docker/Dockerfile with BASE = the base built here; pip's downloads come from the host's pip
    cache (mounted for the build only, never part of the image) so pyspark is fetched once."""
    tag = job_tag()

    def build() -> None:
        base = build_base()
        pip_cache = Path.home() / ".cache" / "pip"
        pip_cache.mkdir(parents=True, exist_ok=True)
        _run([engine_cli(), "build", "-q", "-t", tag, "-f", str(REPO / "docker" / "Dockerfile"),
              "--build-arg", f"BASE={base}", "--build-arg", "PIP_INSTALL_FLAGS=",
              "--ignorefile", str(REPO / "docker" / "Dockerfile.dockerignore"),
              "-v", f"{pip_cache}:/root/.cache/pip", *_host_trust(), str(REPO)], "build job image")
        _run([engine_cli(), "tag", tag, "kafka-eos-job:latest"], "tag job image")
    return _timed("job", tag, build)


BUILDERS = {"base": build_base, "broker": build_broker, "prometheus": build_prometheus, "job": build_job}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in BUILDERS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(BUILDERS)}")
    try:
        print(BUILDERS[sys.argv[1]]())
    except ImageBuildError as exc:
        sys.exit(f"image build failed: {exc}")
