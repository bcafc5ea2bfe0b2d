"""The records a task's producer reported failed, kept so that the cause is named first.

Enforced here: a purged record (the queue librdkafka empties once the transaction failed, often
reported before the record that failed it) is kept apart from the failures that caused it, so the
cause is never crowded out of the first ``KEEP``; a fatal producer error counts as a failure.
"""
from __future__ import annotations

from kafka_eos.txn.writer.flush import delivery_failure

KEEP = 20
PURGED = ("_PURGE_QUEUE", "_PURGE_INFLIGHT")  # librdkafka's codes of records it dropped, not their cause


class FailedRecords:
    def __init__(self) -> None:
        self.errors: list[str] = []  # failed records and fatal errors, the cause first
        self.purged: list[str] = []  # records librdkafka purged because of a failure (a few named)

    def delivered(self, err, msg) -> None:
        """librdkafka's delivery report (only failed records are reported)."""
        if err is None:
            return
        failures = self.purged if err.name() in PURGED else self.errors
        if len(failures) < KEEP:
            size = len(msg.value() or b"") + len(msg.key() or b"")
            failures.append(delivery_failure(msg.topic(), msg.partition(), msg.key(), size, err.name(), err.str()))

    def error(self, err) -> None:
        """librdkafka's error callback: a fatal error fails the transaction."""
        if err.fatal():
            self.errors.append(f"fatal producer error: {err.str()}")

    def only_purged(self) -> bool:
        return bool(self.purged) and not self.errors

    def first(self) -> str:
        """The first failed records: the cause, then the first records purged because of it."""
        return "; ".join((self.errors + self.purged)[:3])
