"""Source options: validation, read_committed enforcement, secret redaction."""
import pickle

import pytest

from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options
from kafka_eos.secrets import redacted

BASE = {"kafka.bootstrap.servers": "b:9092", "subscribe": "orders"}


def opts(streaming=True, **extra):
    return parse_source_options({**BASE, **extra}, streaming=streaming)


def test_defaults_match_spark():
    o = opts()
    assert o.starting.kind == "latest" and o.ending is None
    assert o.fail_on_data_loss and not o.include_headers and o.max_offsets_per_trigger is None
    b = opts(streaming=False)
    assert b.starting.kind == "earliest" and b.ending.kind == "latest"


def test_keys_in_any_case():
    o = parse_source_options({"kafka.bootstrap.servers": "b:1", "subscribePattern": "o.*",
                              "maxOffsetsPerTrigger": "10", "minPartitions": "4", "failOnDataLoss": "False",
                              "includeHeaders": "true", "startingOffsets": "earliest"}, streaming=True)
    assert (o.subscription.pattern, o.max_offsets_per_trigger, o.min_partitions) == ("o.*", 10, 4)
    assert not o.fail_on_data_loss and o.include_headers and o.starting.kind == "earliest"


def test_consumer_conf_forces_exactly_once_settings():
    conf = opts(**{"kafka.fetch.max.bytes": "1000", "kafka.isolation.level": "read_committed"}).consumer_conf()
    assert conf["isolation.level"] == "read_committed"
    assert conf["enable.auto.commit"] == "false" and conf["auto.offset.reset"] == "error"
    assert conf["fetch.max.bytes"] == "1000" and conf["bootstrap.servers"] == "b:9092"
    assert conf["group.id"].startswith("spark-kafka-source-")
    assert opts(**{"kafka.group.id": "mon"}).consumer_conf()["group.id"] == "mon"
    assert "isolation.level" not in opts().admin_conf()


def test_consumer_prefetch_is_bounded_and_overridable():
    """A task's consumer prefetches at most 16 MB (it also reads past its range's end), more than
    one 10 MB partition fetch, and re-checks a full queue after 5 ms; kafka.* options override both."""
    conf = opts().consumer_conf()
    assert conf["queued.max.messages.kbytes"] == "16384"
    assert int(conf["queued.max.messages.kbytes"]) * 1024 > int(conf["max.partition.fetch.bytes"])
    assert conf["fetch.queue.backoff.ms"] == "5"  # 0 spins the fetcher while the bounded queue is full
    assert opts(**{"kafka.queued.max.messages.kbytes": "65536"}).consumer_conf()["queued.max.messages.kbytes"] == "65536"


@pytest.mark.parametrize("extra, match", [
    ({"kafka.isolation.level": "read_uncommitted"}, "kafka.isolation.level=read_uncommitted"),
    ({"kafka.auto.offset.reset": "earliest"}, "startingOffsets"),
    ({"kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit"),
    ({"subscribePattern": "x"}, "exactly one of"),
    ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger=0"),
    ({"maxOffsetsPerTrigger": "ten"}, "maxOffsetsPerTrigger"),
    ({"failOnDataLoss": "yes"}, "failOnDataLoss"),
    ({"endingOffsets": "latest"}, "batch queries"),
    ({"startingOffsets": "{oops"}, "startingOffsets"),
    ({"minOffsetsPerTrigger": "5"}, "not supported"),
    ({"startingOffsetsByTimestampStrategy": "closest"}, "error' or 'latest"),
])
def test_errors_name_the_option(extra, match):
    with pytest.raises(SourceOptionError, match=match):
        opts(**extra)


def test_missing_bootstrap_and_subscription():
    with pytest.raises(SourceOptionError, match="kafka.bootstrap.servers"):
        parse_source_options({"subscribe": "a"}, streaming=True)
    with pytest.raises(SourceOptionError, match="exactly one of"):
        parse_source_options({"kafka.bootstrap.servers": "b"}, streaming=True)


def test_batch_refuses_latest_start():
    with pytest.raises(SourceOptionError, match="batch query"):
        opts(streaming=False, startingOffsets="latest")


def test_secrets_never_shown():
    secret = "hunter2-very-secret"
    o = opts(**{"kafka.sasl.password": secret, "kafka.security.protocol": "SASL_SSL",
                "kafka.ssl.key.password": secret})
    assert secret not in repr(o) and "SASL_SSL" in repr(o)
    assert redacted(o.kafka_conf)["sasl.password"] == "***"
    assert o.consumer_conf()["sasl.password"] == secret  # the client still gets it
    assert pickle.loads(pickle.dumps(o)) == o


def test_jaas_config_translated_and_hidden():
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="svc" password="p@ss";')
    o = opts(**{"kafka.sasl.jaas.config": jaas})
    assert (o.kafka_conf["sasl.username"], o.kafka_conf["sasl.password"]) == ("svc", "p@ss")
    assert "p@ss" not in repr(o)
    with pytest.raises(SourceOptionError, match="sasl.username") as err:
        opts(**{"kafka.sasl.jaas.config": "com.example.Custom required secret=\"zzz\";"})
    assert "zzz" not in str(err.value)


def test_alignment_options():
    assert opts().align_max_drift_ms is None
    aligned = opts(alignMaxDriftMs="30000")
    assert (aligned.align_max_drift_ms, aligned.align_idle_timeout_ms) == (30_000, 30_000)
    assert opts(alignmaxdriftms="0", alignIdleTimeoutMs="5000").align_idle_timeout_ms == 5000
    with pytest.raises(SourceOptionError, match="alignIdleTimeoutMs needs alignMaxDriftMs"):
        opts(alignIdleTimeoutMs="5000")
    with pytest.raises(SourceOptionError, match="alignMaxDriftMs=-1 must not be negative"):
        opts(alignMaxDriftMs="-1")
    with pytest.raises(SourceOptionError, match="for streaming queries"):
        opts(streaming=False, alignMaxDriftMs="1000")


def test_max_tasks_per_batch_is_a_cap_not_below_min_partitions():
    assert opts().max_tasks_per_batch is None
    assert opts(maxTasksPerBatch="2").max_tasks_per_batch == 2
    with pytest.raises(SourceOptionError, match="minPartitions \\(8\\) is above maxTasksPerBatch \\(2\\)"):
        opts(maxTasksPerBatch="2", minPartitions="8")
    with pytest.raises(SourceOptionError):
        opts(maxTasksPerBatch="0")


def test_max_tasks_per_batch_groups_whole_ranges_into_tasks():
    from kafka_eos.connectors.source.planning import input_partitions
    start = {("t", p): 0 for p in range(6)}
    end = {("t", p): 10 * (p + 1) for p in range(6)}
    one_each = input_partitions(start, end, None)
    assert [p.ranges[0].partition for p in one_each] == list(range(6))
    grouped = input_partitions(start, end, None, tasks=2)
    assert len(grouped) == 2
    assert sorted((r.partition, r.start, r.end) for g in grouped for r in g.ranges) == \
        [(p, 0, 10 * (p + 1)) for p in range(6)]
    assert input_partitions(start, end, None, tasks=2)[0].value == grouped[0].value  # replay: same tasks


def test_emit_offset_ranges_is_for_streams_in_any_case():
    from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options
    base = {"kafka.bootstrap.servers": "k:9092", "subscribe": "in"}
    assert parse_source_options({**base, "emit": "offsetranges"}, streaming=True).emit_ranges
    assert not parse_source_options(base, streaming=True).emit_ranges
    with pytest.raises(SourceOptionError, match="emit=offsetRanges is for streaming queries"):
        parse_source_options({**base, "emit": "offsetRanges"}, streaming=False)
    with pytest.raises(SourceOptionError, match="must be 'records' or 'offsetRanges'"):
        parse_source_options({**base, "emit": "ranges"}, streaming=True)
