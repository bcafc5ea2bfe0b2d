"""The state store a query starts with: the file's ``state``, the session's own settings and what
the checkpoint recorded, reconciled before Spark starts (``settings``), and set for that query
alone (``applied``).

Invariants:
- The provider is, in order: the one the checkpoint recorded (Spark would restore it whatever the
  session says), else the file's ``state.backend``, else the session's explicit
  ``spark.sql.streaming.stateStore.providerClass`` (``--conf``, spark-defaults), else
  ``config.state_backend.DEFAULT_BACKEND`` (a new checkpoint).
- A stateful pipeline asking (file or session) for another provider than its checkpoint recorded
  is refused before anything is written (``StateBackendChanged``: ``checkpoint_compat.backend_change``,
  the rule ``validate --against-checkpoint`` applies too). A stateless one runs: it has no state.
- A session setting that differs from what the file asks (``config.state_backend.conflicts``) is
  refused (``StateConfConflict``), never overridden; settings the file does not ask for (no
  ``state:`` key) are left to the session.
- ``applied`` sets the settings in the session only while the query starts: Spark copies the
  session's settings into the query at ``start()``, so the session is as it was afterwards (a
  session shared by several queries, as tests share one, keeps no pipeline's backend).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.rules import stateful
from kafka_eos.config.state_backend import (DEFAULT_BACKEND, PROVIDER_CONF, PROVIDERS, STATE_CONFS, conflicts,
                                            state_conf)
from kafka_eos.connectors.pipeline.builder import PipelineBuildError
from kafka_eos.connectors.pipeline.checkpoint_compat import CheckpointShapeError, backend_change, recorded_provider


class StateBackendChanged(CheckpointShapeError):
    """A stateful pipeline asks for another state store than its checkpoint was started with."""


class StateConfConflict(PipelineBuildError):
    """A Spark setting of the session contradicts the file's ``state`` section."""


def explicit(spark) -> dict[str, str]:
    """The state store settings the session was given explicitly (not Spark's defaults)."""
    found = {key: spark.conf.get(key, None) for key in STATE_CONFS}
    return {key: str(value) for key, value in found.items() if value is not None}


def settings(cfg: PipelineConfig, session: dict[str, str], recorded: str | None) -> dict[str, str]:
    """The settings to start ``cfg``'s query with, given the session's explicit ones and the
    provider the checkpoint ``recorded`` (None: a new checkpoint); raises on a change or a conflict."""
    spec, asked_by = cfg.state, "state.backend"
    wanted = state_conf(PROVIDERS[spec.backend], spec) if spec.backend else {}
    clash = conflicts(wanted, session)
    if clash:
        raise StateConfConflict(f"state: the Spark session sets {'; '.join(clash)}; fix: remove the --conf (or the "
                                "spark-defaults.conf line), or change the file's state section to say the same")
    requested = wanted.get(PROVIDER_CONF)
    if requested is None and PROVIDER_CONF in session:
        requested, asked_by = session[PROVIDER_CONF], f"--conf {PROVIDER_CONF}"
    verdict = backend_change(cfg.checkpoint.location or "", recorded, requested, stateful(cfg.transform), asked_by)
    if verdict is not None and not verdict.keeps:
        raise StateBackendChanged(f"{verdict.change}. Nothing was started. Fix: {verdict.fix}")
    provider = recorded or requested or PROVIDERS[DEFAULT_BACKEND]
    return {k: v for k, v in state_conf(provider, spec).items() if k not in session}


def for_start(spark, cfg: PipelineConfig) -> dict[str, str]:
    """``settings`` of ``cfg`` in ``spark`` on its checkpoint (read, never written)."""
    location = cfg.checkpoint.location
    return settings(cfg, explicit(spark), recorded_provider(location) if location else None)


@contextmanager
def applied(spark, conf: dict[str, str]) -> Iterator[None]:
    """``conf`` set in ``spark`` inside the block, the session's own values (or none) back after it."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
