"""Every Spark option of the kafka-eos source and sink, declared once (name, kind, default, YAML key, doc).

As Spark's ``KafkaSourceProvider`` keeps its option names as constants, this table is the one
place an option is named: ``connectors.pipeline.spark_options`` writes the option maps from the
YAML model through it, ``connectors.source.options`` / ``connectors.sink.options`` read them back
through it, ``config.rules.option_conflicts`` takes the YAML key that already sets an option from
it, and the option tables of ``config/README.md`` are generated from it (``config.option_docs``;
a unit test fails when they drift).

It lives in ``config`` (pure data, no pyspark) because the config rules read its YAML keys and
``config`` is below ``connectors``. ``kafka.*`` options other than those declared here are client
settings, passed through (``<side>.kafka.properties``).
"""
from __future__ import annotations

from typing import Mapping

from kafka_eos.config.spark_option import Kind, SparkOption
from kafka_eos.kafka_clients import COMMIT_DEADLINE_MS, LOOKUP_DEADLINE_MS
from kafka_eos.txn.topics.prefix_claim import DEFAULT_CLAIM_TOPIC
from kafka_eos.txn.log.sink_log_segments import DEFAULT_EVIDENCE_RETENTION_MS
from kafka_eos.txn.protocol.timeouts import DEFAULT_BATCH_MARGIN_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_eos.txn.protocol.transactional_ids import DEFAULT_SLOTS


def _source(name: str, kind: Kind, default, doc: str, yaml: str | None = None, **more) -> SparkOption:
    return SparkOption(name, "source", kind, default, doc, yaml, **more)


def _sink(name: str, kind: Kind, default, doc: str, yaml: str | None = None, **more) -> SparkOption:
    return SparkOption(name, "sink", kind, default, doc, yaml, **more)


T, B, INT, P, N, C = Kind.TEXT, Kind.BOOL, Kind.INT, Kind.POSITIVE, Kind.NON_NEGATIVE, Kind.CHOICE

SOURCE_OPTIONS: tuple[SparkOption, ...] = (
    _source("kafka.bootstrap.servers", T, None, "required: `host:port[,host:port...]`",
            "source.kafka.bootstrap_servers"),
    _source("subscribe", T, None, "comma-separated topics; exactly one of subscribe / subscribePattern / assign",
            "source.topics"),
    _source("subscribePattern", T, None, "topic regex", "source.pattern"),
    _source("assign", T, None, 'JSON `{"topic": [partition, ...]}`', "source.assign"),
    _source("startingOffsets", T, None, "`earliest`, `latest` or JSON offsets; default `latest` for a stream, "
            "`earliest` for a batch query", "source.starting_offsets"),
    _source("startingTimestamp", T, None, "start at the first record at or after this time (ms)"),
    _source("startingOffsetsByTimestamp", T, None, 'JSON `{"topic": {"partition": ms}}`'),
    _source("startingOffsetsByTimestampStrategy", C, "error",
            "a partition with no record at or after the timestamp: `error` or `latest`", choices=("error", "latest")),
    _source("endingOffsets", T, None, "batch queries only: `latest` (default) or JSON offsets"),
    _source("endingTimestamp", T, None, "batch queries only: end at this time (ms)"),
    _source("endingOffsetsByTimestamp", T, None, 'batch queries only: JSON `{"topic": {"partition": ms}}`'),
    _source("maxOffsetsPerTrigger", P, None, "offsets per micro-batch at most (default unlimited)",
            "source.max_offsets_per_trigger"),
    _source("minPartitions", P, None, "split partitions into at least this many Spark tasks"),
    _source("maxTasksPerBatch", P, None, "read each batch in at most this many Spark tasks (whole offset ranges "
            "grouped, balanced by records; each task is one sink transaction); default: the cluster's task slots "
            "(README: Tasks per batch), recorded with each batch so a replay keeps its tasks"),
    _source("failOnDataLoss", B, True, "stop when planned offsets were deleted (else skip them with a warning)"),
    _source("includeHeaders", B, False, "expose the record headers as a `headers` column", "source.include_headers"),
    _source("groupIdPrefix", T, "spark-kafka-source", "prefix of the executors' generated consumer group ids"),
    _source("kafkaConsumer.pollTimeoutMs", P, 120_000, "a task reading a range that makes no progress for this "
            "long fails (ms)"),
    _source("lookupTimeoutMs", P, LOOKUP_DEADLINE_MS, "deadline of each driver lookup: topics, offsets (ms)"),
    _source("alignMaxDriftMs", N, None, "event-time alignment: no partition reads ahead of the slowest by more "
            "than this much record time (ms); streams only", "source.align.max_drift"),
    _source("alignIdleTimeoutMs", N, 30_000, "a partition whose log end has not moved for this long is idle (ms); "
            "needs alignMaxDriftMs", "source.align.idle_timeout"),
    _source("stopMarker", T, None, "streams only: while this local file exists no new data is planned"),
    _source("emit", C, "records", "`offsetRanges` (streams only): one row per offset range instead of the records; "
            "the kafka-eos sink reads and writes them in one process (a copy without transform; the sink needs the "
            "source's options, each prefixed `source.`); `valueRefs` (streams only): each row's `value` is a reference to its "
            "record, which the kafka-eos sink reads back (a query that hands `value` to the sink unchanged)",
            choices=("records", "offsetRanges", "valueRefs")),
    _source("replayOffsetLog", T, None, "streams only: plan each batch as another checkpoint's offset log recorded "
            "it, `{\"recorded\": <checkpoint>, \"into\": <this query's checkpoint>, \"through\": <batch>}` "
            "(what `verify --recompute` runs)"),
    _source("checkpointLocation", T, None, "streams on pyspark 4.0/4.1 only (required there): the query's own checkpoint, "
            "where the source reads the start of its next batch after a restart (Spark's offset log)"),
    _source("offsetLogEntry", T, None, "streams on pyspark 4.0/4.1: the newest entry of the query's offset log, "
            "`{\"batch\": <id>, \"text\": <the file's text>}`, as the run read it in the driver before the start "
            "(through Spark's Hadoop); the source takes its start from it instead of reading checkpointLocation"),
    _source("scanName", T, None, "streams: a name for this scan, distinct among the kafka-eos scans of one query "
            "(needed on pyspark 4.0/4.1 when two scans read the same topics)"),
    _source("availableNowTarget", T, None, "streams: never plan past these offsets (`{topic: {partition: offset}}`, "
            "JSON); how `kafka-eos run --once` stops on pyspark 4.0/4.1"),
)

SINK_OPTIONS: tuple[SparkOption, ...] = (
    _sink("kafka.bootstrap.servers", T, None, "required: `host:port[,host:port...]`", "sink.kafka.bootstrap_servers"),
    _sink("topic", T, None, "output topic (else each row's `topic` column)", "sink.topic"),
    _sink("transactional.id.prefix", T, None, "required: a name unique to this query, kept across restarts",
          "sink.transactional_id_prefix"),
    _sink("checkpointLocation", T, None, "the query's checkpoint; the sink log lives beside it",
          "checkpoint.location"),
    _sink("kafka.transaction.timeout.ms", INT, DEFAULT_TRANSACTION_TIMEOUT_MS, "producer transaction timeout (ms)",
          "sink.transaction_timeout_ms"),
    _sink("trigger.interval.ms", INT, 0, "the query's trigger interval, for the timeout rule (ms)",
          "checkpoint.trigger"),
    _sink("batch.margin.ms", INT, DEFAULT_BATCH_MARGIN_MS, "slowest batch + driver restart, for the timeout rule (ms)",
          "sink.batch_margin_ms"),
    _sink("fixedPartitions", B, False, "an output topic that gained partitions stops the query (else a warning)",
          "sink.fixed_partitions"),
    _sink("writeEvidence", B, True, "exactly-once: each task records its record count and digest per output "
          "partition for `kafka-eos verify` (false: its batches cannot be verified)"),
    _sink("copyTimestamps", B, True, "offset-range input (`emit=offsetRanges`): each record keeps its source "
          "record's timestamp, as MirrorMaker copies it (false: the producer's clock; YAML: "
          "`sink.timestamp_column: null` on a copy)"),
    _sink("evidenceRetentionMs", N, DEFAULT_EVIDENCE_RETENTION_MS, "how long the sink log keeps each committed "
          "batch's record, the evidence `kafka-eos verify` reads (ms; the newest 100 batches are always kept)",
          "sink.evidence_retention_ms"),
    _sink("guarantee", C, "exactly_once", "`at_least_once`: plain idempotent producers, no transactions",
          "guarantee",
          choices=("exactly_once", "at_least_once")),
    _sink("queryId", T, None, "the query id of the checkpoint (Spark's `<checkpointLocation>/metadata`), as the "
          "run read or wrote it in the driver before the start; the sink then does not read it itself"),
    _sink("sinkLogLocation", T, None, "where the sink log lives (default `<checkpointLocation>/kafka-eos-sink`)"),
    _sink("transactional.id.slots", INT, DEFAULT_SLOTS, "transactional ids per sink partition"),
    _sink("commit.timeout.ms", INT, COMMIT_DEADLINE_MS, "deadline of the driver's commit of one batch (ms)"),
    _sink("batchLog", B, True, "one INFO line per committed batch on the driver's stderr"),
    _sink("prefixClaim", C, "broker", "`broker`: claim the prefix on the cluster at start; `off`: do not",
          choices=("broker", "off")),
    _sink("prefixClaimTopic", T, DEFAULT_CLAIM_TOPIC, "the compacted topic of the prefix claims"),
    _sink("faultInjection", T, None, "test hook: `point[@batch][,...]` where the sink pauses", test_only=True),
    _sink("faultInjectionDir", T, "/tmp", "test hook: the directory of the pause markers", test_only=True),
)

_BY_SIDE = {"source": {o.key: o for o in SOURCE_OPTIONS}, "sink": {o.key: o for o in SINK_OPTIONS}}


def declared(side: str, name: str) -> SparkOption:
    """The declaration of option ``name`` (any case) of ``side``; ``KeyError`` for an undeclared one."""
    return _BY_SIDE[side][name.lower()]


def source_option(name: str) -> SparkOption:
    return declared("source", name)


def sink_option(name: str) -> SparkOption:
    return declared("sink", name)


def yaml_keys(side: str) -> Mapping[str, str]:
    """Lower-cased option name -> the YAML key that sets it, for the options a YAML key sets."""
    return {key: o.yaml for key, o in _BY_SIDE[side].items() if o.yaml}
