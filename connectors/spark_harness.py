"""Spark sessions and spark-submit runs sized for a 2-core machine (tests, demo, benches).

Invariant: Python workers run the interpreter running this code (``PYSPARK_PYTHON``), so the
executors see the same installed kafka-eos as the driver; on a local master their daemon has the
data path imported before it forks them (``worker_daemon``).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from kafka_eos.connectors.worker_daemon import daemon_conf

SMALL_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.sql.streaming.stopTimeout": "30s",
    "spark.python.worker.reuse": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return env


def _conf(master: str, conf: dict | None) -> dict:
    """``SMALL_CONF``, the master's daemon (``worker_daemon.daemon_conf``), then the caller's ``conf``."""
    return {**SMALL_CONF, **daemon_conf(master, conf), **(conf or {})}


def local_session(master: str = "local[2]", app: str = "kafka-eos", conf: dict | None = None):
    os.environ.update({k: v for k, v in python_env().items() if k.startswith("PYSPARK_")})
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in _conf(master, conf).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def spark_submit_binary() -> str:
    import pyspark
    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def spark_submit(script: str | Path, args: Sequence[str] = (), master: str = "local[2]",
                 conf: dict | None = None, timeout: float = 600,
                 extra: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """Run ``script`` through the real ``spark-submit``; return the finished process."""
    cmd = [spark_submit_binary(), "--master", master]
    for key, value in _conf(master, conf).items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [*extra, str(script), *args]
    return subprocess.run(cmd, env=python_env(), capture_output=True, text=True, timeout=timeout)
