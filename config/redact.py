"""Redaction of secrets in any text: log lines, error messages, printed plans.

Invariants:
- Every known secret value (``PipelineConfig.secrets()``) is replaced by ``***`` wherever it
  appears, longest first; ``key=value`` / ``key: value`` pairs whose key is secret (the markers
  of ``kafka_eos.secrets``) and URL credentials (``scheme://user:pass@host``) are redacted even
  when the value is not known.
- ``install`` makes every log record of the process redacted (message, arguments, traceback),
  whatever logger or handler emits it; ``RedactingFilter`` does the same for one handler.
"""
from __future__ import annotations

import logging
import re
from typing import Iterable

from kafka_eos.secrets import MASK, Secret, redact_pairs

_URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/@\s:]+:)[^@\s/]+@", re.I)


class Redactor:
    """Callable: text -> text without secrets."""

    def __init__(self, secrets: Iterable[str | Secret] = ()) -> None:
        self.values: set[str] = set()
        self.add(secrets)

    def add(self, secrets: Iterable[str | Secret]) -> None:
        self.values |= {s.reveal() if isinstance(s, Secret) else str(s) for s in secrets}
        self.values.discard("")
        self._ordered = sorted(self.values, key=len, reverse=True)

    def __call__(self, text: object) -> str:
        result = str(text)
        for value in self._ordered:
            result = result.replace(value, MASK)
        result = redact_pairs(result)
        return _URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + "@", result)


def redact_record(record: logging.LogRecord, redactor: Redactor) -> None:
    """Redact a record in place: the formatted message, the traceback and the stack."""
    record.msg, record.args = redactor(record.getMessage()), None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redactor(record.exc_text)
    if record.stack_info:
        record.stack_info = redactor(record.stack_info)


class RedactingFilter(logging.Filter):
    """A ``logging.Filter`` (for a handler or logger) that redacts and never drops records."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record, self.redactor)
        return True


_PROCESS = Redactor()
_installed = False


def install(secrets: Iterable[str | Secret] = ()) -> Redactor:
    """Redact every log record of this process from now on (secrets accumulate across calls)."""
    global _installed
    _PROCESS.add(secrets)
    if not _installed:
        previous = logging.getLogRecordFactory()

        def factory(*args, **kwargs) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            redact_record(record, _PROCESS)
            return record
        logging.setLogRecordFactory(factory)
        _installed = True
    return _PROCESS
