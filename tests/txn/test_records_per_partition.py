"""The per-partition record counts of a pre-committed handle come from librdkafka's statistics."""
from kafka_eos.txn.writer.producer_stats import records_per_partition


def test_a_retried_produce_request_is_not_counted_twice():
    # CI saw {"1": 2, "2": 2} for one record per partition: txmsgs counts transmissions
    stats = {"topics": {"out": {"partitions": {
        "1": {"msgs": 1, "txmsgs": 2}, "2": {"msgs": 1, "txmsgs": 2}, "-1": {"msgs": 0, "txmsgs": 0}}}}}
    assert records_per_partition(stats) == {"out": {"1": 1, "2": 1}}


def test_partitions_without_records_are_left_out():
    stats = {"topics": {"out": {"partitions": {"0": {"msgs": 0, "txmsgs": 0}, "3": {"msgs": 5, "txmsgs": 5}}}}}
    assert records_per_partition(stats) == {"out": {"3": 5}}
    assert records_per_partition({}) == {}
