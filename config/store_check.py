"""The live check of where a pipeline keeps kafka-eos's own records (skipped with ``--offline``).

Invariant: an exactly-once pipeline whose sink-log location cannot hold create-only records
(``txn.store_probe``: create, read back, refused re-create, delete) is a violation at
``checkpoint.location`` (or ``checkpoint.records`` for records in Kafka, or the sink option
``sinkLogLocation`` where that is set) naming the step that failed, the store's error and the
fix, before anything runs: ``validate`` and every start (``load_valid``) ask it. A Kafka store
whose broker refused the principal is UNAUTHORIZED (exit 3) and names the ACLs it needs; any
other failure is INVALID.
"""
from __future__ import annotations

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import register_records, sink_log_location
from kafka_eos.config.violations import INVALID, UNAUTHORIZED, Violation
from kafka_eos.txn.log.store_probe import StoreProbe, StoreUnusable, probe_store

FILE_FIX = ("give a location this process can create, read and delete files in with the credentials it has: a "
            "local or mounted path (NFS, a FUSE mount of object storage such as /dbfs or /Volumes), s3a://, hdfs:// "
            "or gs:// with their client's credentials in this process's environment; or keep Spark's checkpoint "
            "where it is and set checkpoint.records: kafka (the records in a topic of the output's cluster)")


def records_location(cfg: PipelineConfig) -> tuple[str, str] | None:
    """(YAML path, location) of the pipeline's sink log; None without an exactly-once sink or a location."""
    return sink_log_location(cfg)


def store_problems(cfg: PipelineConfig) -> tuple[list[Violation], StoreProbe | None]:
    """The violation of a sink-log location that cannot hold the records, or the probe's answer."""
    where = sink_log_location(cfg)
    if where is None:
        return [], None
    path, location = where
    register_records(cfg)
    try:
        return [], probe_store(location)
    except StoreUnusable as exc:
        message = f"kafka-eos cannot keep its records (the sink log) at {exc.location}: {exc.step} failed: {exc.reason}"
        if exc.denied:
            return [Violation(path, message, exc.denied, kind=UNAUTHORIZED)], None
        fix = ("check that the output's cluster (sink.kafka) answers and lets this principal create the store topic"
               if path == "checkpoint.records" else FILE_FIX)
        return [Violation(path, message, fix, kind=INVALID)], None
