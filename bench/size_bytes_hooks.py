"""A kafka-eos source whose rows carry no value bytes (issue 68, step 1), from the bench job only.

``register(spark)`` registers the data source ``kafka-eos-novalue``: kafka-eos's own source and
sink, except that each Arrow batch the source task hands to Spark has its ``value`` column
replaced by nulls (the fetch, the Arrow build and every other column are unchanged). Run against
the same query on ``kafka-eos``, the difference in the Spark JVM's CPU is what the value bytes
cost it: the source's Arrow into rows, the projection, the rows into the sink's Arrow. The job
pickles this module by value (Spark's Python workers cannot import ``bench``); no production
code is changed or branched.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from kafka_eos.connectors.datasource import KafkaEosDataSource
from kafka_eos.connectors.source.stream_reader import KafkaStreamReader

NAME = "kafka-eos-novalue"


def without_values(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its ``value`` column all nulls (same schema)."""
    index = batch.schema.get_field_index("value")
    return batch.set_column(index, batch.schema.field(index), pa.nulls(batch.num_rows, pa.binary()))


class NoValueStreamReader(KafkaStreamReader):
    def read(self, partition) -> Iterator[pa.RecordBatch]:
        batches = super().read(partition)
        if self.options.emit_ranges:
            return batches
        return (without_values(b) for b in batches)


def register(spark) -> None:
    class NoValueDataSource(KafkaEosDataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def streamReader(self, schema):
            return NoValueStreamReader(dict(self.options), schema)

    spark.dataSource.register(NoValueDataSource)
