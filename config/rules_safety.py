"""Rules that keep ``guarantee: exactly_once`` true: isolation, producer safety
(``kafka_eos.txn.protocol.sink_config.producer_violations``, mapped to YAML paths), transaction
timeouts (``kafka_eos.txn.protocol.timeouts.check_transaction_timeout``), the transactional-id prefix, the
checkpoint and a transform a replay may not reproduce (``kafka_eos.config.determinism``). Rules
that only matter for exactly-once return nothing for ``at_least_once``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import cast

from kafka_eos.config.determinism import sql_calls
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.violations import Context, Rule, Violation
from kafka_eos.txn.protocol.sink_config import UNSET, ProducerViolation, producer_violations
from kafka_eos.txn.log.log_store import local_path
from kafka_eos.txn.log.sink_log import SinkLogReader, location_from_options
from kafka_eos.txn.protocol.timeouts import SettingNames, check_transaction_timeout

# the YAML key that sets what a refused producer setting would (SinkConfig field -> YAML path)
_YAML_FOR = {"transactional_id_prefix": "sink.transactional_id_prefix",
             "transaction_timeout_ms": "sink.transaction_timeout_ms"}
_YAML_TIMEOUT_NAMES = SettingNames(timeout="sink.transaction_timeout_ms", trigger="checkpoint.trigger",
                                   margin="sink.batch_margin_ms", shorten="checkpoint.trigger")


def isolation_level(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    level = (cfg.source.kafka.get("isolation.level") or "read_committed").strip().lower()
    if cfg.exactly_once and level != "read_committed":
        return [Violation('source.kafka.properties["isolation.level"]',
                          f"{level} exposes aborted and open transactions, which breaks exactly-once",
                          "remove it or set isolation.level: read_committed")]
    return []


def _producer_violation(v: ProducerViolation) -> Violation:
    if v.replaced_by:
        fix = f"remove it and set {_YAML_FOR[v.replaced_by]}"
    else:
        fix = v.fix if v.required == UNSET else f"remove it or set {v.key}: {v.required}"
    return Violation(f'sink.kafka.properties["{v.key}"]', v.message(), fix)


def producer_safety(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    """``kafka_eos.txn.protocol.sink_config.producer_violations`` of the sink's client settings, at their YAML
    paths (both guarantees: the at-least-once sink writes with the same idempotent producer)."""
    return [_producer_violation(v) for v in producer_violations(cfg.sink.kafka.client_conf())]


def transaction_timeout(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    if not cfg.exactly_once:
        return []
    trigger = cfg.checkpoint.trigger
    interval = 0 if trigger.available_now else trigger.interval_ms
    broken = check_transaction_timeout(cfg.sink.transaction_timeout_ms, interval, cfg.sink.batch_margin_ms,
                                       ctx.broker_max_timeout_ms, _YAML_TIMEOUT_NAMES)
    return [Violation("sink.transaction_timeout_ms", v.message, v.fix) for v in broken]


def transactional_id_prefix(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    if not cfg.exactly_once:
        return []
    prefix = cfg.sink.transactional_id_prefix
    if not prefix:
        return [Violation("sink.transactional_id_prefix", "the transactional-id prefix is missing (it is derived "
                          "from the name and checkpoint.location when both are set)",
                          "set checkpoint.location, or a name unique to this pipeline and kept across restarts, e.g. "
                          f"transactional_id_prefix: {cfg.name or 'orders-enricher'}")]
    from kafka_eos.txn.protocol.errors import SinkConfigError
    from kafka_eos.txn.protocol.transactional_ids import TransactionalIdFactory
    try:
        TransactionalIdFactory(prefix)
    except SinkConfigError as exc:
        return [Violation("sink.transactional_id_prefix", str(exc), "use letters, digits, '.', '_' and '-'")]
    return []


def _writable(path: Path) -> str | None:
    """Why ``path`` cannot hold a checkpoint (None when it can); creates nothing."""
    if path.exists():
        if not path.is_dir():
            return f"{path} exists and is not a directory"
        return None if os.access(path, os.W_OK | os.X_OK) else f"{path} is not writable by this user"
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return f"{path} does not exist and cannot be created: {parent} is not a writable directory"
    return None


def _sink_log_owner(cfg: PipelineConfig, path: Path) -> str | None:
    options = {**{k: str(v) for k, v in cfg.sink.options}, "checkpointLocation": str(path)}
    try:
        # checkpointLocation is set just above, so location_from_options always finds a location
        meta = SinkLogReader(cast(str, location_from_options(options))).meta()
        return meta.get("prefix") if meta else None
    except (OSError, ValueError, AttributeError):
        return None


def checkpoint(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    location = cfg.checkpoint.location
    if not location:
        return [Violation("checkpoint.location", "the checkpoint location is missing",
                          "set checkpoint.location: a directory kept across restarts (hdfs://, s3a:// or a local path)")]
    if location.startswith("~"):
        return [Violation("checkpoint.location", f"{location!r} starts with '~', which neither Spark nor kafka-eos "
                          "expands: the checkpoint would be a folder named '~' in the working directory",
                          "write the home directory out (an absolute path), or use ${HOME}")]
    path = local_path(location)
    if path is None:
        return []
    problem = _writable(path)
    if problem:
        return [Violation("checkpoint.location", problem, "choose a directory this user can write, or fix its permissions")]
    owner, prefix = _sink_log_owner(cfg, path), cfg.sink.transactional_id_prefix
    if cfg.exactly_once and owner and prefix and owner != prefix:
        return [Violation("checkpoint.location", f"this checkpoint belongs to the transactional-id prefix {owner!r}, "
                          f"not {prefix!r}", f"keep transactional_id_prefix: {owner}, or use a new checkpoint location")]
    return []


def _transform_texts(cfg: PipelineConfig) -> list[tuple[str, str]]:
    """(YAML path, SQL text) of every expression of the transform."""
    t = cfg.transform
    texts = [("transform.sql", t.sql)] if t.sql else []
    texts += [(f"transform.steps[{n}].{step.kind}", e) for n, step in enumerate(t.steps) for e in step.exprs]
    if t.watermark is not None and t.watermark.expression:
        texts.append(("transform.watermark.expression", t.watermark.expression))
    return texts


def replay_determinism(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    """A call of a non-deterministic function (``determinism.sql_calls``, a static scan of the
    text) unless ``transform.allow_nondeterministic``; the run checks Spark's plan itself too."""
    if not cfg.exactly_once or cfg.transform.allow_nondeterministic:
        return []
    found = []
    for path, text in _transform_texts(cfg):
        for name in sql_calls(text):
            found.append(Violation(
                path, f"{name}() is non-deterministic: a replayed batch computes other values, and where they "
                "decide which rows are kept or which sink partition gets them, the re-write of a batch whose "
                "transactions the broker aborted loses or duplicates records (the run refuses this plan)",
                "derive the value from the record (e.g. xxhash64(key, offset) instead of rand(), topic/partition/"
                "offset instead of uuid()); or, if only the values may differ on a replay, set "
                "transform.allow_nondeterministic: true"))
    return found


SAFETY_RULES: list[Rule] = [isolation_level, producer_safety, transaction_timeout, transactional_id_prefix, checkpoint,
                            replay_determinism]


def across_pipelines(configs: list[PipelineConfig]) -> list[Violation]:
    """Pipelines validated together must not share a transactional-id prefix or a checkpoint."""
    found = []
    for attribute, path, what in (("sink.transactional_id_prefix", "sink.transactional_id_prefix", "prefix"),
                                  ("checkpoint.location", "checkpoint.location", "checkpoint")):
        seen: dict[str, str] = {}
        for cfg in configs:
            section, field_name = attribute.split(".")
            value = getattr(getattr(cfg, section), field_name)
            if not value or (what == "prefix" and not cfg.exactly_once):
                continue
            if value in seen:
                found.append(Violation(path, f"{value!r} is also used by {seen[value]}",
                                       f"give each pipeline its own {what}", file=cfg.origin))
            else:
                seen[value] = cfg.origin
    return found
