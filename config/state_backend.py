"""The ``state`` section: which Spark state store keeps a stateful pipeline's state, and the Spark
SQL settings it becomes. The one place these settings are named (pure Python, no Spark).

    state:
      backend: rocksdb      # or hdfs; unset: DEFAULT_BACKEND for a new checkpoint, the recorded one after
      max_memory_mb: 500    # rocksdb only: one bound for every RocksDB instance of an executor (default: none)

Invariants:
- ``hdfs`` is Spark's ``HDFSBackedStateStoreProvider`` (state as Java objects on the executor's
  heap, a delta file per batch); ``rocksdb`` is Spark's ``RocksDBStateStoreProvider`` (state in
  RocksDB off the heap) always with changelog checkpointing (a batch uploads its changes, not a
  snapshot). The class names and setting names are the same in pyspark 4.0.5, 4.1.4, 4.2.1 and
  4.3.0 (read from each version's ``spark-sql`` and ``spark-catalyst`` jars).
- Spark fixes a checkpoint's provider with its first batch: every offset-log entry records
  ``PROVIDER_CONF``, and a restarted query runs with the recorded provider whatever its session
  says (only a log line tells). Changelog checkpointing and the memory bound are not recorded:
  they may change on an existing checkpoint.
- ``state_conf`` is what the file asks of Spark; a setting of the session that differs from it
  is a conflict the caller refuses (``conflicts``), never overridden silently.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Mapping

from kafka_eos.config.sections import Section
from kafka_eos.config.violations import Violation

if TYPE_CHECKING:
    from kafka_eos.config.model import PipelineConfig
    from kafka_eos.config.violations import Context

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
_ROCKSDB = "spark.sql.streaming.stateStore.rocksdb."
CHANGELOG_CONF = _ROCKSDB + "changelogCheckpointing.enabled"
BOUNDED_MEMORY_CONF = _ROCKSDB + "boundedMemoryUsage"
MAX_MEMORY_CONF = _ROCKSDB + "maxMemoryUsageMB"
STATE_CONFS = (PROVIDER_CONF, CHANGELOG_CONF, BOUNDED_MEMORY_CONF, MAX_MEMORY_CONF)
_STATE_PACKAGE = "org.apache.spark.sql.execution.streaming.state."


class StateBackend(str, Enum):
    ROCKSDB = "rocksdb"
    HDFS = "hdfs"


PROVIDERS: dict[StateBackend, str] = {
    StateBackend.HDFS: _STATE_PACKAGE + "HDFSBackedStateStoreProvider",
    StateBackend.ROCKSDB: _STATE_PACKAGE + "RocksDBStateStoreProvider",
}
SPARK_DEFAULT = StateBackend.HDFS
# the backend of a new checkpoint whose file names none, by measurement (bench.state_backend,
# 2026-12-03, README "Figures"): on a quiet machine RocksDB ran 0.87 [0.45-0.91] of HDFS's rate per
# round (a small state, 2 state stores), with 0.81 of its JVM memory; under load it was inconclusive
DEFAULT_BACKEND = SPARK_DEFAULT


@dataclass(frozen=True)
class StateSpec:
    """``state:``; ``backend`` None: the file leaves it to the checkpoint (or the default for a new one)."""
    backend: StateBackend | None = None
    max_memory_mb: int | None = None


def state_spec(s: Section) -> StateSpec:
    """The ``state`` section (absent: ``StateSpec()``)."""
    backend = s.choice("backend", StateBackend, StateBackend.HDFS) if s.has("backend") else None
    spec = StateSpec(backend=backend, max_memory_mb=s.int("max_memory_mb", None, minimum=1))
    s.done()
    return spec


def backend_of(provider: str | None) -> StateBackend | None:
    """The backend a provider class is (None: unknown, e.g. a provider of another library)."""
    return next((b for b, name in PROVIDERS.items() if name == provider), None)


def describe(provider: str) -> str:
    """``rocksdb (RocksDBStateStoreProvider)``; another provider by its class name."""
    backend = backend_of(provider)
    return provider if backend is None else f"{backend.value} ({provider.rsplit('.', 1)[-1]})"


def state_conf(provider: str, spec: StateSpec) -> dict[str, str]:
    """The Spark settings of a query whose state store is ``provider``: RocksDB with changelog
    checkpointing, and its memory bound when ``spec`` sets one."""
    conf = {PROVIDER_CONF: provider}
    if backend_of(provider) is StateBackend.ROCKSDB:
        conf[CHANGELOG_CONF] = "true"
        if spec.max_memory_mb is not None:
            conf.update({BOUNDED_MEMORY_CONF: "true", MAX_MEMORY_CONF: str(spec.max_memory_mb)})
    return conf


def conflicts(wanted: Mapping[str, str], session: Mapping[str, str]) -> list[str]:
    """The session's explicit settings (``--conf``, spark-defaults) that differ from ``wanted``, one line each."""
    return [f"{key}={session[key]} (the pipeline file makes it {value})"
            for key, value in wanted.items() if key in session and session[key].strip() != value]


def state(cfg: "PipelineConfig", ctx: "Context") -> list[Violation]:
    """``max_memory_mb`` bounds RocksDB only, so it goes with ``backend: rocksdb`` (with ``hdfs`` the
    state is Java objects on the executors' heap, which ``spark.executor.memory`` bounds)."""
    spec = cfg.state
    if spec.max_memory_mb is not None and spec.backend is not StateBackend.ROCKSDB:
        return [Violation("state.max_memory_mb", "bounds RocksDB's memory, and this file does not choose backend "
                          "rocksdb (with hdfs the state is on the executors' heap: spark.executor.memory bounds it)",
                          "set backend: rocksdb, or remove max_memory_mb")]
    return []
