"""The suite's JVMs and Spark's Python processes: brokers, every spark-submit and `kafka-eos run`
driver, the session's Spark.

Each runs a few seconds of code, so (issue 47):
- C1 only (no C2 compiler threads) and the serial collector: about a third less CPU per
  spark-submit (138 -> 93 core-s for test_pass_through_pipeline);
- Spark's drivers and the local brokers map class-data archives (``connectors.jvm_class_archive``),
  built once into ``build/jvm`` by ``make test`` before pytest starts (``python -m
  integration_tests.fast_jvms``); where none was built a JVM starts as before;
- Spark's Python processes import pyspark compiled (``SPARK_HOME``: ``connectors.spark_home``'s
  overlay, built into ``build/jvm`` first, so the Spark archive is dumped with the classpath the
  suite's drivers have); where none was built, or ``SPARK_HOME`` is set, they start as before.
Benchmarks and users keep the JVM's and pyspark's defaults.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import MutableMapping

from kafka_eos.connectors import jvm_class_archive, spark_home
from kafka_eos.connectors.dev.node_config import ARCHIVES_ENV, FAST_JVM_ENV, FAST_START
from kafka_eos.connectors.pipeline.compiled_pyspark import CACHE_ENV

FAST_JVM_OPTS = FAST_START  # the brokers' options (node_config), the drivers' too
ARCHIVES = Path(__file__).resolve().parents[1] / "build" / "jvm"


def fast_test_jvms(env: MutableMapping[str, str], archives: Path = ARCHIVES) -> None:
    """Brokers (``KAFKA_EOS_FAST_JVM``, ``KAFKA_EOS_JVM_ARCHIVES``: ``connectors.dev.node_config``) and
    spark-submit's driver JVM (``SPARK_SUBMIT_OPTS``, before what the caller has there) started by
    the suite's processes."""
    env[FAST_JVM_ENV], env[ARCHIVES_ENV] = "1", str(archives)
    env[CACHE_ENV] = str(archives)  # a `kafka-eos run` without SPARK_HOME builds its Spark home here, never in ~/.cache
    home = spark_home.overlay_path(archives)
    if "SPARK_HOME" not in env and home is not None and home.is_dir():
        env["SPARK_HOME"] = str(home)
    if FAST_JVM_OPTS not in env.get("SPARK_SUBMIT_OPTS", ""):
        shared = jvm_class_archive.mapped(jvm_class_archive.spark_archive(archives, FAST_JVM_OPTS))
        env["SPARK_SUBMIT_OPTS"] = " ".join([FAST_JVM_OPTS, *shared, env.get("SPARK_SUBMIT_OPTS", "")]).strip()


def build(archives: Path = ARCHIVES) -> list[Path]:
    """Spark's and Kafka's archives, built side by side (34 s and 9 s alone on 2 cores), after the
    compiled Spark home (3 s) the Spark archive's warm-up job runs in."""
    os.environ[FAST_JVM_ENV] = "1"  # the broker that dumps runs with the options its archive is for
    home = spark_home.compiled_home(archives)
    if "SPARK_HOME" not in os.environ and home is not None:
        os.environ["SPARK_HOME"] = str(home)
    with ThreadPoolExecutor(2) as pool:
        spark = pool.submit(jvm_class_archive.build_spark, archives, FAST_JVM_OPTS)
        kafka = pool.submit(jvm_class_archive.build_kafka, archives, FAST_JVM_OPTS)
        return [spark.result(), kafka.result()]


if __name__ == "__main__":
    for archive in build(Path(sys.argv[1]) if sys.argv[1:] else ARCHIVES):
        print(f"JVM class archive: {archive}")
