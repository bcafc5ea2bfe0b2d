"""Whether a location can hold kafka-eos's own records, asked before any batch runs.

Invariants this module enforces:
- ``probe_store`` does what the sink log does, in order, on a record of its own (a hidden name
  no reader lists): create it, read it back byte for byte, create it again (which must be
  refused: records are create-only), delete it, see it gone. The first step that fails is
  named with the location and the error; nothing else is left behind (the probe record is
  deleted whenever it was created).
- The answer says how the store makes records create-only (``LogStore.create_mode``), whether
  it excludes a second writer itself (``LogStore.exclusive``) and how long the round trip took,
  for ``validate`` and the start to report.
- A Kafka location (``stores``) is probed by its own writer role (``StoreRole.PROBE``: it fences
  no driver, command or follower); a step the broker refused names the ACLs the store needs.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Callable, TypeVar

from confluent_kafka import KafkaError

from kafka_eos.kafka_clients import kafka_error
from kafka_eos.txn.log.log_store import LogStore
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.stores import acl_advice, open_store

PROBE_FORMAT = 1
_DENIED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
           KafkaError.CLUSTER_AUTHORIZATION_FAILED}
T = TypeVar("T")


@dataclass(frozen=True)
class StoreProbe:
    location: str
    create_mode: str
    exclusive: bool  # the store refuses a racing writer's create itself (LogStore.exclusive)
    round_trip_ms: float


class StoreUnusable(Exception):
    """The location cannot hold the records: ``step`` failed with ``reason``; ``denied``: the ACLs
    a Kafka store needs, when the broker refused the principal one (else None)."""

    def __init__(self, location: str, step: str, reason: str, denied: str | None = None) -> None:
        super().__init__(f"{location}: {step} failed: {reason}")
        self.location, self.step, self.reason, self.denied = location, step, reason, denied


def probe_store(location: str) -> StoreProbe:
    """Create, read back, re-create (refused), delete a probe record at ``location``; ``StoreUnusable`` else."""
    started = time.monotonic()
    store = _step(location, "creating the location", lambda: open_store(location, StoreRole.PROBE))
    name = f"_probe-{uuid.uuid4().hex}.json"
    data = json.dumps({"v": PROBE_FORMAT, "probe": name}).encode()
    _step(location, "creating a record", lambda: store.create_bytes(name, data))
    try:
        back = _step(location, "reading the record back", lambda: store.read_bytes(name))
        if back != data:
            raise StoreUnusable(location, "reading the record back", f"read {back!r}, wrote {data!r}")
        _refused_again(store, name, data)
    finally:
        _step(location, "deleting the record", lambda: store.delete(name))
    if _step(location, "reading after the delete", lambda: store.exists(name)):
        raise StoreUnusable(location, "deleting the record", "it is still there after the delete")
    return StoreProbe(location, store.create_mode, store.exclusive, (time.monotonic() - started) * 1000)


def _refused_again(store: LogStore, name: str, data: bytes) -> None:
    try:
        store.create_bytes(name, data)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreUnusable(store.location, "creating the record a second time", f"{type(exc).__name__}: {exc}") from exc
    raise StoreUnusable(store.location, "creating the record a second time",
                        "the store replaced it instead of refusing: records would not be create-only")


def _step(location: str, step: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except StoreUnusable:
        raise
    except Exception as exc:  # noqa: BLE001 - every store error (OSError, pyarrow's) names the step
        denied = acl_advice(location) if _refused(exc) else None
        raise StoreUnusable(location, step, f"{type(exc).__name__}: {exc}", denied) from exc


def _refused(exc: BaseException) -> bool:
    """The broker refused the principal (an ACL): by the error's code, or its text where the store
    reworded it (the topic's creation)."""
    error = kafka_error(exc)
    if error is not None:
        return error.code() in _DENIED
    return "AUTHORIZATION_FAILED" in str(exc).upper() or "authorization failed" in str(exc).lower()
