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
class SettingNames:
    """What the caller calls the settings the rule reads (sink options by default)."""
    timeout: str = "transaction.timeout.ms"
    trigger: str = "trigger interval"
    margin: str = "batch/restart margin"
    shorten: str = "the trigger interval"


@dataclass(frozen=True)
class TimeoutViolation:
    """One broken rule, with the numbers; ``message``/``fix`` name the settings as ``names`` says."""
    kind: str                      # TOO_SHORT or ABOVE_BROKER_MAX
    transaction_timeout_ms: int
    trigger_interval_ms: int
    batch_margin_ms: int
    broker_max_timeout_ms: int | None = None
    names: SettingNames = SettingNames()

    @property
    def setting(self) -> str:
        return self.names.timeout

    @property
    def needed_ms(self) -> int:
        return self.trigger_interval_ms + self.batch_margin_ms

    @property
    def message(self) -> str:
        n = self.names
        if self.kind == TOO_SHORT:
            return (f"{self.transaction_timeout_ms} ms is not greater than {n.trigger} {self.trigger_interval_ms} ms "
                    f"+ {n.margin} {self.batch_margin_ms} ms = {self.needed_ms} ms; a pre-committed transaction "
                    "could be aborted by the broker before the driver commits it")
        return (f"{self.transaction_timeout_ms} ms exceeds the broker's transaction.max.timeout.ms "
                f"{self.broker_max_timeout_ms} ms; producers would fail with INVALID_TRANSACTION_TIMEOUT")

    @property
    def fix(self) -> str:
        n = self.names
        if self.kind == TOO_SHORT:
            return (f"raise {n.timeout} above {self.needed_ms} (and within the broker maximum), "
                    f"or shorten {n.shorten}")
        return (f"lower {n.timeout} to at most {self.broker_max_timeout_ms}, or raise the broker's "
                "transaction.max.timeout.ms")

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}. Fix: {self.fix}"


TOO_SHORT, ABOVE_BROKER_MAX = "too_short", "above_broker_max"


def check_transaction_timeout(transaction_timeout_ms: int, trigger_interval_ms: int,
                              batch_margin_ms: int = DEFAULT_BATCH_MARGIN_MS,
                              broker_max_timeout_ms: int | None = None,
                              names: SettingNames = SettingNames()) -> list[TimeoutViolation]:
    """Return every broken timeout rule (empty when the settings are safe).

    ``broker_max_timeout_ms`` is None when the broker could not be asked (offline validation).
    """
    found = []
    if transaction_timeout_ms <= trigger_interval_ms + batch_margin_ms:
        found.append(TOO_SHORT)
    if broker_max_timeout_ms is not None and transaction_timeout_ms > broker_max_timeout_ms:
        found.append(ABOVE_BROKER_MAX)
    return [TimeoutViolation(kind, transaction_timeout_ms, trigger_interval_ms, batch_margin_ms,
                             broker_max_timeout_ms, names) for kind in found]
