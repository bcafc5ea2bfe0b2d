"""How the driver's Python reads the files of Spark's checkpoint (its offset log, commit log,
``metadata`` and ``state`` folder).

Invariants this module enforces:
- A checkpoint at a URI (``hdfs://``, ``s3a://``, ``gs://``, ``abfss://``, ...) is read the way
  Spark wrote it, through the Hadoop ``FileSystem`` that the running session's Hadoop
  configuration gives for it: the connectors on Spark's classpath and the credentials the
  platform configured (``spark.hadoop.*``, ``core-site.xml``), never credentials of kafka-eos's
  own. Installed per process by ``use_session(spark)``, for a classic session (a SparkContext in
  this process). A command that starts no Spark, of a pipeline whose records are in Kafka (so
  that its Python needs no credentials of its own: ``prefer_own_jvm``), starts a JVM of its own
  at its first read of a URI: spark-submit's launcher with Spark's jars and ``spark-defaults.conf``,
  no SparkContext, logging as quietly as a run, and Hadoop's configuration as Spark derives it
  (``spark.hadoop.*``). Otherwise (a Spark Connect client; records in files) a URI is read
  through pyarrow's file systems (``txn.log.stores.open_reader``).
- A path (local, a mount, ``dbfs:/``) is read as files by Python, with or without a session.
- Reads only: nothing is created; a missing folder reads as empty and a missing file as None;
  names starting with a dot (Hadoop's ``.crc`` files, temp files) are not names.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from kafka_eos.environment import environment
from kafka_eos.txn.log.log_store import LogReader, local_path
from kafka_eos.txn.log.stores import is_kafka, open_reader as open_store_reader

_NOT_FOUND = "java.io.FileNotFoundException"


class _Jvm:
    lock = threading.Lock()
    jvm: Any = None
    conf: Any = None
    own_allowed = False


def use_session(spark: Any) -> bool:
    """Read checkpoints at URIs through ``spark``'s Hadoop (classic sessions); True when installed."""
    context: Any = getattr(spark, "_sc", None)  # a Spark Connect session has no SparkContext
    if context is None or getattr(context, "_jvm", None) is None:
        return False
    with _Jvm.lock:
        _Jvm.jvm, _Jvm.conf = context._jvm, context._jsc.hadoopConfiguration()
    return True


def prefer_own_jvm() -> None:
    """Read checkpoints at URIs through a JVM of this process's own if no session's is installed."""
    _Jvm.own_allowed = True


def _start_own_jvm() -> None:
    from pyspark.java_gateway import launch_gateway

    from kafka_eos.connectors.pipeline.console import QUIET_LOG4J
    quiet = f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()} {os.environ.get('SPARK_SUBMIT_OPTS', '')}"
    local = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")  # it binds nothing: no "resolves to a loopback" notice
    with environment(SPARK_SUBMIT_OPTS=quiet.strip(), SPARK_LOCAL_IP=local):
        jvm = launch_gateway().jvm
    spark_conf = jvm.org.apache.spark.SparkConf()  # spark-submit put spark-defaults.conf into its properties
    _Jvm.jvm, _Jvm.conf = jvm, jvm.org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(spark_conf)


def forget_session() -> None:
    """Back to pyarrow's readers (tests; a stopped session)."""
    with _Jvm.lock:
        _Jvm.jvm = _Jvm.conf = None
        _Jvm.own_allowed = False


def through_hadoop(location: str) -> bool:
    """Whether ``location`` is read through the session's Hadoop in this process."""
    return _Jvm.jvm is not None and local_path(location) is None and not is_kafka(location)


def open_reader(location: str) -> LogReader:
    """A reader of the checkpoint folder ``location`` (see the module's invariants)."""
    if _Jvm.own_allowed and _Jvm.jvm is None and local_path(location) is None and not is_kafka(location):
        with _Jvm.lock:
            if _Jvm.jvm is None:
                _start_own_jvm()
    if through_hadoop(location):
        return HadoopReader(_Jvm.jvm, _Jvm.conf, location)
    return open_store_reader(location)


def _not_found(exc: Exception) -> bool:
    java = getattr(exc, "java_exception", None)
    return java is not None and java.getClass().getName() == _NOT_FOUND


class HadoopReader(LogReader):
    """``LogReader``'s reads of ``location`` through Hadoop's ``FileSystem`` in Spark's JVM."""

    def __init__(self, jvm: Any, conf: Any, location: str) -> None:  # noqa: D107 - no LogReader init: no pyarrow
        self.location = location
        self._jvm = jvm
        self._folder = jvm.org.apache.hadoop.fs.Path(location)
        self._fs = self._folder.getFileSystem(conf)

    def _path(self, name: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self._folder, name)

    def exists(self, name: str) -> bool:
        return bool(self._fs.exists(self._path(name)))

    def names(self) -> list[str]:
        from py4j.protocol import Py4JJavaError
        try:
            statuses = self._fs.listStatus(self._folder)
        except Py4JJavaError as exc:
            if _not_found(exc):
                return []
            raise
        return sorted(n for n in (s.getPath().getName() for s in statuses) if not n.startswith("."))

    def read_bytes(self, name: str) -> bytes | None:
        from py4j.protocol import Py4JJavaError
        try:
            stream = self._fs.open(self._path(name))
        except Py4JJavaError as exc:
            if _not_found(exc):
                return None
            raise
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()
