"""Spark's Python daemon for task workers, with kafka-eos's data path imported before it forks.

pyspark forks each task's Python worker from one daemon per executor (``spark.python.daemon.module``,
default ``pyspark.daemon``), and a fork imports what its task runs: pyarrow, whose first
``pa.array`` imports pandas, confluent-kafka, fastavro, kafka-eos's reader, codecs and writer. A
query's first tasks each start up to four workers (reader, decode, encode, writer) that import all
of it at once. Here it is imported once, before any fork; the forks share its pages.

Enforced here:
- ``daemon_conf``: this daemon only for a local master whose workers run this interpreter (where
  this module is installed); on a cluster the daemon starts before ``--py-files`` reach it, so it
  stays pyspark's;
- the preload starts no Python thread (one would not survive a fork; the native pools numpy's
  BLAS and Arrow's allocator start at import restart in the fork): ``preload`` checks it;
- what the preload leaves is frozen out of garbage collection (``worker_gc``'s rule, once per
  daemon, so each fork starts frozen);
- ``start_early``: where this daemon is set, a one-row Python UDF job starts it and a worker per
  core in the background while the driver plans the first batch (on one core: pyspark's own
  runners); a UDF and the data path's tasks share a daemon (an RDD job would start another).
"""
from __future__ import annotations

import importlib
import logging
import os
import re
import sys
import threading
from typing import Any, Mapping

from kafka_eos.connectors.worker_gc import freeze

log = logging.getLogger(__name__)
DAEMON_MODULE_CONF = "spark.python.daemon.module"
PRELOADED = ("pyarrow", "pandas", "fastavro", "confluent_kafka", "pyspark.sql.pandas.types",
             "pyspark.sql.pandas.serializers", "pyspark.sql.worker.plan_data_source_read",
             "pyspark.sql.worker.write_into_data_source", "kafka_eos.connectors.datasource",
             "kafka_eos.connectors.source.stream_reader", "kafka_eos.connectors.source.partition_reader",
             "kafka_eos.connectors.source.range_reader", "kafka_eos.connectors.sink.stream_writer",
             "kafka_eos.serde.batch", "kafka_eos.serde.codecs")
_LOCAL = re.compile(r"local(\[[^\]]*\])?")


def daemon_conf(master: str, conf: Mapping[str, str] | None = None,
                env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{spark.python.daemon.module: this module}`` for a local master whose Python workers run
    this interpreter (``PYSPARK_PYTHON`` and ``spark.pyspark.python`` unset or equal to it);
    else ``{}``, and a daemon module the caller set is kept as given."""
    settings, environment = conf or {}, os.environ if env is None else env
    if DAEMON_MODULE_CONF in settings or not _LOCAL.fullmatch(master.strip()):
        return {}
    pythons = (settings.get("spark.pyspark.python"), environment.get("PYSPARK_PYTHON"))
    if any(p and os.path.realpath(p) != os.path.realpath(sys.executable) for p in pythons):
        return {}
    return {DAEMON_MODULE_CONF: __name__}


def preload(modules: tuple[str, ...] = PRELOADED) -> None:
    """Import ``modules``, build one Arrow array (pyarrow's lazy pandas import), freeze the rest."""
    for module in modules:
        importlib.import_module(module)
    importlib.import_module("pyarrow").array([0])
    if threading.active_count() != 1:
        raise RuntimeError(f"preloading started {threading.active_count() - 1} Python thread(s) in Spark's "
                           "Python daemon; a forked worker would not have them")
    freeze()


def start_early(spark: Any) -> threading.Thread | None:
    """Start the task workers (``preload`` in their daemon) in a background job, if this daemon is
    set; a failure there (the session stopped first) is left to the query's own tasks to meet."""
    context = spark.sparkContext
    if context.getConf().get(DAEMON_MODULE_CONF) != __name__:
        return None

    def start() -> None:
        from pyspark.sql.functions import udf
        context.setJobDescription("kafka-eos: start the Python workers")
        cores = context.defaultParallelism
        try:
            spark.range(0, cores, 1, cores).select(udf(lambda x: x, "long")("id")).collect()
        except Exception as exc:  # noqa: BLE001 - best effort: the query starts its workers itself
            log.debug("the Python workers did not start early: %s", type(exc).__name__)

    thread = threading.Thread(target=start, name="kafka-eos-worker-start", daemon=True)
    thread.start()
    return thread


if __name__ == "__main__":
    try:
        preload()
    except ImportError as exc:  # a worker imports what it needs itself: slower, not wrong
        print(f"kafka-eos: Spark's Python daemon starts without its preload: {exc}", file=sys.stderr)
    from pyspark.daemon import manager
    manager()
