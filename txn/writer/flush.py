"""A task's flush in short steps, and the end of a failed task's own transaction.

Enforced here:
- ``flush_checked`` flushes in steps of ``FLUSH_STEP_S`` and after each step asks ``failure()``
  (delivery errors, fatal errors, the transaction state in librdkafka's statistics): a failed
  transaction stops the flush at once, instead of waiting the whole timeout for records
  librdkafka will never send (it keeps a failed transaction's queued records until the abort).
- ``abort_own`` purges what is queued and aborts the producer's transaction within
  ``ABORT_WAIT_S``, best effort: it never raises (what it could not end, the driver's sweep by
  transactional id ends, or the broker at transaction.timeout.ms).
- ``client_wait_s`` is the one wait a task allows a transactional client call (init, flush).
- ``delivery_failure`` names the record (topic[partition], key, size) and the fix.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any, Callable

log = logging.getLogger(__name__)

FLUSH_STEP_S = 0.25
ABORT_WAIT_S = 5.0
FAILED_TXN_STATES = frozenset({"AbortableError", "FatalError"})
_FIXES = {
    "MSG_SIZE_TOO_LARGE": "raise the topic's max.message.bytes above the record size (kafka-configs --alter "
                          "--entity-type topics --entity-name {topic} --add-config max.message.bytes=<bytes>) "
                          "or write smaller records",
    "TOPIC_AUTHORIZATION_FAILED": "grant the sink's principal WRITE on topic {topic}",
    "UNKNOWN_TOPIC_OR_PART": "create topic {topic} or fix the sink's topic",
    "RECORD_LIST_TOO_LARGE": "raise the topic's max.message.bytes or lower the producer's batch.size",
    "_UNKNOWN_PARTITION": "give the row a partition topic {topic} has (the sink's 'partition' column, YAML "
                          "sink.partition_column), or add partitions to {topic}",
}


class TransactionFailed(Exception):
    """The task's transaction failed; the message says why."""


def client_wait_s(transaction_timeout_ms: int) -> float:
    """How long a task waits for one transactional client call: the transaction's timeout, >= 30 s."""
    return max(30.0, transaction_timeout_ms / 1000)


def txn_state(stats_json: str) -> str | None:
    """The producer's transaction state (``eos.txn_state``) in librdkafka statistics, if any."""
    if not stats_json:
        return None
    return json.loads(stats_json).get("eos", {}).get("txn_state")


def delivery_failure(topic: str, partition: int, key: bytes | None, size: int, code_name: str, text: str) -> str:
    """One failed record, named, with the fix for its error."""
    fix = _FIXES.get(code_name, "see the broker log for topic {topic}").format(topic=topic)
    return (f"record to {topic}[{partition}] (key={key!r:.60}, {size} bytes) failed: {text} "
            f"({code_name}); fix: {fix}")


def produce_refused(exc: Exception, topic: str, partition: int, key: bytes | None, value: bytes | None) -> str:
    """A record librdkafka refused at produce() (not at delivery), named with the fix."""
    error: Any = exc.args[0] if exc.args else None  # confluent_kafka's KafkaError
    code, text = (error.name(), error.str()) if hasattr(error, "name") else (type(exc).__name__, str(exc))
    return delivery_failure(topic, partition, key, len(value or b""), code, text)


def flush_checked(flush: Callable[[float], int], failure: Callable[[], str | None], timeout_s: float,
                  step_s: float = FLUSH_STEP_S, clock: Callable[[], float] = time.monotonic) -> int:
    """Flush until nothing is queued or ``timeout_s``; return the records still queued.
    Raises ``TransactionFailed`` as soon as ``failure()`` names a failure."""
    deadline = clock() + timeout_s
    while True:
        remaining = flush(max(0.0, min(step_s, deadline - clock())))
        reason = failure()
        if reason:
            raise TransactionFailed(reason)
        if remaining == 0 or clock() >= deadline:
            return remaining


def abort_own(producer, transactional: bool, wait_s: float = ABORT_WAIT_S) -> str | None:
    """Purge the producer's queue and abort its transaction; None once aborted, else why not."""
    try:
        producer.purge(in_queue=True, in_flight=False, blocking=False)
    except Exception as exc:  # noqa: BLE001 - best effort by contract
        log.debug("kafka-eos: purge failed: %r", exc)
    if not transactional:
        return None
    try:
        producer.abort_transaction(wait_s)
        return None
    except Exception as exc:  # noqa: BLE001 - best effort: the driver's sweep ends it by id
        return repr(exc)
