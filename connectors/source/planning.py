"""Shared by the batch and stream readers: input partitions and the data-loss policy.

Invariants:
- ``input_partitions(start, end)`` covers exactly the offsets in [start, end) of every
  partition (see ``kafka_eos.offsets.ranges``), one or more ``KafkaInputPartition`` per Kafka partition.
- ``apply_data_loss_policy`` either raises ``KafkaDataLossError`` (failOnDataLoss=true) or logs
  each finding's full message as a warning; it never swallows a finding silently.
"""
from __future__ import annotations

import logging
from typing import Iterable, Mapping

from pyspark.sql.datasource import InputPartition

from kafka_eos import KafkaEosError
from kafka_eos.offsets.data_loss import DataLossFinding
from kafka_eos.offsets.model import TopicPartition
from kafka_eos.offsets.ranges import OffsetRange, ranges_between, split_ranges

log = logging.getLogger(__name__)


class KafkaDataLossError(KafkaEosError, RuntimeError):
    """Records the query should have read are gone (failOnDataLoss=true)."""


class KafkaInputPartition(InputPartition):
    """One Spark task's work: one offset range of one Kafka partition (``value`` is the range)."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)


def input_partitions(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                     min_partitions: int | None) -> list[KafkaInputPartition]:
    return [KafkaInputPartition(r) for r in split_ranges(ranges_between(start, end), min_partitions)]


def apply_data_loss_policy(findings: Iterable[DataLossFinding], fail_on_data_loss: bool) -> None:
    findings = list(findings)
    if not findings:
        return
    if fail_on_data_loss:
        raise KafkaDataLossError("\n".join(f.message(failing=True) for f in findings))
    for finding in findings:
        log.warning(finding.message(failing=False))
