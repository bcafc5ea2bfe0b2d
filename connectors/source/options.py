"""Source options -> one frozen ``SourceOptions`` (Spark's built-in Kafka source option names).

The options, their kinds and defaults are declared in ``kafka_eos.config.spark_option_table``
(``SOURCE_OPTIONS``); they are read through those declarations, keys in any case
(``kafka_eos.option_map``; Spark hands Python data sources lower-cased keys, values keep their case).

Invariants:
- Exactly one of subscribe / subscribePattern / assign; ``kafka.bootstrap.servers`` is required.
- Consumers always read with ``isolation.level=read_committed``; asking for read_uncommitted is
  an error, never silently changed. Offsets are never auto-committed or auto-reset: every read
  is an explicit range from Spark's offset log.
- ``alignIdleTimeoutMs`` only with ``alignMaxDriftMs``, and both only for streams.
- Secrets (``kafka_eos.secrets.is_secret_key``: passwords, JAAS configs, tokens, keys) never
  appear in ``repr`` or errors; the principal (``sasl.username``) does.
- ``lookupTimeoutMs`` (default 120000) is the deadline of each driver lookup (topics, offsets);
  one request waits at most 10 s and is retried within it (``kafka_eos.kafka_clients``).
- ``stopMarker`` (streaming only) names a stop marker (``stop_marker``: a path or a URI); while it
  exists the stream plans no new data.
- ``emit=offsetRanges`` (streaming only) makes the rows offset ranges (``range_rows``);
  ``emit=valueRefs`` (streaming only) makes each row's ``value`` a reference to its record
  (``value_refs``), read back by the kafka-eos sink.
- ``replayOffsetLog`` (streaming only) plans each batch as another checkpoint recorded it (``replay``).
- ``checkpointLocation``, ``offsetLogEntry``, ``scanName`` and ``availableNowTarget`` (streaming
  only): where a source without Spark's admission control finds its start (``legacy_reader``: the
  offset log, or its newest entry as the run read it), its name in the offset log, and the end a
  drained ``run --once`` stops at.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Mapping

from kafka_eos import KafkaEosError
from kafka_eos.config.spark_option_table import source_option
from kafka_eos.connectors.source.replay import ReplaySpec
from kafka_eos.kafka_clients import LOOKUP_DEADLINE_MS, admin_settings, data_settings
from kafka_eos.offsets.spec import (OffsetSpec, OffsetSpecError, parse_global_timestamp, parse_offsets,
                          parse_timestamps)
from kafka_eos.offsets.subscription import Subscription, SubscriptionError
from kafka_eos.option_map import OptionMap
from kafka_eos.secrets import redacted

REFUSED_KAFKA = {
    "auto.offset.reset": "set option startingOffsets instead (kafka-eos reads explicit offset ranges)",
    "enable.auto.commit": "kafka-eos never auto-commits; offsets live in Spark's checkpoint "
                          "(set kafka.group.id to publish progress for lag monitoring)",
    "key.deserializer": "keys are always returned as binary; cast or parse them in Spark",
    "value.deserializer": "values are always returned as binary; cast or parse them in Spark",
    "interceptor.classes": "Java interceptors do not apply to the kafka-eos (librdkafka) consumer",
}
REFUSED_OPTIONS = {  # Spark source options kafka-eos does not support
    "minOffsetsPerTrigger": "minOffsetsPerTrigger is not supported by kafka-eos; use a processingTime trigger",
    "maxTriggerDelay": "maxTriggerDelay is not supported by kafka-eos (it only applies with minOffsetsPerTrigger)",
}
CONSUMER_ONLY = ("isolation.level", "group.id", "fetch.", "max.partition.fetch.bytes", "queued.", "check.crcs",
                 "enable.partition.eof", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
                 "partition.assignment.strategy", "group.", "auto.commit", "enable.auto.offset.store")
FETCH_DEFAULTS = {  # throughput defaults; any kafka.* option overrides them
    "max.partition.fetch.bytes": "10485760",
    "queued.min.messages": "1000000",
    # The prefetch bound of a task's consumer: it also fetches past the end of its range, up to
    # this much. 16 MB holds more than one 10 MB partition fetch (librdkafka lowers fetch.max.bytes
    # to it); 128 MB held up to ~100 MB of 1 KB records per task worker that the task never read.
    "queued.max.messages.kbytes": "16384",
    # A full queue is re-checked after 5 ms: at 0 the fetcher spins while the queue is full (+50%
    # of a reader's CPU at 16 MB); librdkafka's 1000 ms default would stall the task.
    "fetch.queue.backoff.ms": "5",
}
JAAS = re.compile(r'(Plain|Scram)LoginModule\s+required.*?username\s*=\s*"([^"]*)".*?password\s*=\s*"([^"]*)"', re.S)


class SourceOptionError(KafkaEosError, ValueError):
    """A source option is missing, malformed or unsafe for exactly-once."""


@dataclass(frozen=True)
class SourceOptions:
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec | None
    timestamp_strategy: str = "error"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    max_tasks_per_batch: int | None = None  # offsets.ranges.task_count; None: the cluster's task slots
    fail_on_data_loss: bool = True
    include_headers: bool = False
    group_id: str | None = None
    group_id_prefix: str = "spark-kafka-source"
    poll_timeout_ms: int = 120_000
    lookup_timeout_ms: int = LOOKUP_DEADLINE_MS  # deadline of each driver lookup (kafka_clients.TIMEOUTS)
    align_max_drift_ms: int | None = None   # event-time alignment (kafka_eos.offsets.alignment); None: off
    align_idle_timeout_ms: int = 30_000
    stop_marker: str | None = None    # while this marker exists, latestOffset plans no new data
    emit_ranges: bool = False         # emit=offsetRanges: rows are offset ranges (connectors.source.range_rows)
    emit_value_refs: bool = False     # emit=valueRefs: each value is its record's reference (source.value_refs)
    replay: ReplaySpec | None = None  # replayOffsetLog: batches as a recorded offset log planned them
    checkpoint: str | None = None     # the query's checkpoint (pyspark 4.0/4.1: the start after a restart)
    scan_name: str | None = None      # this scan's name, recorded on its batch ends
    target: str | None = None         # availableNowTarget: never plan past these offsets (JSON topics map)
    offset_log_entry: str | None = None  # the newest offset-log entry as the run read it (4.0/4.1's start)
    kafka_items: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def kafka_conf(self) -> dict[str, str]:
        """The ``kafka.*`` options without the prefix (secrets included: never log this)."""
        return dict(self.kafka_items)

    def admin_conf(self) -> dict[str, str]:
        """Client settings for the driver's AdminClient (consumer-only settings removed)."""
        return admin_settings({k: v for k, v in self.kafka_items if not k.startswith(CONSUMER_ONLY)})

    def consumer_conf(self) -> dict[str, str]:
        """Executor consumer settings: assign-only, read_committed, no auto commit or reset; data-path
        socket timeout and keepalive unless set (``kafka_clients.TIMEOUTS["reader.fetch"]``)."""
        conf = data_settings({**FETCH_DEFAULTS, **self.kafka_conf})
        conf.update({"group.id": self.group_id or f"{self.group_id_prefix}-{uuid.uuid4().hex}",
                     "isolation.level": "read_committed", "enable.auto.commit": "false",
                     "enable.auto.offset.store": "false", "auto.offset.reset": "error",
                     "enable.partition.eof": "false"})
        return conf

    def __repr__(self) -> str:
        return (f"SourceOptions({self.subscription}, starting={self.starting.kind}, "
                f"ending={self.ending.kind if self.ending else None}, maxOffsetsPerTrigger={self.max_offsets_per_trigger}, "
                f"minPartitions={self.min_partitions}, maxTasksPerBatch={self.max_tasks_per_batch}, "
                f"alignMaxDriftMs={self.align_max_drift_ms}, emitRanges={self.emit_ranges}, "
                f"emitValueRefs={self.emit_value_refs}, "
                f"failOnDataLoss={self.fail_on_data_loss}, "
                f"kafka={redacted(self.kafka_conf)})")


def _read(options: Mapping[str, str], name: str):
    return source_option(name).read(options, SourceOptionError)


def _stream_only(options: Mapping[str, str], name: str, streaming: bool) -> str | None:
    value = _read(options, name)
    if value is not None and not streaming:
        raise SourceOptionError(f"option {name} is for streaming queries (spark.readStream); remove it")
    return str(value) if value else None


def _alignment(options: Mapping[str, str], streaming: bool) -> tuple[int | None, int]:
    drift, idle = _read(options, "alignMaxDriftMs"), _read(options, "alignIdleTimeoutMs")
    idle_given = source_option("alignIdleTimeoutMs").given(options)
    if (drift is not None or idle_given) and not streaming:
        raise SourceOptionError("options alignMaxDriftMs/alignIdleTimeoutMs are for streaming queries "
                                "(spark.readStream); a batch query reads its whole range at once")
    if idle_given and drift is None:
        raise SourceOptionError("option alignIdleTimeoutMs needs alignMaxDriftMs (which turns alignment on)")
    return drift, idle


def _tasks_cap(options: Mapping[str, str]) -> int | None:
    """maxTasksPerBatch, refused below minPartitions (split into more tasks than allowed)."""
    cap, least = _read(options, "maxTasksPerBatch"), _read(options, "minPartitions")
    if cap is not None and least is not None and least > cap:
        raise SourceOptionError(f"option minPartitions ({least}) is above maxTasksPerBatch ({cap}): a batch cannot be "
                                "split into more tasks than it may use; lower minPartitions or raise maxTasksPerBatch")
    return cap


def _kafka_conf(options: Mapping[str, str]) -> dict[str, str]:
    conf = OptionMap.of(options).with_prefix("kafka.")
    if not conf.get("bootstrap.servers"):
        raise SourceOptionError("option kafka.bootstrap.servers is required (e.g. .option('kafka.bootstrap.servers', "
                                "'broker1:9092,broker2:9092'))")
    for key, fix in REFUSED_KAFKA.items():
        if key in conf:
            raise SourceOptionError(f"option kafka.{key} is not supported by the kafka-eos source: {fix}")
    isolation = conf.pop("isolation.level", "read_committed").strip().lower()
    if isolation != "read_committed":
        raise SourceOptionError(f"option kafka.isolation.level={isolation} would expose aborted and uncommitted "
                                "transactional records and break exactly-once; remove it (kafka-eos always "
                                "reads read_committed)")
    jaas = conf.pop("sasl.jaas.config", None)
    if jaas is not None:  # migrate the Java client's JAAS line to librdkafka settings
        match = JAAS.search(jaas)
        if not match:
            raise SourceOptionError("option kafka.sasl.jaas.config: only PlainLoginModule / ScramLoginModule with "
                                    "username and password can be translated; set kafka.sasl.username and "
                                    "kafka.sasl.password instead")
        conf.setdefault("sasl.username", match.group(2))
        conf.setdefault("sasl.password", match.group(3))
    conf.pop("group.id", None)
    return conf


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [(kind, options[kind]) for kind in ("subscribe", "subscribePattern", "assign")
             if options.get(kind) not in (None, "")]
    if len(given) != 1:
        names = ", ".join(k for k, _ in given) or "none"
        raise SourceOptionError(f"set exactly one of the options subscribe, subscribePattern, assign (got: {names}); "
                                "e.g. .option('subscribe', 'orders')")
    kind, text = given[0]
    try:
        return Subscription.parse(kind, str(text))  # type: ignore[arg-type]
    except SubscriptionError as exc:
        raise SourceOptionError(str(exc)) from None


def _offset_spec(options: Mapping[str, str], prefix: str, default: str, streaming: bool) -> OffsetSpec:
    ending = prefix == "ending"
    timestamp, by_timestamp, offsets = (source_option(f"{prefix}{n}") for n in ("Timestamp", "OffsetsByTimestamp",
                                                                                   "Offsets"))
    if timestamp.given(options):
        return parse_global_timestamp(timestamp.name, str(timestamp.read(options)))
    if by_timestamp.given(options):
        return parse_timestamps(by_timestamp.name, str(by_timestamp.read(options)))
    spec = parse_offsets(offsets.name, str(offsets.read(options) or default), ending=ending)
    if not streaming and not ending and (spec.kind == "latest" or -1 in spec.as_dict().values()):
        raise OffsetSpecError("option startingOffsets=latest is not allowed in a batch query (it would read "
                              "nothing); use 'earliest' or JSON offsets")
    return spec


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Validate ``options`` (keys in any case) into ``SourceOptions``; raise ``SourceOptionError``."""
    options = OptionMap.of(options)
    for key, fix in REFUSED_OPTIONS.items():
        if key in options:
            raise SourceOptionError(fix)
    if streaming and any(k in options for k in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp")):
        raise SourceOptionError("option endingOffsets is for batch queries (spark.read); a stream has no end. "
                                "Remove it, or use Trigger.AvailableNow to stop at the data present at start")
    strategy = _read(options, "startingOffsetsByTimestampStrategy")
    kafka = _kafka_conf(options)
    try:
        starting = _offset_spec(options, "starting", "latest" if streaming else "earliest", streaming)
        ending = None if streaming else _offset_spec(options, "ending", "latest", streaming)
    except OffsetSpecError as exc:
        raise SourceOptionError(str(exc)) from None
    group = options.get("kafka.group.id")
    drift, idle = _alignment(options, streaming)
    marker = _read(options, "stopMarker")
    if marker is not None and not streaming:
        raise SourceOptionError("option stopMarker is for streaming queries (spark.readStream); remove it")
    emit = _read(options, "emit")
    if emit != "records" and not streaming:
        raise SourceOptionError(f"option emit={emit} is for streaming queries into the kafka-eos sink "
                                "(spark.readStream); remove it")
    replay = _read(options, "replayOffsetLog")
    if replay is not None and not streaming:
        raise SourceOptionError("option replayOffsetLog is for streaming queries (spark.readStream); remove it")
    try:
        replay_spec = ReplaySpec.parse(str(replay)) if replay else None
    except ValueError as exc:
        raise SourceOptionError(str(exc)) from None
    checkpoint, scan_name, target, entry = (_stream_only(options, name, streaming) for name in
                                            ("checkpointLocation", "scanName", "availableNowTarget", "offsetLogEntry"))
    return SourceOptions(
        subscription=_subscription(options),
        starting=starting,
        ending=ending,
        timestamp_strategy=strategy,
        max_offsets_per_trigger=_read(options, "maxOffsetsPerTrigger"),
        min_partitions=_read(options, "minPartitions"),
        max_tasks_per_batch=_tasks_cap(options),
        fail_on_data_loss=_read(options, "failOnDataLoss"),
        include_headers=_read(options, "includeHeaders"),
        group_id=str(group) if group else None,
        group_id_prefix=str(_read(options, "groupIdPrefix")),
        poll_timeout_ms=_read(options, "kafkaConsumer.pollTimeoutMs"),
        lookup_timeout_ms=_read(options, "lookupTimeoutMs"),
        align_max_drift_ms=drift,
        align_idle_timeout_ms=idle,
        stop_marker=str(marker) if marker else None,
        emit_ranges=emit == "offsetRanges",
        emit_value_refs=emit == "valueRefs",
        replay=replay_spec,
        checkpoint=checkpoint,
        scan_name=scan_name,
        target=target,
        offset_log_entry=entry,
        kafka_items=tuple(sorted(kafka.items())),
    )
