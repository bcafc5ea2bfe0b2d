"""One start for every scan of a plan: ``startingOffsets`` resolved once, in the driver.

A pipeline with a DLQ reads its source in two scans (two sources in Spark's checkpoint, see
``kafka_eos.connectors.pipeline.builder.scans_per_batch``). Left to themselves, both scans resolve
``latest`` or a timestamp in their own ``initialOffset()``, a moment apart, and could start at
different offsets: a record between the two starts would reach one branch only (a poison
record missing from the DLQ, or a good one missing from the output). ``pin_start`` resolves
the start once and hands every scan the same explicit offsets.

``available_now_target`` likewise takes one end for every scan (``pipeline.drain``).

It matters only for a new query: a restarted one reads batch 0 from the start recorded in its
offset log, and later batches from the log itself (see ``stream_reader``).
"""
from __future__ import annotations

import json
from typing import Mapping

from kafka_eos.config.spark_option_table import source_option
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.offsets import model
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.offsets.spec import resolve

_STARTING = {source_option(name).key for name in ("startingOffsets", "startingTimestamp",
                                                  "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy")}


def pin_start(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` with the starting-offset options replaced by the offsets they resolve to now
    (unchanged when no partition is read yet: the source then resolves as usual)."""
    parsed = parse_source_options(options, streaming=True)
    kafka = KafkaOffsets(parsed.admin_conf(), parsed.lookup_timeout_ms / 1000)
    partitions = parsed.subscription.select(kafka.listing(parsed.subscription))
    if not partitions:
        return dict(options)
    start = resolve(parsed.starting, partitions, kafka, parsed.timestamp_strategy)
    pinned = {k: v for k, v in options.items() if k.lower() not in _STARTING}
    pinned[source_option("startingOffsets").name] = json.dumps(model.encode(start)["topics"])
    return pinned


def available_now_target(options: Mapping[str, str]) -> dict[str, str]:
    """The source option ``availableNowTarget``: the subscription's read_committed ends now (what
    Trigger.AvailableNow's preparation takes), one target for every scan of the query."""
    parsed = parse_source_options(options, streaming=True)
    kafka = KafkaOffsets(parsed.admin_conf(), parsed.lookup_timeout_ms / 1000)
    latest = kafka.latest(kafka.partitions(parsed.subscription))
    return {source_option("availableNowTarget").name: json.dumps(model.encode(latest)["topics"])}
