"""The Apicurio Registry distribution the local schema registry runs, fetched once from Maven Central.

Invariants:
- The artifact is ``io.apicurio:apicurio-registry-app:<version>:tar.gz:all`` (a Quarkus app:
  runner jar + ``lib/``), unpacked into ``<cache>/apicurio/apicurio-registry-<version>`` beside
  the Kafka jars; a ``.complete`` marker is written only after the checksum matched and the
  tarball was fully unpacked, so an interrupted download is retried, never half-used.
- It is fetched over HTTPS from the Maven repository layout (``$KAFKA_EOS_MAVEN_REPO``, default
  Maven Central), not through ``mvn``: the 3.0.9 app POM names a parent POM that Maven Central
  does not have, so Maven refuses to resolve the artifact. The download is checked against the
  repository's ``.sha1``.
- The version is ``APICURIO_VERSION`` unless ``$KAFKA_EOS_APICURIO_VERSION`` names another; the
  Java it needs (17 for 3.0.x, 21 for later ones) is found by ``java_env.find_java``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import time
import urllib.request
from pathlib import Path

from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError, cache_root, find_java

APICURIO_VERSION = "3.0.9"
CENTRAL = "https://repo.maven.apache.org/maven2"
PATH_IN_REPO = "io/apicurio/apicurio-registry-app/{v}/apicurio-registry-app-{v}-all.tar.gz"


def apicurio_version() -> str:
    return os.environ.get("KAFKA_EOS_APICURIO_VERSION") or APICURIO_VERSION


def java_needed(version: str) -> int:
    """Apicurio 3.0.x runs on Java 17; 3.1 and later are built for Java 21."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return 17 if (major, minor) <= (3, 0) else 21


def registry_java(version: str | None = None) -> str:
    version = version or apicurio_version()
    return find_java(java_needed(version), f"Apicurio Registry {version}")


def registry_home(version: str | None = None) -> Path:
    """The unpacked distribution (holding the runner jar), downloaded on first use."""
    version = version or apicurio_version()
    home = cache_root() / "apicurio" / f"apicurio-registry-{version}"
    if not (home / ".complete").exists():
        download(version, home)
    return home


def runner_jar(home: Path) -> Path:
    """The jar to ``java -jar``: ``*-runner.jar`` (3.0.x, legacy layout) or ``quarkus-run.jar`` (fast-jar)."""
    jars = sorted(home.glob("*-runner.jar")) or sorted(home.glob("quarkus-run.jar"))
    if not jars:
        raise BrokerEnvironmentError(f"{home} holds neither *-runner.jar nor quarkus-run.jar: "
                                     "not an Apicurio Registry app distribution")
    return jars[0]


def artifact_url(version: str) -> str:
    repo = os.environ.get("KAFKA_EOS_MAVEN_REPO", CENTRAL).rstrip("/")
    return f"{repo}/{PATH_IN_REPO.format(v=version)}"


def download(version: str, home: Path) -> dict[str, float]:
    """Fetch, verify and unpack; return the tarball's size (bytes) and the download's seconds."""
    url = artifact_url(version)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    tarball = home.with_name(home.name + ".tar.gz.part")
    started = time.monotonic()
    try:
        expected = _fetch_text(url + ".sha1").split()[0].strip().lower()
        digest = _fetch_file(url, tarball)
    except OSError as exc:
        tarball.unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)
        raise BrokerEnvironmentError(
            f"could not download Apicurio Registry {version} from {url} ({exc}). Check access to Maven "
            "Central, or set KAFKA_EOS_MAVEN_REPO to a mirror with the Maven layout, or set "
            "SCHEMA_REGISTRY_URL to use a registry of your own.") from exc
    seconds = time.monotonic() - started
    if digest != expected:
        tarball.unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)
        raise BrokerEnvironmentError(f"{url}: SHA-1 {digest} does not match the repository's {expected}")
    size = tarball.stat().st_size
    with tarfile.open(tarball) as archive:
        archive.extractall(home, filter="data")
    tarball.unlink()
    runner_jar(home)
    (home / ".complete").write_text(f"{version} {size} bytes {seconds:.1f} s\n")
    return {"bytes": size, "seconds": seconds}


def _fetch_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read().decode()


def _fetch_file(url: str, target: Path) -> str:
    sha1 = hashlib.sha1()
    with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
        while chunk := response.read(1 << 20):
            sha1.update(chunk)
            out.write(chunk)
    return sha1.hexdigest()
