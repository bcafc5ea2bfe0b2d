"""The suite's JVMs: brokers, every spark-submit and `kafka-eos run` driver, the session's Spark.

Each runs a few seconds of code, so (issue 47):
- C1 only (no C2 compiler threads) and the serial collector: about a third less CPU per
  spark-submit (138 -> 93 core-s for test_pass_through_pipeline);
- Spark's drivers and the local brokers map class-data archives (``connectors.jvm_class_archive``),
  built once into ``build/jvm`` by ``make test`` before pytest starts (``python -m
  integration_tests.fast_jvms``); where none was built a JVM starts as before.
Benchmarks and users keep the JVM's defaults.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import MutableMapping

from kafka_eos.connectors import jvm_class_archive
from kafka_eos.connectors.dev.node_config import ARCHIVES_ENV, FAST_JVM_ENV, FAST_START

FAST_JVM_OPTS = FAST_START  # the brokers' options (node_config), the drivers' too
ARCHIVES = Path(__file__).resolve().parents[1] / "build" / "jvm"


def fast_test_jvms(env: MutableMapping[str, str], archives: Path = ARCHIVES) -> None:
    """Brokers (``KAFKA_EOS_FAST_JVM``, ``KAFKA_EOS_JVM_ARCHIVES``: ``connectors.dev.node_config``) and
    spark-submit's driver JVM (``SPARK_SUBMIT_OPTS``, before what the caller has there) started by
    the suite's processes."""
    env[FAST_JVM_ENV], env[ARCHIVES_ENV] = "1", str(archives)
    if FAST_JVM_OPTS not in env.get("SPARK_SUBMIT_OPTS", ""):
        shared = jvm_class_archive.mapped(jvm_class_archive.spark_archive(archives, FAST_JVM_OPTS))
        env["SPARK_SUBMIT_OPTS"] = " ".join([FAST_JVM_OPTS, *shared, env.get("SPARK_SUBMIT_OPTS", "")]).strip()


def build(archives: Path = ARCHIVES) -> list[Path]:
    """Spark's and Kafka's archives, built side by side (34 s and 9 s alone on 2 cores)."""
    os.environ[FAST_JVM_ENV] = "1"  # the broker that dumps runs with the options its archive is for
    with ThreadPoolExecutor(2) as pool:
        spark = pool.submit(jvm_class_archive.build_spark, archives, FAST_JVM_OPTS)
        kafka = pool.submit(jvm_class_archive.build_kafka, archives, FAST_JVM_OPTS)
        return [spark.result(), kafka.result()]


if __name__ == "__main__":
    for archive in build(Path(sys.argv[1]) if sys.argv[1:] else ARCHIVES):
        print(f"JVM class archive: {archive}")
