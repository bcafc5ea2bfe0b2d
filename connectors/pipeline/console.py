"""What `kafka-eos run` and `demo` let the driver JVM print: quiet by default, Spark's own with --verbose.

Invariants:
- Quiet (the default): the driver JVM logs through the packaged ``log4j2-quiet.properties``
  (warnings and errors, without Spark's and Hadoop's routine notices), Spark's stage progress bar
  is off, and a local master binds to 127.0.0.1 (``SPARK_LOCAL_IP``, only when unset), which
  silences the "hostname resolves to a loopback address" warning.
- Verbose: Spark's own log4j profile and progress bar; nothing is set.
- A user's ``spark.driver.extraJavaOptions`` is kept; the quiet option is put before it (for
  spark-submit: in ``SPARK_SUBMIT_OPTS``, which the launcher puts before the driver's options).
"""
from __future__ import annotations

import os
from pathlib import Path

QUIET_LOG4J = Path(__file__).resolve().parent / "log4j2-quiet.properties"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def console_conf(verbose: bool, user: dict[str, str] | None = None) -> dict[str, str]:
    """Spark settings for the driver's console (merged over ``user``'s Java options)."""
    if verbose:
        return {"spark.ui.showConsoleProgress": "true"}
    option = f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()}"
    extra = (user or {}).get(JAVA_OPTIONS, "").strip()
    return {"spark.ui.showConsoleProgress": "false", JAVA_OPTIONS: f"{option} {extra}".strip()}


def quiet_environment(master: str, verbose: bool) -> None:
    """Bind a local master to the loopback address unless the user chose one (or wants Spark's lines)."""
    if not verbose and is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def submit_env(verbose: bool, env: dict[str, str]) -> dict[str, str]:
    """``env`` for spark-submit (client mode, the driver JVM is spark-submit's): the quiet log
    settings in ``SPARK_SUBMIT_OPTS``, before what the user has there."""
    if verbose:
        return dict(env)
    option = f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()}"
    return {**env, "SPARK_SUBMIT_OPTS": f"{option} {env.get('SPARK_SUBMIT_OPTS', '')}".strip()}
