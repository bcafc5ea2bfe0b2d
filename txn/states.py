"""CommitState: the one vocabulary of commit states; its values are the sink log's JSON strings.

A batch record is ``DECIDED`` or ``COMMITTED``; a sink partition of a decided batch is ``PENDING``,
``COMMITTED`` or ``LOST``; EndTxn answers ``COMMITTED`` or ``LOST`` for a commit and ``ABORTED``
for an abort. A member is a ``str`` equal to its value, so a record persisted with it is
byte-for-byte the record persisted with the plain string (sink log format 2 stays readable).
"""
from __future__ import annotations

from enum import Enum


class CommitState(str, Enum):
    DECIDED = "decided"
    PENDING = "pending"
    COMMITTED = "committed"
    LOST = "lost"
    ABORTED = "aborted"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

