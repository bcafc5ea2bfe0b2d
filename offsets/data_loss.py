"""Data-loss detection: compare where the source must resume with what Kafka still has.

``detect`` returns structured findings; it never decides. The caller fails the query
(``failOnDataLoss=true``) or logs ``finding.message(failing=False)`` and resumes at
``finding.resume_at`` (``None``: drop the partition).

Kinds:
- ``offsets-deleted``: the next offset to read is below the earliest one Kafka still has
  (retention, ``delete_records``); resume at the earliest available offset.
- ``offsets-reset``: the next offset to read is above the partition's end (offsets went
  backwards: topic recreated, unclean leader election); resume at the earliest available offset.
- ``partition-gone``: the topic or partition no longer exists; drop it.
- ``new-partition-truncated``: a newly discovered partition no longer starts at offset 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Mapping

from kafka_eos.offsets.model import TopicPartition

Kind = Literal["offsets-deleted", "offsets-reset", "partition-gone", "new-partition-truncated"]


@dataclass(frozen=True)
class DataLossFinding:
    kind: Kind
    topic: str
    partition: int
    expected: int
    available: tuple[int, int] | None
    resume_at: int | None

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def message(self, failing: bool) -> str:
        where = f"topic {self.topic!r} partition {self.partition}"
        avail = (f"available offsets are [{self.available[0]}, {self.available[1]})"
                 if self.available else "no offsets are available")
        what = {
            "offsets-deleted": f"expected to resume at offset {self.expected}, but records below "
                               f"{self.available[0] if self.available else '?'} were deleted (retention or delete_records)",
            "offsets-reset": f"expected to resume at offset {self.expected}, beyond the partition's end: "
                             "offsets went backwards (topic recreated or unclean leader election)",
            "partition-gone": f"expected to resume at offset {self.expected}, but the topic or partition no longer exists",
            "new-partition-truncated": "new partition discovered, but its first records were already deleted "
                                       "(it should start at offset 0)",
        }[self.kind]
        text = f"Kafka data loss in {where}: {what}; {avail}."
        if failing:
            return (text + " The query stops (failOnDataLoss=true). To accept the loss and continue, set "
                    "option failOnDataLoss=false, or restart with a new checkpointLocation.")
        then = (f"continuing from offset {self.resume_at}" if self.resume_at is not None
                else "no longer reading this partition")
        return f"{text} failOnDataLoss=false: {then}."


def detect(start: Mapping[TopicPartition, int], present: Iterable[TopicPartition],
           earliest: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
           new_partitions: Iterable[TopicPartition] = ()) -> list[DataLossFinding]:
    """Findings for ``start`` (resume points) against Kafka's ``earliest``/``latest`` offsets.

    ``present`` are the partitions Kafka lists now; ``new_partitions`` those discovered since the
    previous batch (they are checked for starting above 0).
    """
    present = set(present)
    out: list[DataLossFinding] = []
    for tp in sorted(start):
        offset = start[tp]
        if tp not in present:
            out.append(DataLossFinding("partition-gone", tp[0], tp[1], offset, None, None))
            continue
        low, high = earliest[tp], latest[tp]
        if offset < low:
            out.append(DataLossFinding("offsets-deleted", tp[0], tp[1], offset, (low, high), low))
        elif offset > high:
            out.append(DataLossFinding("offsets-reset", tp[0], tp[1], offset, (low, high), low))
    for tp in sorted(set(new_partitions)):
        if earliest.get(tp, 0) > 0:
            out.append(DataLossFinding("new-partition-truncated", tp[0], tp[1], 0,
                                       (earliest[tp], latest.get(tp, earliest[tp])), earliest[tp]))
    return out
