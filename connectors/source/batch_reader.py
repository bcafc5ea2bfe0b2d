"""``spark.read.format("kafka-eos")``: one batch over [startingOffsets, endingOffsets).

Invariants:
- Offsets are resolved once, when Spark plans the read (``partitions``): the same read
  plan always reads the same records. "latest" ends are last stable offsets, so only
  decided transactions are read.
- Starting offsets below what Kafka still has, or above the end, follow failOnDataLoss like the
  stream: fail naming topic, partition and offsets, or warn and read from the earliest available.
"""
from __future__ import annotations

import logging

from pyspark.sql.datasource import DataSourceReader
from pyspark.sql.types import StructType

from kafka_eos.connectors.source.arrow_rows import arrow_schema
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.connectors.source.partition_reader import read_partition
from kafka_eos.connectors.source.planning import (KafkaInputPartition, apply_data_loss_policy, batch_tasks,
                                                  input_partitions)
from kafka_eos.connectors.worker_gc import freeze_loaded
from kafka_eos.offsets import model
from kafka_eos.offsets.data_loss import detect
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.offsets.model import Offsets
from kafka_eos.offsets.spec import resolve

log = logging.getLogger(__name__)


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: dict, schema: StructType, cores: int | None = None) -> None:
        self.options = parse_source_options(options, streaming=False)
        self.schema = schema
        self.cores = cores  # the cluster's task slots when registered (None: this machine's CPUs)

    def offset_bounds(self) -> tuple[Offsets, Offsets]:
        """(start, end) per partition, after the data-loss policy."""
        kafka = KafkaOffsets(self.options.admin_conf(), self.options.lookup_timeout_ms / 1000)
        listing = kafka.listing(self.options.subscription)
        missing = self.options.subscription.missing(listing)
        if missing:
            raise ValueError(f"option assign names partitions Kafka does not have: "
                             f"{', '.join(map(model.describe, missing))}. Create them or fix the option.")
        tps = self.options.subscription.select(listing)
        start = resolve(self.options.starting, tps, kafka, self.options.timestamp_strategy)
        assert self.options.ending is not None
        end = resolve(self.options.ending, tps, kafka, self.options.timestamp_strategy)
        earliest, latest = kafka.earliest(tps), kafka.latest(tps)
        findings = detect(start, tps, earliest, latest)
        apply_data_loss_policy(findings, self.options.fail_on_data_loss)
        start.update({f.tp: earliest[f.tp] for f in findings})
        log.info("kafka-eos batch read of %s: %s -> %s", self.options.subscription, start, end)
        return start, end

    def partitions(self) -> list[KafkaInputPartition]:
        start, end = self.offset_bounds()
        tasks = batch_tasks(start, end, self.options.min_partitions, self.options.max_tasks_per_batch, self.cores)
        return input_partitions(start, end, self.options.min_partitions, tasks)

    def read(self, partition):
        freeze_loaded()
        return read_partition(partition, self.options, arrow_schema(self.schema))
