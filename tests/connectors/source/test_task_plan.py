"""A batch's task count (issue 45): the cluster's slots by default, recorded on the batch's end so
a replay rebuilds the same tasks whatever the cluster has then; an end written before the count
was recorded keeps the layout of the maxTasksPerBatch option."""
from __future__ import annotations

from kafka_eos.connectors.spark_compat import ReadAllAvailable
from pyspark.sql.types import StructType

from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
from kafka_eos.offsets import model

IN = [("in", p) for p in range(8)]


class EightPartitions:
    def partitions(self, subscription):
        return set(IN)

    def latest(self, tps):
        return {tp: 100 + 10 * tp[1] for tp in tps}

    def earliest(self, tps):
        return {tp: 0 for tp in tps}


def reader(cores: int | None, **options) -> KafkaStreamReader:
    stream = KafkaStreamReader({"kafka.bootstrap.servers": "b:9092", "subscribe": "in", **options},
                               StructType(), cores)
    stream._kafka = EightPartitions()
    return stream


def tasks(stream: KafkaStreamReader, start: dict, end: dict) -> list[tuple[tuple[str, int], ...]]:
    return [tuple(r.tp for r in p.ranges) for p in stream.partitions(start, end)]


START = model.encode({tp: 0 for tp in IN})


def test_by_default_a_batch_is_read_in_as_many_tasks_as_the_cluster_has_slots():
    stream = reader(cores=2)
    end = stream.latestOffset(START, ReadAllAvailable())
    assert model.planned_tasks(end) == 2
    planned = tasks(stream, START, end)
    assert len(planned) == 2 and sorted(tp for t in planned for tp in t) == IN


def test_a_replay_on_another_cluster_rebuilds_the_recorded_tasks():
    end = reader(cores=2).latestOffset(START, ReadAllAvailable())
    assert tasks(reader(cores=8), START, end) == tasks(reader(cores=2), START, end)
    assert tasks(reader(cores=8, maxTasksPerBatch="4"), START, end) == tasks(reader(cores=2), START, end)
    assert len(tasks(reader(cores=8), START, reader(cores=8).latestOffset(START, ReadAllAvailable()))) == 8


def test_an_end_written_before_the_count_was_recorded_keeps_the_options_layout():
    old_end = model.encode({tp: 100 for tp in IN})  # no "tasks": one task per range, as before
    assert len(tasks(reader(cores=2), START, old_end)) == 8
    assert len(tasks(reader(cores=2, maxTasksPerBatch="3"), START, old_end)) == 3


def test_the_option_and_min_partitions_override_the_slots():
    assert model.planned_tasks(reader(cores=2, maxTasksPerBatch="5").latestOffset(START, ReadAllAvailable())) == 5
    assert model.planned_tasks(reader(cores=2, minPartitions="16").latestOffset(START, ReadAllAvailable())) == 16
    assert model.planned_tasks(reader(cores=64).latestOffset(START, ReadAllAvailable())) == 8  # never more than ranges


def test_batch_zero_records_its_start_and_its_tasks():
    initial = model.encode({tp: 0 for tp in IN}, initial=True)
    end = reader(cores=2).latestOffset(initial, ReadAllAvailable())
    assert model.planned_start(end) == model.decode(START) and model.planned_tasks(end) == 2
    assert len(tasks(reader(cores=4), initial, end)) == 2


def test_without_new_data_the_end_is_the_start_text():
    stream = reader(cores=2)
    end = stream.latestOffset(START, ReadAllAvailable())
    assert stream.latestOffset(end, ReadAllAvailable()) == end


def test_the_slots_come_from_the_settings_then_the_master_then_what_registered():
    from kafka_eos.connectors.datasource import slots
    assert slots("local[2]", 2, {}) == 2
    assert slots("local[2]", 2, {"spark.default.parallelism": "6"}) == 6
    # a cluster's executors register after the session starts: their settings count, not the 2 seen so far
    assert slots("spark://m:7077", 2, {"spark.executor.instances": "4", "spark.executor.cores": "4"}) == 16
    assert slots("yarn", 2, {"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.maxExecutors": "10",
                             "spark.executor.cores": "2", "spark.executor.instances": "1"}) == 20
    assert slots("spark://m:7077", 2, {"spark.cores.max": "12"}) == 12
    assert slots("spark://m:7077", 8, {}) == 8
    assert slots("", None, {}) is None  # Spark Connect without settings: the driver's CPUs
