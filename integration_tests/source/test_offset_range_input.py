"""``emit=offsetRanges`` (issue 27): the source hands the sink offset ranges and the sink task reads
and writes the records in one process. Exactly once across a driver killed after its decision,
and across one killed before it; nothing from aborted input. Real spark-submit, real broker."""
from __future__ import annotations

import pytest

from integration_tests.kafka_tools import ABORTED_BASE, assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import killed_at_then_finished, seed_input

IDS = 3000
PARTITIONS = 4


@pytest.mark.parametrize("point", ["after_decision@1", pytest.param("before_decision@1", marks=pytest.mark.chaos)])
def test_ranges_read_by_the_sink_are_exactly_once_across_a_driver_kill(bootstrap, tmp_path, point):
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("ranges")}
    seed_input(bootstrap, names["input"], IDS, partitions=PARTITIONS)
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"], "--max-offsets", "1000",
            "--emit-ranges"]
    batches = killed_at_then_finished(args, point, tmp_path, tmp_path / "job.log")
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    assert len(batches) >= 3, "the input took several batches"
    assert sum(h.records for record in batches for h in record.handles) == IDS, "the sinks read every committed id once"


def test_ranges_from_latest_copy_keys_values_and_headers_of_input_arriving_while_running(spark, bootstrap, tmp_path):
    """Spark's default start (latest), a skewed keyed topic, input arriving after the start and an
    aborted input transaction: every id once, each with its key and headers, nothing from before."""
    import time

    from confluent_kafka import Producer

    from integration_tests.kafka_tools import create_topic, produce, read_all
    from kafka_eos import connectors
    topic, out = create_topic(bootstrap, unique("in"), 3), create_topic(bootstrap, unique("out"), 2)
    produce(bootstrap, topic, [(b"old", b"%d" % (50_000 + i)) for i in range(30)])  # before the start
    connectors.register(spark)
    source = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "includeHeaders": "true",
              "emit": "offsetRanges"}
    query = (spark.readStream.format("kafka-eos").options(**source).load().writeStream.format("kafka-eos")
             .options(**{f"source.{k}": v for k, v in source.items()})
             .option("kafka.bootstrap.servers", bootstrap).option("topic", out)
             .option("transactional.id.prefix", unique("ranges-latest"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="500 milliseconds").start())
    try:
        while query.lastProgress is None:  # batch 0 recorded the start
            time.sleep(0.2)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(900):  # keyed and skewed: two keys of three go to one partition
            producer.produce(topic, key=b"k%d" % (i % 3), value=b"%d" % i, partition=0 if i % 3 else i % 3 + 1,
                             headers=[("id", b"%d" % i)])
        producer.flush(30)
        produce(bootstrap, topic, [(b"bad", b"%d" % (ABORTED_BASE + i)) for i in range(20)],
                transactional=unique("in-abort"), commit=False)
        deadline = time.monotonic() + 120
        while len(read_all(bootstrap, out, idle_s=0.5)) < 900 and time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            time.sleep(1)
    finally:
        query.stop()
    assert_exactly_once(check_exactly_once(bootstrap, out, 900))
    for message in read_all(bootstrap, out):
        i = int(message.value())
        assert message.key() == b"k%d" % (i % 3) and message.headers() == [("id", b"%d" % i)]


def test_a_query_that_changes_the_range_rows_is_refused(spark, bootstrap):
    from kafka_eos import connectors
    from kafka_eos.connectors.source.range_rows import RangeRowsError
    connectors.register(spark)
    rows = (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", unique("in")).option("emit", "offsetRanges").load())
    connectors.check_deterministic(rows)
    connectors.check_deterministic(rows.select("topic", "partition", "fromOffset", "untilOffset", "cluster"))
    for changed in (rows.where("partition > 0"), rows.selectExpr("topic", "partition", "fromOffset",
                                                                 "untilOffset - 1 AS untilOffset", "cluster"),
                    rows.union(rows)):
        with pytest.raises(RangeRowsError, match="the query changes the source's offset-range rows"):
            connectors.check_deterministic(changed, allow_nondeterministic=True)
