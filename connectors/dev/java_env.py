"""Locating Java and the Kafka broker jars for the local (no-Docker) broker.

Invariants:
- Jars are resolved once from Maven Central with ``mvn dependency:copy-dependencies`` into a
  per-version cache directory (the pinned ``<kafka.version>`` of pom.xml, or any version a
  caller names: ``-Dkafka.version`` overrides the property) outside the repository (``$KAFKA_EOS_CACHE``, default
  ``~/.cache/kafka-eos``); ``$KAFKA_EOS_MAVEN_ARGS`` adds Maven flags (mirrors, offline); a
  ``.complete`` marker is written only after a full copy, so an interrupted download is retried,
  never half-used.
- ``find_java(major)`` looks for a JDK of at least that major version beyond the default one
  (``JAVA_HOME``, ``PATH``, ``update-alternatives``, the usual JDK folders) and returns the
  first that qualifies, in that order; no JDK path is assumed.
- Every failure raises ``BrokerEnvironmentError`` with a message that says what to do.
- Run as a script in the repository root (``PYTHONPATH=. python3 connectors/dev/java_env.py``) it
  checks Java and fetches the pinned version's jars before the package is installed: ``make run``
  runs it beside pip (it needs only the standard library and the repository's ``kafka_eos/``).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kafka_eos import KafkaEosError

POM = Path(__file__).with_name("pom.xml")
MIN_JAVA = 17


class BrokerEnvironmentError(KafkaEosError, RuntimeError):
    """The machine lacks something the local broker needs (Java, Maven, jars, a port)."""


def cache_root() -> Path:
    return Path(os.environ.get("KAFKA_EOS_CACHE", Path.home() / ".cache" / "kafka-eos"))


def state_root() -> Path:
    """Where ``dev kafka|registry up`` keep the state of what they left running
    (``$KAFKA_EOS_STATE_DIR``, default the cache): the test suite points it at a directory of its
    own, so it never finds, reuses or stops a developer's own dev broker or registry."""
    return Path(os.environ.get("KAFKA_EOS_STATE_DIR", cache_root()))


def kafka_version() -> str:
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    assert match, f"{POM} has no <kafka.version>"
    return match.group(1)


def java_major(java: str) -> int:
    """The major version of a java executable (8 for "1.8.0_x"), 0 when it does not answer."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return 0
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(match.group(1)) if match else 0
    if major == 1 and match and match.group(2):
        major = int(match.group(2))
    return major


def java_binary() -> str:
    """Return the java executable, checking it is at least Java 17 (Kafka 4 brokers need it)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise BrokerEnvironmentError(
            "Java not found: the local Kafka broker needs Java 17+. Install a JDK "
            "(e.g. `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME.")
    major = java_major(java)
    if major < MIN_JAVA:
        raise BrokerEnvironmentError(
            f"{java} is Java {major or 'of unknown version'}; Kafka 4 brokers need Java {MIN_JAVA}+. "
            "Install a newer JDK or point JAVA_HOME at one.")
    return java


JDK_FOLDERS = ("/usr/lib/jvm", "/usr/java", "/opt/java", "/opt/jdk", "/Library/Java/JavaVirtualMachines")


def java_candidates() -> list[str]:
    """Every java executable this machine offers, the configured ones first, without duplicates."""
    found: list[str] = []
    home = os.environ.get("JAVA_HOME")
    if home:
        found.append(str(Path(home) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        found.append(on_path)
    if shutil.which("update-alternatives"):
        listed = subprocess.run(["update-alternatives", "--list", "java"], capture_output=True, text=True)
        found += listed.stdout.split()
    for folder in JDK_FOLDERS:
        if Path(folder).is_dir():
            found += sorted((str(p) for p in Path(folder).glob("*/bin/java")), reverse=True)
            found += sorted((str(p) for p in Path(folder).glob("*/Contents/Home/bin/java")), reverse=True)
    unique: dict[str, str] = {}
    for java in found:
        if Path(java).exists():
            unique.setdefault(os.path.realpath(java), java)
    return list(unique.values())


def find_java(major: int, needed_by: str) -> str:
    """The first java of at least ``major`` among ``java_candidates()``."""
    seen = []
    for java in java_candidates():
        version = java_major(java)
        if version >= major:
            return java
        seen.append(f"{java} (Java {version or '?'})")
    raise BrokerEnvironmentError(
        f"{needed_by} needs Java {major}+; found only: {', '.join(seen) or 'no java at all'}. "
        f"Install a JDK {major}+ (any vendor) or point JAVA_HOME at one.")


def broker_classpath(version: str | None = None) -> str:
    """Return the classpath of the Kafka ``version`` broker jars (default: the pinned
    ``kafka_version()``), downloading them on first use."""
    version = version or kafka_version()
    jars = cache_root() / "jars" / f"kafka-{version}"
    if not (jars / ".complete").exists():
        _download(jars, version)
    return str(jars / "*")


def _download(target: Path, version: str) -> None:
    mvn = shutil.which("mvn")
    if not mvn:
        raise BrokerEnvironmentError(
            "Maven (`mvn`) not found: it downloads the Kafka broker jars once. "
            "Install it (`apt-get install maven`) or set KAFKA_BOOTSTRAP_SERVERS to use an external broker.")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    cmd = [mvn, "-B", "-q", "-f", str(POM), "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
           f"-DoutputDirectory={target}", "-DincludeScope=runtime", f"-Dkafka.version={version}",
           *os.environ.get("KAFKA_EOS_MAVEN_ARGS", "").split()]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BrokerEnvironmentError(
            f"Maven could not fetch the Kafka {version} broker jars "
            f"({_failed_artifact(proc.stdout + proc.stderr)}). Check access to Maven Central "
            f"(proxy settings in ~/.m2/settings.xml). Maven said:\n{_tail(proc.stdout + proc.stderr)}")
    (target / ".complete").write_text(version)


def _failed_artifact(output: str) -> str:
    """Name the first Maven coordinate (group:artifact[:type]:version) Maven failed on."""
    named = re.search(r"the artifact ([\w.\-]+:[\w.\-]+(?::[\w.\-]+)?:\d[\w.\-]*)", output)
    if named:
        return f"failed artifact: {named.group(1)}"
    for line in output.splitlines():
        if "could not be resolved" in line or "Could not resolve" in line or "No plugin found" in line:
            match = re.search(r"([\w.\-]+:[\w.\-]+(?::[\w.\-]+)?:\d[\w.\-]*)", line)
            if match:
                return f"failed artifact: {match.group(1)}"
            if "No plugin found" in line:
                return "failed artifact: org.apache.maven.plugins:maven-dependency-plugin"
    return "no artifact named in Maven's output"


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def main() -> int:
    """Check Java and fetch the pinned broker jars; print what is missing on failure (exit 1)."""
    try:
        java_binary()
        broker_classpath()
    except BrokerEnvironmentError as exc:
        print(f"kafka-eos: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
