"""What validation reports: violations with a YAML path, a message and a fix.

Invariant: nothing stops at the first problem; loaders and rules return lists, and
``exit_code`` turns the whole list into validation's answer: 0 valid, 1 invalid, 2 a broker
unreachable, 3 not authorized (a login the brokers refuse, a missing ACL), the first four rows of
the commands' one table (``kafka_eos.connectors.exit_codes``, which adds a run's and verify's). A
file that must be fixed wins over the brokers' answers, and a refusal (a definite answer an admin
must act on) over an unreachable cluster.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

from kafka_eos import KafkaEosError

if TYPE_CHECKING:
    from kafka_eos.config.model import PipelineConfig

INVALID = "invalid"
UNREACHABLE = "unreachable"
UNAUTHORIZED = "unauthorized"  # the brokers answered and refused the principal: its login or an ACL

EXIT_VALID, EXIT_INVALID, EXIT_UNREACHABLE, EXIT_UNAUTHORIZED = 0, 1, 2, 3


@dataclass(frozen=True)
class Violation:
    path: str        # YAML path, e.g. ``sink.transaction_timeout_ms``
    message: str
    fix: str
    kind: str = INVALID
    file: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        return f"{where}{self.path}: {self.message}\n    fix: {self.fix}"


@dataclass(frozen=True)
class Context:
    """What rules know beyond the file: the broker's ``transaction.max.timeout.ms`` (None when
    offline or unknown)."""
    broker_max_timeout_ms: int | None = None


Rule = Callable[["PipelineConfig", Context], list[Violation]]
Backstop = Callable[["PipelineConfig", list[Violation]], list[Violation]]
"""A check run after every rule, given what the rules found (a layer above config supplies it,
e.g. "the connectors accept the options built from this file")."""


class InvalidPipeline(KafkaEosError, ValueError):
    """Raised by ``load_valid`` (``kafka_eos.config.validate``); carries every violation."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("invalid pipeline configuration:\n" + "\n".join(f"  {v}" for v in violations))


def exit_code(violations: Iterable[Violation]) -> int:
    """1 when any setting is invalid (it must be fixed whatever the broker says), else 3 when the
    brokers refused the principal (login, ACL), else 2 when a broker could not be reached, else 0."""
    kinds = {v.kind for v in violations}
    for kind, code in ((INVALID, EXIT_INVALID), (UNAUTHORIZED, EXIT_UNAUTHORIZED), (UNREACHABLE, EXIT_UNREACHABLE)):
        if kind in kinds:
            return code
    return EXIT_VALID
