"""The ordering of transaction timeouts that exactly-once needs, as one pure rule.

Invariant (checked before any transaction opens):
    trigger interval + slowest batch + restart margin  <  producer transaction.timeout.ms
                                                        <= broker transaction.max.timeout.ms
The first inequality keeps a pre-committed transaction alive until the driver commits it; the
second is enforced by the broker itself (InitProducerId fails with INVALID_TRANSACTION_TIMEOUT).
"""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000   # 15 min, the broker's default maximum
DEFAULT_BATCH_MARGIN_MS = 120_000          # slowest batch + driver restart, unless told


@dataclass(frozen=True)
class TimeoutViolation:
    setting: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}. Fix: {self.fix}"


def check_transaction_timeout(transaction_timeout_ms: int, trigger_interval_ms: int,
                              batch_margin_ms: int = DEFAULT_BATCH_MARGIN_MS,
                              broker_max_timeout_ms: int | None = None) -> list[TimeoutViolation]:
    """Return every broken timeout rule (empty when the settings are safe).

    ``broker_max_timeout_ms`` is None when the broker could not be asked (offline validation).
    """
    violations = []
    needed = trigger_interval_ms + batch_margin_ms
    if transaction_timeout_ms <= needed:
        violations.append(TimeoutViolation(
            "transaction.timeout.ms",
            f"{transaction_timeout_ms} ms is not greater than trigger interval {trigger_interval_ms} ms "
            f"+ batch/restart margin {batch_margin_ms} ms = {needed} ms; a pre-committed transaction "
            "could be aborted by the broker before the driver commits it",
            f"raise transaction.timeout.ms above {needed} (and within the broker maximum), "
            "or shorten the trigger interval"))
    if broker_max_timeout_ms is not None and transaction_timeout_ms > broker_max_timeout_ms:
        violations.append(TimeoutViolation(
            "transaction.timeout.ms",
            f"{transaction_timeout_ms} ms exceeds the broker's transaction.max.timeout.ms "
            f"{broker_max_timeout_ms} ms; producers would fail with INVALID_TRANSACTION_TIMEOUT",
            f"lower transaction.timeout.ms to at most {broker_max_timeout_ms}, or raise the broker's "
            "transaction.max.timeout.ms"))
    return violations
