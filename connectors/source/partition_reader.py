"""Executor side: read a task's offset ranges as Arrow batches (or the sink's message lists).

Invariants:
- A task's ranges are read in waves of up to ``WAVE_RANGES``, one consumer per wave assigned at
  the start of each of its ranges at once (no group subscription, no commits), reading with
  ``isolation.level=read_committed``: aborted records are never returned. A range's partition
  is unassigned when the range is done; two ranges of one partition are in different waves, in
  offset order. Each range follows ``RangeReader``'s rules.
- Every consumer is closed however the task ends.
- The consumer comes from ``new_consumer`` (``kafka_eos.client_factory.consumer`` by default).
"""
from __future__ import annotations

import itertools
from typing import Callable, Iterable, Iterator, TypeVar, cast

import pyarrow as pa
from confluent_kafka import Consumer, Message

from kafka_eos import client_factory
from kafka_eos.client_factory import ConsumerFactory
from kafka_eos.connectors.source.arrow_rows import to_record_batches
from kafka_eos.connectors.source.options import SourceOptions
from kafka_eos.connectors.source.planning import task_ranges
from kafka_eos.connectors.source.range_reader import RangeReader, check_error
from kafka_eos.offsets.ranges import OffsetRange

T = TypeVar("T")
Read = Callable[[RangeReader, list[Message]], Iterable[T]]

BATCH_RECORDS = 20_000  # ~2 MB of 100-byte records: measured fastest (cache-sized Arrow batches)
# A consume asks for at most about this many bytes of keys and values (the size of the last
# consume's records, sampled): 2 MB is 20,000 records of 100 B but only 2,000 of 1 KB. One task
# reading 62,500 records of 1 KB outside Spark, 3 rounds: 139-224 ms and CPU 162-219 ms at 2,000
# per consume against 336-522 ms and 325-398 ms at 20,000; the worker's peak RSS +53 MB instead of +123-131.
BATCH_BYTES = 2_000_000
SAMPLED = 8  # records of a consume whose sizes estimate the next one's
# librdkafka's consume returns when it holds the asked count or at this timeout. A range that ends
# at the partition's end on a transaction marker never gets its count (the marker is no record),
# so each such range waited the whole slice: 100 ms before (4 ranges of 500 records: 407 -> 46 ms).
POLL_SLICE_S = 0.01
# A consume asks for no fewer (a range a few records from its end does not make the others'
# records come a few at a time); past a range's end at most this many become Python objects.
LEAST_ASKED = 1_000
# Ranges read at once by one consumer. Re-assigning a consumer waits for its fetch in flight
# (fetch.wait.max.ms, 500 ms), so every wave gets its own. Outside Spark (medians of interleaved
# rounds, consumer per range -> waves of 4): 4 ranges of 500 records 23-25 -> 10-11 ms (CPU 8 ->
# 3.5 ms); 16 ranges of 15,600 records, wall 258-298 -> 268-284 ms but CPU 243-270 -> 287-315 ms
# (all 16 at once: CPU 368 ms). In Spark the 16-partition cell still gained 1.17-1.33x.
WAVE_RANGES = 4


def read_partition(partition: object, options: SourceOptions, schema: pa.Schema,
                   new_consumer: ConsumerFactory = client_factory.consumer) -> Iterator[pa.RecordBatch]:
    """Batches of the partition's ranges (nothing for the placeholder partition Spark may send)."""
    return read_ranges(_readers(task_ranges(partition), options, schema), options, new_consumer, _arrow)


def read_messages(ranges: Iterable[OffsetRange], options: SourceOptions,
                  new_consumer: ConsumerFactory = client_factory.consumer) -> Iterator[list[Message]]:
    """The records of ``ranges`` as lists of confluent-kafka messages (the sink's own read of
    ``emit=offsetRanges`` input), under the same rules as ``read_partition``."""
    return read_ranges(_readers(ranges, options, None), options, new_consumer, _messages)


def _readers(ranges: Iterable[OffsetRange], options: SourceOptions, schema: pa.Schema | None) -> list[RangeReader]:
    """A reader per non-empty range."""
    return [RangeReader(r, options, schema) for r in ranges if isinstance(r, OffsetRange) and r.size > 0]


def _arrow(reader: RangeReader, messages: list[Message]) -> Iterable[pa.RecordBatch]:
    assert reader.schema is not None, "a reader of Arrow batches is built with the source schema"
    return to_record_batches(messages, reader.rng.topic, reader.rng.partition, reader.schema)


def _messages(reader: RangeReader, messages: list[Message]) -> Iterable[list[Message]]:
    return (messages,)


def read_ranges(readers: list[RangeReader], options: SourceOptions, new_consumer: ConsumerFactory,
                read: Read[T]) -> Iterator[T]:
    """The ranges in waves, a consumer per wave; the next wave's consumer is opened (librdkafka
    starts fetching) while the current wave is read."""
    groups = waves(readers)
    consumers: list[Consumer | None] = [None] * len(groups)
    try:
        for i, wave in enumerate(groups):
            for k in range(i, min(i + 2, len(groups))):
                consumers[k] = consumers[k] or _assigned(new_consumer(options.consumer_conf()), groups[k])
            yield from _read_wave(cast(Consumer, consumers[i]), wave, read)
            _close(consumers, i)
    finally:
        for i in range(len(consumers)):
            _close(consumers, i)


def waves(readers: list[RangeReader]) -> list[list[RangeReader]]:
    """Consecutive groups of at most ``WAVE_RANGES`` in which no partition comes twice (a consumer
    assigns a partition once)."""
    groups: list[list[RangeReader]] = []
    for reader in readers:
        if not groups or len(groups[-1]) >= WAVE_RANGES or any(r.ktp == reader.ktp for r in groups[-1]):
            groups.append([])
        groups[-1].append(reader)
    return groups


def _assigned(consumer: Consumer, readers: list[RangeReader]) -> Consumer:
    try:
        consumer.incremental_assign([r.position() for r in readers])
    except BaseException:
        consumer.close()
        raise
    return consumer


def _close(consumers: list[Consumer | None], i: int) -> None:
    consumer, consumers[i] = consumers[i], None
    if consumer is not None:
        consumer.close()


def _read_wave(consumer: Consumer, readers: list[RangeReader], read: Read[T]) -> Iterator[T]:
    key_of, active = _keys(readers)
    for reader in readers:
        reader.begin()
    record_bytes = 0
    while active:
        messages = consumer.consume(num_messages=_asked(active.values(), record_bytes), timeout=POLL_SLICE_S)
        record_bytes = _record_bytes(messages) or record_bytes
        served = set()
        for key, part in _runs(messages, key_of):
            owner = active.get(key)
            if owner is None:
                _stray(part)
                continue
            served.add(key)
            got = owner.accept(consumer, part)
            if got:
                yield from read(owner, got)
        idle = [r for key, r in active.items() if key not in served and not r.done]
        if idle:
            for reader, tp in zip(idle, consumer.position([r.ktp for r in idle]), strict=True):
                reader.positioned(tp.offset)
        finished = [key for key, r in active.items() if r.done]
        if finished:
            consumer.incremental_unassign([active.pop(key).ktp for key in finished])


def _asked(readers: Iterable[RangeReader], record_bytes: int = 0) -> int:
    """How many messages one consume asks for: about ``BATCH_BYTES`` of records of
    ``record_bytes`` (0: not known yet) and at most what the closest-to-done range still
    needs (or ``LEAST_ASKED``), so that little past a range's end becomes Python objects; its
    partition is unassigned before the next consume, which drops the rest in librdkafka."""
    left = [r.rng.end - r.next_offset for r in readers]
    by_bytes = max(1, BATCH_BYTES // record_bytes) if record_bytes else BATCH_RECORDS
    return min(BATCH_RECORDS, by_bytes, sum(left), max(min(left), LEAST_ASKED))


def _record_bytes(messages: list[Message]) -> int:
    """The mean key + value size of up to ``SAMPLED`` of ``messages``, spread over them (0 if none)."""
    if not messages:
        return 0
    sample = messages[::max(1, len(messages) // SAMPLED)][:SAMPLED]
    return max(1, sum(len(m.value() or b"") + len(m.key() or b"") for m in sample) // len(sample))


def _keys(readers: list[RangeReader]) -> tuple[Callable[[Message], object], dict[object, RangeReader]]:
    """How a message finds its range: by partition alone when the task reads one topic (the
    common case; a C-level call per message), else by topic and partition."""
    if len({r.rng.topic for r in readers}) == 1:
        return Message.partition, {r.rng.partition: r for r in readers}
    return _topic_partition, {(r.rng.topic, r.rng.partition): r for r in readers}


def _runs(messages: list[Message], key_of: Callable[[Message], object]) -> Iterator[tuple[object, list[Message]]]:
    """Consecutive messages of one partition, as slices (keys listed and grouped in C: a Python
    call per message cost a quarter of the read)."""
    at = 0
    for key, same in itertools.groupby(list(map(key_of, messages))):
        n = len(list(same))
        yield key, messages[at: at + n]
        at += n


def _topic_partition(message: Message) -> tuple[str | None, int | None]:
    return message.topic(), message.partition()


def _stray(messages: Iterable[Message]) -> None:
    """Messages of no active range: records fetched past a done range's end are dropped; errors
    not about one partition (a broker down) are checked like a range's."""
    for message in messages:
        err = message.error()
        if err is not None:
            check_error(err, "the task's ranges")
