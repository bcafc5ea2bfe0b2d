"""The ``kafka-eos`` Spark data source: one name for the Kafka source and the exactly-once sink.

Options and the output schema follow Spark's built-in ``kafka`` source and sink, so moving a
job from ``format("kafka")`` to ``format("kafka-eos")`` is the whole migration.

``register(spark)`` registers the data source with the cluster's task slots (``slots``: from the
session's settings and master when it registers): the source reads a batch in that many tasks
unless ``maxTasksPerBatch`` says otherwise. A data source registered without them plans for the
driver machine's CPUs. A session of a group of pipelines carries its share of the slots
(``SHARE_SETTING``, set by the group), which then stands for the cluster's.
"""
from __future__ import annotations

from typing import Mapping

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from kafka_eos.config.spark_option_table import source_option
from kafka_eos.connectors.schema import RANGE_SCHEMA, source_schema
from kafka_eos.connectors.worker_gc import freeze_loaded


class KafkaEosDataSource(DataSource):
    """Source (batch + streaming) and streaming sink over Kafka, exactly once."""

    cluster_cores: int | None = None  # the cluster's task slots (register); None: unknown

    @classmethod
    def name(cls) -> str:
        return "kafka-eos"

    def schema(self) -> StructType:
        if source_option("emit").read(self.options) == "offsetRanges":
            return RANGE_SCHEMA
        return source_schema(include_headers=bool(source_option("includeHeaders").read(self.options)))

    def reader(self, schema: StructType):
        from kafka_eos.connectors.source.batch_reader import KafkaBatchReader
        return KafkaBatchReader(dict(self.options), schema, self.cluster_cores)

    def streamReader(self, schema: StructType):
        from kafka_eos.connectors import spark_compat
        if spark_compat.ADMISSION_CONTROL:
            from kafka_eos.connectors.source.stream_reader import KafkaStreamReader as Reader
        else:
            from kafka_eos.connectors.source.legacy_reader import LegacyKafkaStreamReader as Reader
        reader = Reader(dict(self.options), schema, self.cluster_cores)
        freeze_loaded()
        return reader

    def streamWriter(self, schema: StructType, overwrite: bool):
        from kafka_eos.connectors.sink.query_start import QueryStart  # the sink's start steps, every writer
        writer = QueryStart().writer(dict(self.options), schema)
        freeze_loaded()
        return writer


def register(spark) -> None:
    """Make ``format("kafka-eos")`` available in this SparkSession."""
    spark.dataSource.register(on_cluster(cluster_cores(spark)))


def on_cluster(cores: int | None) -> type[KafkaEosDataSource]:
    """The data source class that plans for ``cores`` task slots (a class of its own: Spark pickles
    the registered class by value, the slots with it)."""
    if cores is None:
        return KafkaEosDataSource
    return type("KafkaEosDataSourceOnCluster", (KafkaEosDataSource,),
                {"cluster_cores": cores, "__module__": __name__, "__doc__": KafkaEosDataSource.__doc__})


def cluster_cores(spark) -> int | None:
    """The cluster's task slots as the session's settings tell them, or None (see ``slots``)."""
    try:
        context = spark.sparkContext
        master, parallelism = context.master, int(context.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        master, parallelism = "", None
    try:
        share = spark.conf.get(SHARE_SETTING, None)
        if share and str(share).isdigit() and int(share) > 0:
            return int(share)
        conf = {key: spark.conf.get(key, None) for key in SLOT_SETTINGS}
    except Exception:  # noqa: BLE001 - a server that does not answer: what the context says
        conf = {}
    return slots(master, parallelism, conf)


SHARE_SETTING = "spark.kafka_eos.group.slots"  # a group member's task slots (connectors.pipeline.group)
SLOT_SETTINGS = ("spark.default.parallelism", "spark.executor.instances", "spark.executor.cores",
                 "spark.dynamicAllocation.enabled", "spark.dynamicAllocation.maxExecutors", "spark.cores.max")


def slots(master: str, parallelism: int | None, conf: Mapping[str, str | None]) -> int | None:
    """Task slots: ``spark.default.parallelism`` when set; a local master's threads; else the
    executors the settings ask for times their cores (dynamic allocation: its maximum), or
    ``spark.cores.max``; else ``defaultParallelism`` (the cores registered so far, at least 2:
    executors that register later are not counted)."""
    def number(key: str) -> int | None:
        value = conf.get(key)
        return int(value) if value and str(value).isdigit() and int(value) > 0 else None

    if number("spark.default.parallelism"):
        return number("spark.default.parallelism")
    if master.startswith("local"):
        return parallelism
    dynamic = str(conf.get("spark.dynamicAllocation.enabled") or "").lower() == "true"
    executors = number("spark.dynamicAllocation.maxExecutors") if dynamic else number("spark.executor.instances")
    cores = number("spark.executor.cores")
    if executors and cores:
        return executors * cores
    return number("spark.cores.max") or parallelism
