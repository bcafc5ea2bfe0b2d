"""The sink's driver side: one protocol per query and sink log; the query-start cleanup once per query."""
from __future__ import annotations

from kafka_eos.txn.faults import FaultPlan
from kafka_eos.txn.sink_config import SinkConfig
from tests.txn.fakes import protocol


def test_the_query_start_cleanup_runs_when_the_writer_is_pickled_for_the_tasks_once_per_query(tmp_path):
    import pickle

    from pyspark import cloudpickle  # what Spark pickles the writer with

    from kafka_eos.connectors.sink import stream_writer
    from kafka_eos.txn.fault_injection import task_input
    from kafka_eos.txn.replay import ReplayPlan

    def planned_writer(query_id: str) -> stream_writer.KafkaEosStreamWriter:
        writer = object.__new__(stream_writer.KafkaEosStreamWriter)  # as __init__ leaves it, without a broker
        writer.config = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                                   log_location=str(tmp_path / query_id))
        writer.faults, writer.query_id, writer.plan = FaultPlan(), query_id, ReplayPlan()
        writer._task_input = task_input(writer.faults)
        writer._protocol = protocol(tmp_path / query_id)
        return writer

    first, again, other = planned_writer("q1"), planned_writer("q1"), planned_writer("q2")
    shipped = pickle.loads(cloudpickle.dumps(first))
    assert first._protocol.aborter.calls == 1 and not hasattr(shipped, "_protocol")
    cloudpickle.dumps(again), cloudpickle.dumps(first), cloudpickle.dumps(shipped)
    assert again._protocol.aborter.calls == 0 and first._protocol.aborter.calls == 1
    cloudpickle.dumps(other)
    assert other._protocol.aborter.calls == 1 and shipped.plan == ReplayPlan()


def test_the_driver_keeps_one_protocol_per_query_and_sink_log(tmp_path):
    from kafka_eos.connectors.sink.stream_writer import driver_protocol
    cfg = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                     log_location=str(tmp_path / "log"))
    one = driver_protocol(cfg, FaultPlan(), "query-1")
    assert driver_protocol(cfg, FaultPlan(), "query-1") is one
    assert driver_protocol(cfg, FaultPlan(), None) is not one
    other = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                       log_location=str(tmp_path / "log"), commit_timeout_s=5.0)
    assert driver_protocol(other, FaultPlan(), "query-1") is not one
