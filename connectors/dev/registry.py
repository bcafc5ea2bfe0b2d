"""A real schema registry (Apicurio Registry) as a plain Java process on loopback (no Docker).

Invariants:
- The HTTP API and the management interface listen on 127.0.0.1 only, on free ports picked at
  start; storage is Apicurio's in-memory H2 database, so nothing outlives the process.
- ``url`` is the Confluent-compatible API (``/apis/ccompat/v7``), what Confluent clients and
  kafka-eos's ``schema.registry.url`` take.
- With ``users`` set, every API call needs HTTP basic auth of one of them (Quarkus embedded
  users, role sr-admin); without, the registry is open.
- The process runs in its own session (so ``os.killpg`` stops it all); its output goes to
  ``<workdir>/registry.log``, which ``log_tail()`` shows. Leaving the context manager removes
  the workdir when it was a temporary one (not given in the settings).
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError
from kafka_eos.connectors.dev.local_kafka import free_port
from kafka_eos.connectors.dev.processes import stop_process
from kafka_eos.connectors.dev.registry_dist import apicurio_version, registry_home, registry_java, runner_jar

CCOMPAT = "/apis/ccompat/v7"


def answers(url: str) -> bool:
    """Whether a registry answers at ``url`` (a 401 counts: it is up and checking credentials)."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError as exc:
        return exc.code == 401
    except OSError:
        return False


@dataclass(frozen=True)
class RegistrySettings:
    """What kind of local registry to start."""
    heap: str = "256m"
    users: tuple[tuple[str, str], ...] = ()   # (user, password) pairs; empty: no authentication
    workdir: Path | None = None


@dataclass
class LocalRegistry:
    """Start and stop a local Apicurio Registry. Use as a context manager."""
    settings: RegistrySettings = field(default_factory=RegistrySettings)
    process: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.workdir = Path(self.settings.workdir or tempfile.mkdtemp(prefix="kafka-eos-registry-"))
        self.port = 0
        self.management_port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.base + CCOMPAT

    @property
    def log(self) -> Path:
        return self.workdir / "registry.log"

    def start(self, timeout_s: float = 120.0) -> "LocalRegistry":
        version = apicurio_version()
        java, home = registry_java(version), registry_home(version)
        self.port, self.management_port = free_port(), free_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        cmd = [java, f"-Xmx{self.settings.heap}", "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true", *(f"-D{k}={v}" for k, v in self.properties().items()),
               "-jar", str(runner_jar(home))]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                            start_new_session=True)
        try:
            self.wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def properties(self) -> dict[str, str]:
        """Quarkus/Apicurio settings, passed as system properties (they win over the app's own)."""
        props = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": str(self.port),
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": str(self.management_port),
            "apicurio.storage.kind": "sql",
            "apicurio.storage.sql.kind": "h2",
            "apicurio.datasource.url": "jdbc:h2:mem:registry_db",
            "apicurio.storage.snapshot.location": str(self.workdir),
            "quarkus.http.access-log.enabled": "false",
            "quarkus.oidc.tenant-enabled": "false",
        }
        for user in self.settings.users:
            props.update(self.auth_properties(user))
        return props

    @staticmethod
    def auth_properties(user: tuple[str, str]) -> dict[str, str]:
        """Settings requiring HTTP basic auth, with ``user`` (name, password) as an admin."""
        name, password = user
        return {"quarkus.http.auth.basic": "true",
                "quarkus.security.users.embedded.enabled": "true",
                "quarkus.security.users.embedded.plain-text": "true",
                f"quarkus.security.users.embedded.users.{name}": password,
                f"quarkus.security.users.embedded.roles.{name}": "sr-admin"}

    def wait_ready(self, timeout_s: float) -> None:
        """Wait until the ccompat API answers (401 counts: it is up and checking credentials)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = self.process.returncode if self.process else None
                raise BrokerEnvironmentError(f"Apicurio Registry exited with {code}:\n{self.log_tail()}")
            if answers(self.url + "/subjects"):
                return
            time.sleep(0.3)
        raise BrokerEnvironmentError(f"Apicurio Registry did not answer in {timeout_s:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        keep = [line for line in text if not line.startswith("\tat ")]
        return f"--- {self.log} (last {lines} lines) ---\n" + "\n".join(keep[-lines:])

    def __enter__(self) -> "LocalRegistry":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self.settings.workdir is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
