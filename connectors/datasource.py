"""The ``kafka-eos`` Spark data source: one name for the Kafka source and the exactly-once sink.

Options and the output schema follow Spark's built-in ``kafka`` source and sink, so moving a
job from ``format("kafka")`` to ``format("kafka-eos")`` is the whole migration.
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from kafka_eos.config.spark_option_table import source_option
from kafka_eos.connectors.schema import RANGE_SCHEMA, source_schema
from kafka_eos.connectors.worker_gc import freeze_loaded


class KafkaEosDataSource(DataSource):
    """Source (batch + streaming) and streaming sink over Kafka, exactly once."""

    @classmethod
    def name(cls) -> str:
        return "kafka-eos"

    def schema(self) -> StructType:
        if source_option("emit").read(self.options) == "offsetRanges":
            return RANGE_SCHEMA
        return source_schema(include_headers=bool(source_option("includeHeaders").read(self.options)))

    def reader(self, schema: StructType):
        from kafka_eos.connectors.source.batch_reader import KafkaBatchReader
        return KafkaBatchReader(dict(self.options), schema)

    def streamReader(self, schema: StructType):
        from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
        reader = KafkaStreamReader(dict(self.options), schema)
        freeze_loaded()
        return reader

    def streamWriter(self, schema: StructType, overwrite: bool):
        from kafka_eos.connectors.sink.query_start import QueryStart  # the sink's start steps, every writer
        writer = QueryStart().writer(dict(self.options), schema)
        freeze_loaded()
        return writer


def register(spark) -> None:
    """Make ``format("kafka-eos")`` available in this SparkSession."""
    spark.dataSource.register(KafkaEosDataSource)
