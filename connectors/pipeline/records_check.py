"""A checkpoint whose records are in Kafka finds them there before its query starts.

Under ``checkpoint.records: kafka`` the sink log lives in the store topic named by the sink's
transactional-id prefix (``_kafka_eos_store-<prefix>``, folder of the checkpoint). Enforced here:
an exactly-once pipeline whose checkpoint has committed batches (Spark's commit log) starts only
when that store holds its sink log. Otherwise the prefix changed (another topic), the store topic
was deleted, or the checkpoint's batches were never recorded in Kafka (records in files before,
at-least-once before): a sink log started afresh there would neither finish a decided batch nor
know the transactional ids its earlier batches used, so the start is refused
(``RecordsNotFound``, a state a person decides), naming the topic, the batches and the fixes.
"""
from __future__ import annotations

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import kafka_sink_log, register_records
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.txn.log.sink_log import SinkLogReader
from kafka_eos.txn.log.stores import parse_kafka


class RecordsNotFound(KafkaEosError):
    """The checkpoint has committed batches, and the Kafka record store holds no sink log of it."""


def check_records_found(cfg: PipelineConfig) -> None:
    """Raise ``RecordsNotFound`` per the module (nothing for records kept in files)."""
    log = kafka_sink_log(cfg)
    if log is None or not cfg.exactly_once or not cfg.checkpoint.location:
        return
    committed = CheckpointReader(cfg.checkpoint.location).commit_batches()
    if not committed:
        return
    register_records(cfg)
    if SinkLogReader(log).meta() is not None:
        return
    found = parse_kafka(log)
    topic = found.topic if found else log
    raise RecordsNotFound(
        f"checkpoint {cfg.checkpoint.location} has committed batches {committed[0]}-{committed[-1]}, but the record "
        f"store topic {topic} (named by sink.transactional_id_prefix {cfg.sink.transactional_id_prefix!r}) holds no "
        "sink log of it: the prefix changed since those batches, the topic was deleted, or this checkpoint's records "
        "were kept in files (or it ran at-least-once). Nothing was started. Fix: set sink.transactional_id_prefix "
        "back to the one this checkpoint ran with (its topic is _kafka_eos_store-<that prefix>); or, for a "
        "checkpoint that never kept its records in Kafka, drop checkpoint.records; or start a new "
        "checkpoint.location")
