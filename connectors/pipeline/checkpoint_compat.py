"""Which pipeline changes a checkpoint survives: refused at query start, reported before a restart.

``compare`` holds the rules (pure): the pipeline's shape (``pipeline_shape.shape_of``) against
what the checkpoint recorded (``pipeline_shape.recorded_shape``) and what its sink log says.

- Source scans (``errors.on_decode_error: dlq`` scans the source twice, ``fail``/``skip`` once,
  ``transform.watermark.late_topic`` once more;
  see ``builder.scans_per_batch``): Spark's offset log fixes their number, so switching the DLQ
  on or off needs a new checkpoint. ``check_checkpoint`` refuses this one at query start, before
  Spark stops with "There are [1] sources in the checkpoint offsets and now there are [2]".
- A stateful transform (``config.rules.stateful``: GROUP BY, window, DISTINCT, join) keeps its
  state in the checkpoint in the shape of the plan that wrote it: adding, removing or changing
  one (its transform, or the decoding of the rows it aggregates) needs a new checkpoint.
- The sink log belongs to one ``transactional_id_prefix``: changing it needs a new checkpoint.
- Spark fixes a checkpoint's state store (``state.backend``, ``config.state_backend``) with its
  first batch: a stateful pipeline asking for another one than the checkpoint recorded is refused
  (``backend_change``; at query start by ``state_store``); a stateless one has no state to move.
- A batch decided but not committed (``txn.sink_log``) is re-written to the same sink partition
  indexes with the same records each: while one is pending, a change that alters the rows per
  sink partition or their number (DLQ, ``minPartitions``, the transform, the decoding) must wait
  until that batch commits.
- Everything else keeps the checkpoint: a stateless transform, decoding, topics (partitions new
  to the query are read from their earliest offset), sink settings, ``minPartitions``.
A checkpoint without pipeline records (older kafka-eos) is compared on source scans and state
only; what cannot be compared is said so.

``against_checkpoints`` (``kafka-eos validate --against-checkpoint``) reads each checkpoint and
renders the verdicts: exit 0 all kept, 1 a change needs a new checkpoint, 2 a checkpoint could
not be read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, cast

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.redact import Redactor
from kafka_eos.config.state_backend import PROVIDER_CONF, PROVIDERS, backend_of, describe
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.pipeline_shape import PipelineShape, recorded_shape, shape_of, shape_records
from kafka_eos.connectors.pipeline.progress import sink_log_location
from kafka_eos.connectors.pipeline.spark_options import late_topic
from kafka_eos.txn.log.sink_log import DECIDED, SinkLogReader

NEW_LOCATION = "start with a new checkpoint.location (and source.starting_offsets where the old one stopped)"
SAVEPOINT_WAY = ("changing the state backend of a checkpoint needs a savepoint (kafka-eos savepoint, then run "
                 "--from-savepoint: issue 65, not yet available in this kafka-eos); until then, a new "
                 "checkpoint.location starts with empty state (windows open at the switch miss their earlier records)")


class CheckpointShapeError(KafkaEosError, ValueError):
    """The checkpoint was written by a plan with another number of source scans."""


@dataclass(frozen=True)
class Checkpoint:
    """What an existing checkpoint tells about the pipeline that wrote it."""
    location: str
    shape: PipelineShape | None       # None: no batch planned yet, nothing to resume
    pending_batch: int | None = None  # a batch decided but not committed (sink log)
    prefix: str | None = None         # the transactional-id prefix its sink log belongs to
    state_provider: str | None = None  # the state store provider Spark recorded (offset log)


@dataclass(frozen=True)
class Verdict:
    change: str
    keeps: bool
    fix: str = ""
    needs: str = "a new checkpoint"

    def line(self) -> str:
        if self.keeps:
            return f"{self.change}: keeps the checkpoint"
        return f"{self.change}: needs {self.needs}\n      fix: {self.fix}"


def _scans(found: Checkpoint, cfg: PipelineConfig, wanted: PipelineShape) -> list[Verdict]:
    before = cast(PipelineShape, found.shape).scans  # both callers pass a checkpoint with a shape
    if before is None or before == wanted.scans:
        return []
    if late_topic(cfg) is not None or before > 2:
        return [Verdict(f"this pipeline reads each batch's offsets {wanted.scans} time(s) (once, once more with "
                        "errors.on_decode_error: dlq, once more with transform.watermark.late_topic), but checkpoint "
                        f"{found.location} was written by one that read them {before} time(s)", False,
                        f"restore the DLQ and late_topic settings the checkpoint was made with, or {NEW_LOCATION}")]
    policy = cfg.errors.on_decode_error.value
    made_with = "dlq" if before == 2 else "fail or skip"
    return [Verdict(f"errors.on_decode_error: {policy} cannot resume checkpoint {found.location}, which was "
                    f"written with on_decode_error {made_with} ({before} source scan(s) per batch; {policy} "
                    f"needs {wanted.scans})", False,
                    f"keep on_decode_error {made_with} for this checkpoint, or {NEW_LOCATION}")]


def _differs(before: PipelineShape, after: PipelineShape, part: str) -> bool:
    return getattr(before, part) is not None and getattr(before, part) != getattr(after, part)


def _state(before: PipelineShape, wanted: PipelineShape) -> list[Verdict]:
    if before.stateful is None or before.stateful == wanted.stateful:
        if not wanted.stateful:
            return []
        if not before.recorded:
            return [Verdict("stateful transform: not compared (the checkpoint has no pipeline record: an older "
                            "kafka-eos wrote it); only an unchanged transform and decoding keep its state", True)]
        changed = [name for part, name in (("transform", "transform.sql/steps/watermark"),
                                           ("decode", "source format/schema")) if _differs(before, wanted, part)]
        return [Verdict(f"{' and '.join(changed)} of a stateful transform changed (its state in the checkpoint "
                        "has the old plan's shape)", False, NEW_LOCATION)] if changed else []
    added = "added" if wanted.stateful else "removed"
    return [Verdict(f"transform: a stateful operation (GROUP BY, window, DISTINCT or join) {added} (Spark keeps "
                    "aggregation state in the checkpoint in the shape of the plan that wrote it)", False, NEW_LOCATION)]


def backend_change(location: str, recorded: str | None, requested: str | None, stateful: bool,
                   asked_by: str = "state.backend") -> Verdict | None:
    """The verdict on running a pipeline whose state store is ``requested`` (``asked_by`` says
    where it was asked) on a checkpoint that recorded ``recorded``; None: no change."""
    if recorded is None or requested is None or recorded == requested:
        return None
    change = f"{asked_by}: {describe(requested)}, but checkpoint {location} was started with {describe(recorded)}"
    if not stateful:
        return Verdict(f"{change} (this pipeline keeps no state, so nothing changes)", True)
    keep = backend_of(recorded)
    kept = f"state.backend: {keep.value}" if keep else f"{PROVIDER_CONF}={recorded} (--conf)"
    return Verdict(f"{change} (Spark keeps a checkpoint's state store for its life: it would go on with "
                   f"{describe(recorded)} and only log it)", False, f"keep {kept} for this checkpoint; {SAVEPOINT_WAY}",
                   "a savepoint (or a new checkpoint)")


def _backend(found: Checkpoint, cfg: PipelineConfig, wanted: PipelineShape) -> list[Verdict]:
    requested = PROVIDERS[cfg.state.backend] if cfg.state.backend else None
    verdict = backend_change(found.location, found.state_provider, requested, bool(wanted.stateful))
    return [verdict] if verdict else []


def _layout(before: PipelineShape, wanted: PipelineShape) -> list[str]:
    """Changes of the rows per sink partition, or of their number, that keep the checkpoint otherwise."""
    if not before.recorded:
        return ["transform/decoding (not comparable: the checkpoint has no pipeline record)"]
    found = [] if wanted.stateful or before.stateful else [name for part, name in (
        ("transform", "transform.sql/steps/watermark changed (stateless transform)"),
        ("decode", "source format/schema changed (stateless transform)")) if _differs(before, wanted, part)]
    for option, field in (("minPartitions", "min_partitions"), ("maxTasksPerBatch", "max_tasks_per_batch")):
        if getattr(before, field) != getattr(wanted, field):  # either changes the tasks of a batch
            found.append(f"source.options {option} changed ({getattr(before, field)} -> {getattr(wanted, field)})")
    return found


def _prefix(found: Checkpoint, cfg: PipelineConfig) -> list[Verdict]:
    wanted = cfg.sink.transactional_id_prefix
    if not found.prefix or not wanted or found.prefix == wanted:
        return []
    return [Verdict(f"sink.transactional_id_prefix changed ({found.prefix} -> {wanted}; the sink log of the "
                    "checkpoint belongs to the old prefix)", False,
                    f"keep transactional_id_prefix {found.prefix} for this checkpoint, or {NEW_LOCATION}")]


def compare(found: Checkpoint, cfg: PipelineConfig, wanted: PipelineShape | None = None) -> list[Verdict]:
    """The verdict on each change from the pipeline that wrote ``found`` to ``cfg`` (``wanted``:
    its shape); empty when there is no change or nothing to resume."""
    before, wanted = found.shape, wanted or shape_of(cfg)
    if before is None:
        return []
    verdicts = _scans(found, cfg, wanted) + _state(before, wanted) + _prefix(found, cfg) + _backend(found, cfg, wanted)
    layout = _layout(before, wanted)
    if found.pending_batch is None:
        verdicts += [Verdict(change, True) for change in layout if before.recorded]
    else:
        verdicts += [Verdict(f"{change}, while batch {found.pending_batch} is decided but not committed (it is "
                             "re-written with the same rows per sink partition)", False,
                             f"finish the pending batch first: run the previous pipeline file on this checkpoint "
                             f"until batch {found.pending_batch} commits (kafka-eos run <previous file> --once), "
                             f"then restart with this one; or {NEW_LOCATION}") for change in layout]
    if before.recorded:
        verdicts += [Verdict(change, True) for part, change in (
            ("subscription", "source topics/pattern/assign changed (partitions new to the query are read from "
                             "their earliest offset)"),
            ("sink", "sink settings changed")) if _differs(before, wanted, part)]
        if before.scans == wanted.scans and before.dlq_topic != wanted.dlq_topic:
            verdicts.append(Verdict(f"errors.dlq_topic changed ({before.dlq_topic} -> {wanted.dlq_topic})", True))
    return verdicts


def read_checkpoint(cfg: PipelineConfig) -> Checkpoint:
    """What the checkpoint of ``cfg`` holds (reads only; errors of the storage propagate)."""
    location = cfg.checkpoint.location or ""
    shape = recorded_shape(location, shape_records(cfg)) if location else None
    if shape is None:
        return Checkpoint(location, None)
    log = SinkLogReader(sink_log_location(cfg))
    latest, meta = log.latest(), log.meta() or {}
    pending = latest.batch_id if latest is not None and latest.state == DECIDED else None
    return Checkpoint(location, shape, pending, meta.get("prefix"), recorded_provider(location))


def recorded_provider(location: str) -> str | None:
    """The state store provider the newest offset-log entry at ``location`` recorded (None: no entry)."""
    entry = CheckpointReader(location).latest_offsets()
    return None if entry is None else entry.conf().get(PROVIDER_CONF)


def checkpoint_sources(location: str) -> int | None:
    """Source count of the newest offset-log entry at ``location``; None when there is none
    (looking creates nothing)."""
    entry = CheckpointReader(location).latest_offsets()
    return None if entry is None else len(entry.sources)


def check_checkpoint(cfg: PipelineConfig) -> None:
    """Raise ``CheckpointShapeError`` when the checkpoint's source scans differ from the plan's."""
    location = cfg.checkpoint.location
    if not location:
        return
    scans = checkpoint_sources(location)
    if scans is None:
        return
    found = Checkpoint(location, PipelineShape(scans=scans, stateful=None, recorded=False))
    for verdict in _scans(found, cfg, shape_of(cfg)):
        raise CheckpointShapeError(f"{verdict.change}. Fix: {verdict.fix}")


def against_checkpoint(cfg: PipelineConfig) -> tuple[int, list[str]]:
    """Exit code and report lines of one pipeline against its checkpoint (not redacted)."""
    head = f"{cfg.origin}: against checkpoint {cfg.checkpoint.location}"
    try:
        found = read_checkpoint(cfg)
    except (OSError, ValueError, KafkaEosError) as exc:
        return 2, [f"{head}: unreadable: {exc}"]
    if found.shape is None:
        return 0, [f"{head}: no batch yet, nothing to resume (any change is fine)"]
    verdicts = compare(found, cfg)
    refused = sum(not v.keeps for v in verdicts)
    summary = f"{refused} change(s) need a new checkpoint" if refused else "the checkpoint is kept"
    lines = [f"  {v.line()}" for v in verdicts] or ["  no change the checkpoint depends on: keeps the checkpoint"]
    if not found.shape.recorded:
        lines.append("  (the checkpoint has no pipeline record: compared by source scans and state only)")
    return (1 if refused else 0), [f"{head}: {summary}", *lines]


def against_checkpoints(configs: Sequence[PipelineConfig]) -> tuple[int, str]:
    """``kafka-eos validate --against-checkpoint``: exit code (1 over 2 over 0) and the report, redacted."""
    codes, lines = [], []
    for cfg in configs:
        code, mine = against_checkpoint(cfg)
        codes.append(code)
        lines += [Redactor(cfg.secrets())(line) for line in mine]
    code = 1 if 1 in codes else max(codes, default=0)
    return code, "\n".join(lines)
