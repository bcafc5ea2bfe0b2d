"""Shared by the batch and stream readers: input partitions and the data-loss policy.

Invariants:
- ``input_partitions(start, end)`` covers exactly the offsets in [start, end) of every
  partition (see ``kafka_eos.offsets.ranges``): one or more ranges per Kafka partition, and one
  ``KafkaInputPartition`` per range, or per group of whole ranges when ``maxTasksPerBatch`` caps
  the tasks (``pack_ranges``: the same offsets always give the same tasks in the same order).
- ``batch_tasks`` is the task count a batch is planned with (``task_count``): maxTasksPerBatch when
  set, else the cluster's task slots the data source was registered with (``cores``; unknown:
  this machine's CPUs); the stream reader records it on the batch's end.
- ``apply_data_loss_policy`` either raises ``KafkaDataLossError`` (failOnDataLoss=true) or logs
  each finding's full message as a warning; it never swallows a finding silently.
"""
from __future__ import annotations

import logging
import os
from typing import Iterable, Mapping

from pyspark.sql.datasource import InputPartition

from kafka_eos import KafkaEosError
from kafka_eos.offsets.data_loss import DataLossFinding
from kafka_eos.offsets.model import TopicPartition
from kafka_eos.offsets.ranges import OffsetRange, pack_ranges, ranges_between, split_ranges, task_count

log = logging.getLogger(__name__)


class KafkaDataLossError(KafkaEosError, RuntimeError):
    """Records the query should have read are gone (failOnDataLoss=true)."""


class KafkaInputPartition(InputPartition):
    """One Spark task's work: ``value`` is one offset range, or a tuple of ranges read one after
    the other (a group, ``maxTasksPerBatch``)."""

    def __init__(self, offset_range: OffsetRange | tuple[OffsetRange, ...]) -> None:
        super().__init__(offset_range)

    @property
    def ranges(self) -> tuple[OffsetRange, ...]:
        value = self.value
        return value if isinstance(value, tuple) else (value,)


def task_ranges(partition: object) -> tuple[OffsetRange, ...]:
    """The ranges of a task's input partition (none for the placeholder partition Spark may send)."""
    return partition.ranges if isinstance(partition, KafkaInputPartition) else ()


def input_partitions(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                     min_partitions: int | None, tasks: int | None = None) -> list[KafkaInputPartition]:
    """The batch's tasks: its ranges (split for ``min_partitions``) in at most ``tasks`` groups."""
    groups = pack_ranges(split_ranges(ranges_between(start, end), min_partitions), tasks)
    return [KafkaInputPartition(g[0] if len(g) == 1 else g) for g in groups]


def batch_tasks(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                min_partitions: int | None, cap: int | None, cores: int | None) -> int:
    """The task count of the batch [start, end) (see module invariants)."""
    ranges = split_ranges(ranges_between(start, end), min_partitions)
    return task_count(ranges, cores or os.cpu_count() or 1, cap, min_partitions)


def apply_data_loss_policy(findings: Iterable[DataLossFinding], fail_on_data_loss: bool) -> None:
    findings = list(findings)
    if not findings:
        return
    if fail_on_data_loss:
        raise KafkaDataLossError("\n".join(f.message(failing=True) for f in findings))
    for finding in findings:
        log.warning(finding.message(failing=False))
