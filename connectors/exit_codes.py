"""The exit codes of the ``kafka-eos`` commands: one table, and which error gets which code.

Enforced here:
- every code has one meaning and one kind, what a supervisor does about it: ``stopped`` (do not
  start again: finished, or stopped by ``kafka-eos stop``), ``permanent`` (do not restart: a
  person must decide; the error names the runbook) or ``transient`` (restart, with a back-off);
  ``verify``'s verdicts (6-8) are a kind of their own, for a scheduled check to page on 6 alone;
- 0-3 are validation's verdict (``config.violations``: valid, invalid, unreachable, not
  authorized) and keep those meanings for every command; a stop by a signal is 128 + the signal's
  number (143 for SIGTERM), as a shell reports it;
- an error is classified by its class name (or a base class's), never by its message, so a query
  error Spark hands over as text (``StreamingQueryException``: the Python exception printed as
  ``module.Name: message``) gets the same code as the exception itself. A name not in ``ERRORS``
  is a transient failure (4): a supervisor's restart is the recovery from a crash;
- README's and docs/deploy.md's tables are this table (``tests/connectors/test_exit_codes.py``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable

from kafka_eos.config.violations import (EXIT_INVALID, EXIT_UNAUTHORIZED, EXIT_UNREACHABLE, EXIT_VALID,
                                         InvalidPipeline, exit_code)


class Kind(str, Enum):
    STOPPED = "stopped"
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    VERDICT = "verdict"  # verify's findings: nothing a supervisor restarts


@dataclass(frozen=True)
class ExitCode:
    code: int
    name: str
    kind: Kind
    meaning: str


DONE = ExitCode(EXIT_VALID, "done", Kind.STOPPED,
                "finished (`--once`), stopped by `kafka-eos stop`, or not started because a stop request "
                "stands (withdrawn by `kafka-eos resume`); `validate`: valid; `verify`: every batch verified")
INVALID = ExitCode(EXIT_INVALID, "invalid", Kind.PERMANENT,
                   "the pipeline file, an option or the command line is invalid; an operator command "
                   "(`accept-topic`, `accept-loss`, `retire`) refused what it was asked, saying why")
UNREACHABLE = ExitCode(EXIT_UNREACHABLE, "unreachable", Kind.TRANSIENT,
                       "a broker (or the checkpoint's store) did not answer")
UNAUTHORIZED = ExitCode(EXIT_UNAUTHORIZED, "not authorized", Kind.PERMANENT,
                        "a login was refused or an ACL is missing (the error names the `kafka-acls` command)")
FAILED = ExitCode(4, "failed", Kind.TRANSIENT,
                  "the run failed and a restart is its recovery: a broker outage, a lost transaction, a killed "
                  "worker, any error this table does not name")
NEEDS_OPERATOR = ExitCode(5, "needs an operator", Kind.PERMANENT,
                          "the run stopped on a state a person must decide: every restart would stop the same "
                          "way (the error names its runbook and the command that goes on)")
VERIFY_FAILED = ExitCode(6, "verify failed", Kind.VERDICT,
                         "`verify`: a committed batch's output is not what its tasks wrote")
UNVERIFIABLE = ExitCode(7, "cannot be verified", Kind.VERDICT,
                        "`verify`: no batch failed, but one or more cannot be verified (records deleted or "
                        "compacted, no evidence)")
NOTHING_IN_RANGE = ExitCode(8, "nothing in range", Kind.VERDICT,
                            "`verify`: no committed batch in the range asked")
CODES = (DONE, INVALID, UNREACHABLE, UNAUTHORIZED, FAILED, NEEDS_OPERATOR, VERIFY_FAILED, UNVERIFIABLE,
         NOTHING_IN_RANGE)
SIGNAL_BASE = 128  # a run stopped by signal N (SIGTERM, Ctrl-C) exits 128 + N

# The errors that do not get FAILED, by class name (a subclass of one is listed too: a query's
# error text names the class raised, not its bases).
ERRORS: dict[str, ExitCode] = {
    "StopRequested": DONE,
    **{name: INVALID for name in (
        "InvalidPipeline", "PipelineBuildError", "SinkConfigError", "ClientSettingsError", "SourceOptionError",
        "OffsetLogScanError", "OffsetSpecError", "SubscriptionError", "LateSpecError", "StoreProblem",
        "NonDeterministicPlanError", "StateConfConflict", "SavepointRefused", "StateNotRebuildable",
        "EventTimesMissing", "ReplayBeyondRetention", "SavepointConflict", "SavepointUnreadable",
        "SchemaIncompatible", "SubjectError")},
    **{name: UNAUTHORIZED for name in (
        "AclMissingError", "TopicAuthorizationError", "AuthenticationFailed", "SourceLoginRefused")},
    **{name: NEEDS_OPERATOR for name in (
        "ReplayMismatchError", "CheckpointRetiredError", "PrefixClaimedError", "OutputTopicChangedError",
        "CheckpointShapeError", "StateBackendChanged", "KafkaDataLossError", "RecordDecodeError",
        "SinkLogError", "SinkLogConflictError", "StoreFencedError", "UnsupportedBrokerError", "SavepointTaken",
        "RecordsNotFound")},
}
# the order in which a text naming several of them is read: what must be fixed first
_PRECEDENCE = (INVALID, UNAUTHORIZED, NEEDS_OPERATOR, DONE)
_NAMED = re.compile(r"(?<![\w])(" + "|".join(sorted(ERRORS, key=len, reverse=True)) + r"):")


def permanent(code: int) -> bool:
    """Whether a supervisor must not restart a run that exited with ``code``."""
    return any(c.code == code and c.kind is Kind.PERMANENT for c in CODES)


def of_names(names: Iterable[str]) -> ExitCode:
    """The code of an error known by these class names (its own and its bases', or the names a
    query's error text gives): the first of ``_PRECEDENCE`` any of them maps to, else FAILED."""
    found = {ERRORS[n] for n in names if n in ERRORS}
    return next((c for c in _PRECEDENCE if c in found), FAILED)


def of_error(error: BaseException) -> int:
    """The exit code of ``error``: ``InvalidPipeline`` by its violations, an error carrying its own
    ``exit_code`` (``PipelineFailed``) by that, any other by its class and base classes' names."""
    if isinstance(error, InvalidPipeline):
        return exit_code(error.violations)
    carried = getattr(error, "exit_code", None)
    if isinstance(carried, int):
        return carried
    return of_names(klass.__name__ for klass in type(error).__mro__).code


def of_text(text: str) -> int:
    """The exit code of a query's error as Spark gives it (text naming the Python exceptions)."""
    return of_names(_NAMED.findall(text)).code


def of_signal(signum: int) -> int:
    return SIGNAL_BASE + signum


def table() -> str:
    """The Markdown table of the codes (README and docs/deploy.md carry it)."""
    rows = ["| exit | name | kind | meaning |", "|---:|---|---|---|"]
    rows += [f"| {c.code} | {c.name} | {c.kind.value} | {c.meaning}{_named(c)} |" for c in CODES]
    rows.append(f"| {SIGNAL_BASE}+N | signalled | transient | stopped by signal N (143: SIGTERM, 130: Ctrl-C) "
                "after the running batch committed, or killed (137): the supervisor's or platform's stop; it "
                "decides whether to start it again |")
    return "\n".join(rows)


def summary() -> str:
    """The codes in one line (README carries it, linking the table)."""
    return ", ".join([f"{c.code} {c.name}" for c in CODES] + [f"{SIGNAL_BASE}+N stopped by signal N"])


def errors_of(code: ExitCode) -> list[str]:
    """The error names that get ``code``, sorted (the docs list them)."""
    return sorted(name for name, c in ERRORS.items() if c is code)


def _named(code: ExitCode) -> str:
    names = errors_of(code)
    return f": {', '.join(f'`{n}`' for n in names)}" if names and code is not DONE else ""
