"""The live check of where a pipeline keeps kafka-eos's own records (skipped with ``--offline``).

Invariant: an exactly-once pipeline whose sink-log location cannot hold create-only records
(``txn.store_probe``: create, read back, refused re-create, delete) is an INVALID violation at
``checkpoint.location`` (or the sink option ``sinkLogLocation`` where that is set) naming the
step that failed, the store's error and the fix, before anything runs: ``validate`` and every
start (``load_valid``) ask it.
"""
from __future__ import annotations

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.violations import INVALID, Violation
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.log.sink_log import location_from_options
from kafka_eos.txn.log.store_probe import StoreProbe, StoreUnusable, probe_store


def records_location(cfg: PipelineConfig) -> tuple[str, str] | None:
    """(YAML path, location) of the pipeline's sink log; None without an exactly-once sink or a location."""
    if not cfg.exactly_once or not cfg.checkpoint.location:
        return None
    options = {k: str(v) for k, v in cfg.sink.options}
    location = location_from_options({**options, "checkpointLocation": cfg.checkpoint.location})
    own = bool(OptionMap.of(options).get("sinkLogLocation"))  # the option lookup location_from_options makes
    return ("sink.options.sinkLogLocation" if own else "checkpoint.location", str(location))


def store_problems(cfg: PipelineConfig) -> tuple[list[Violation], StoreProbe | None]:
    """The violation of a sink-log location that cannot hold the records, or the probe's answer."""
    where = records_location(cfg)
    if where is None:
        return [], None
    path, location = where
    try:
        return [], probe_store(location)
    except StoreUnusable as exc:
        return [Violation(path, f"kafka-eos cannot keep its records (the sink log) at {exc.location}: {exc.step} "
                          f"failed: {exc.reason}",
                          "give a location this process can create, read and delete files in with the credentials "
                          "it has: a local or mounted path (NFS, a FUSE mount of object storage such as /dbfs or "
                          "/Volumes), s3a://, hdfs:// or gs:// with their client's credentials in this process's "
                          "environment; or keep Spark's checkpoint where it is and set the sink option "
                          "sinkLogLocation to such a place", kind=INVALID)], None
