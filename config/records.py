"""Where a pipeline keeps kafka-eos's own records (``checkpoint.records``), as the config sees it.

Invariants this module enforces:
- ``checkpoint.records: checkpoint`` (the default) keeps them where they always were: the sink
  log at ``<checkpoint.location>/kafka-eos-sink`` unless ``sink.options.sinkLogLocation`` moves it.
- ``checkpoint.records: kafka`` keeps the sink log (and everything under it), and the pipeline
  shape records (``connectors.pipeline.pipeline_shape``), in the store topic
  of the sink's transactional-id prefix on the output's cluster, in a folder of this checkpoint
  (``txn.log.stores.kafka_records_root``); the sink option ``sinkLogLocation`` is then set to it
  (``connectors.pipeline.spark_options``), so setting that option too is refused here.
- The store's cluster settings are the sink's (``sink.kafka``), registered in this process by
  ``register_records`` and never written into a location.
"""
from __future__ import annotations

from kafka_eos.config.model import PipelineConfig, Records
from kafka_eos.config.violations import Violation
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.log.log_store import child, local_path
from kafka_eos.txn.log.sink_log import LOG_DIR, META, location_from_options
from kafka_eos.txn.log.stores import kafka_records_root, register


def kafka_records(cfg: PipelineConfig) -> str | None:
    """The checkpoint's folder of the Kafka store under ``checkpoint.records: kafka`` (None
    otherwise, or without a checkpoint location or prefix to name it by)."""
    prefix, checkpoint = cfg.sink.transactional_id_prefix, cfg.checkpoint.location
    if cfg.checkpoint.records is not Records.KAFKA or not prefix or not checkpoint:
        return None
    return kafka_records_root(prefix, checkpoint)


def records_home(cfg: PipelineConfig) -> str:
    """Where ``cfg``'s own records beside the sink log live (stop request and marker, a savepoint's
    restore record): its folder of the Kafka store (registered in this process) under
    ``checkpoint.records: kafka``, else its checkpoint location."""
    register_records(cfg)
    return kafka_records(cfg) or str(cfg.checkpoint.location)


def kafka_sink_log(cfg: PipelineConfig) -> str | None:
    """The sink log's Kafka location under ``checkpoint.records: kafka`` (else None)."""
    root = kafka_records(cfg)
    return None if root is None else child(root, LOG_DIR)


def sink_log_location(cfg: PipelineConfig) -> tuple[str, str] | None:
    """(YAML path, location) of the pipeline's sink log; None without an exactly-once sink or a place for it."""
    if not cfg.exactly_once or not cfg.checkpoint.location:
        return None
    kafka = kafka_sink_log(cfg)
    if kafka is not None:
        return "checkpoint.records", kafka
    options = {k: str(v) for k, v in cfg.sink.options}
    location = location_from_options({**options, "checkpointLocation": cfg.checkpoint.location})
    own = bool(OptionMap.of(options).get("sinkLogLocation"))  # the option lookup location_from_options makes
    return ("sink.options.sinkLogLocation" if own else "checkpoint.location", str(location))


def register_records(cfg: PipelineConfig) -> None:
    """Register the sink's cluster for its Kafka record store (nothing for records kept in files)."""
    location = kafka_sink_log(cfg)
    if location is not None and cfg.sink.transactional_id_prefix:
        register(location, cfg.sink.kafka.client_conf(), cfg.sink.transactional_id_prefix)


def records_conflicts(cfg: PipelineConfig) -> list[Violation]:
    """``checkpoint.records: kafka`` where ``sink.options.sinkLogLocation`` says another place, or
    where the checkpoint (a path) already has its sink log in files: its decided batches are there,
    and a sink log started afresh in Kafka would not finish them."""
    if cfg.checkpoint.records is not Records.KAFKA:
        return []
    own = OptionMap.of({k: str(v) for k, v in cfg.sink.options}).get("sinkLogLocation")
    if own:
        return [Violation("checkpoint.records", "checkpoint.records: kafka keeps the sink log in Kafka, and "
                          "sink.options.sinkLogLocation names another place for it",
                          "keep one: drop sink.options.sinkLogLocation, or drop checkpoint.records")]
    path = local_path(cfg.checkpoint.location) if cfg.checkpoint.location else None
    if path is not None and (path / LOG_DIR / META).exists():
        return [Violation("checkpoint.records", f"this checkpoint keeps its sink log in files ({path / LOG_DIR}): "
                          "records in Kafka would start a new one beside it and leave its batches behind",
                          "drop checkpoint.records (the records stay where they are), or use a new checkpoint "
                          "location for records in Kafka")]
    return []
