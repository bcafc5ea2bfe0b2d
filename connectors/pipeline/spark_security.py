"""What a kafka-eos run's Spark listens on, and which of Spark's own security settings are on.

Invariants:
- A local master (``local``, ``local[N]``, ``local[*]``; what ``kafka-eos run`` uses without
  ``--master``) listens on the loopback address only: ``local_binding`` sets the driver's bind
  address and host to 127.0.0.1 (its RPC and block-manager ports) and turns the Spark UI off,
  unless the user asks for it (``kafka-eos run --spark-ui``), in which case it is bound to
  127.0.0.1 too (``SPARK_LOCAL_IP``, which the UI binds to). A user's own ``--conf`` and
  ``SPARK_LOCAL_IP`` win.
- A cluster master gets nothing from here: the cluster's operator sets ``spark.authenticate``,
  the UI's ACLs and network encryption; ``security_facts`` reports which of them are on
  (``kafka-eos describe``), from the ``--conf`` given and ``spark-defaults.conf``.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

LOOPBACK = "127.0.0.1"
# Spark's own protections of a cluster's driver and executors (see the README's security section)
SECURITY_KEYS = ("spark.authenticate", "spark.network.crypto.enabled", "spark.io.encryption.enabled",
                 "spark.ssl.enabled", "spark.ui.enabled", "spark.acls.enable", "spark.ui.filters",
                 "spark.driver.bindAddress")


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def local_binding(master: str, ui: bool = False) -> dict[str, str]:
    """Spark settings that keep a local master's listening sockets on the loopback address."""
    if not is_local(master):
        return {}
    return {"spark.driver.bindAddress": LOOPBACK, "spark.driver.host": LOOPBACK,
            "spark.ui.enabled": "true" if ui else "false"}


def bind_local(master: str, ui: bool = False) -> dict[str, str]:
    """For a run on ``master`` from this process: ``SPARK_LOCAL_IP`` on the loopback address unless
    set (the UI binds to it, to every interface when unset; spark-submit inherits it), and the
    settings of ``local_binding`` (the caller puts the user's ``--conf`` over them)."""
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    return local_binding(master, ui)


def spark_defaults(env: Mapping[str, str] | None = None) -> Path | None:
    """The ``spark-defaults.conf`` spark-submit reads (``SPARK_CONF_DIR``, else ``SPARK_HOME/conf``)."""
    env = os.environ if env is None else env
    for directory in (env.get("SPARK_CONF_DIR"), env.get("SPARK_HOME") and f"{env['SPARK_HOME']}/conf"):
        if directory and (Path(directory) / "spark-defaults.conf").is_file():
            return Path(directory) / "spark-defaults.conf"
    return None


def _read_defaults(path: Path | None) -> dict[str, str]:
    """``key value`` (or ``key=value``) lines; comments skipped."""
    found = {}
    for line in path.read_text().splitlines() if path else []:
        parts = re.split(r"\s*[=:\s]\s*", line.strip(), maxsplit=1)
        if parts[0] and not parts[0].startswith(("#", "!")):
            found[parts[0]] = parts[1] if len(parts) > 1 else ""
    return found


def security_facts(master: str | None, conf: Mapping[str, str] | None = None,
                   env: Mapping[str, str] | None = None) -> dict[str, object]:
    """Which of Spark's security settings a run on ``master`` would have (None: the in-process run)."""
    master = master or "local[*]"
    path = spark_defaults(env)
    settings = {**_read_defaults(path), **local_binding(master), **(conf or {})}
    facts: dict[str, object] = {"master": master, "spark_defaults": str(path) if path else None}
    if is_local(master):
        facts["listens_on"] = (f"{LOOPBACK} only (driver RPC, block manager"
                               f"{', UI' if settings.get('spark.ui.enabled') == 'true' else '; UI off'})")
    facts["settings"] = {key: settings.get(key, "unset") for key in SECURITY_KEYS}
    return facts
