"""The exactly-once checker: reads the output with read_committed and reports every violation.

Which ids are expected: all of 0..ids-1, or (a query started at ``latest``) exactly the input
records at or after the query's planned start, per partition (``expected_ids``)."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from integration_tests.kafka_tools import read_all

ABORTED_BASE = 1_000_000


@dataclass(frozen=True)
class Report:
    records: int
    lost: int
    duplicated: int
    aborted_input: int
    order_violations: int
    before_start: int = 0
    expected: int = 0

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.aborted_input or self.order_violations
                    or self.before_start)

    def line(self) -> str:
        return (f"{self.records} out of {self.expected} expected, {self.lost} lost, {self.duplicated} duplicated, "
                f"{self.aborted_input} from aborted input transactions, {self.order_violations} order violations, "
                f"{self.before_start} from before the query's start")


def expected_ids(bootstrap: str, input_topic: str, start: dict[int, int]) -> set[int]:
    """Ids of the committed input records at or after ``start`` (partition -> first offset)."""
    records = read_all(bootstrap, input_topic, "read_committed", idle_s=2.0, timeout_s=300)
    return {int(m.value()) for m in records if m.offset() >= start[m.partition()] and int(m.value()) < ABORTED_BASE}


def check(bootstrap: str, topic: str, ids: int, expected: set[int] | None = None) -> Report:
    messages = read_all(bootstrap, topic, "read_committed", idle_s=2.0, timeout_s=300)
    counts: Counter = Counter()
    last_by_key: dict[bytes, int] = {}
    per_key_violations = defaultdict(int)
    for m in messages:  # read_all returns each partition's records in offset order
        value = int(m.value().decode().removeprefix("out-"))
        counts[value] += 1
        key = m.key()
        if value < ABORTED_BASE and counts[value] == 1:
            if key in last_by_key and value < last_by_key[key]:
                per_key_violations[key] += 1
            last_by_key[key] = value
    wanted = set(range(ids)) if expected is None else expected
    return Report(records=len(messages), expected=len(wanted),
                  lost=sum(1 for i in wanted if counts[i] == 0),
                  before_start=sum(c for i, c in counts.items() if i < ABORTED_BASE and i not in wanted),
                  duplicated=sum(c - 1 for c in counts.values() if c > 1),
                  aborted_input=sum(c for i, c in counts.items() if i >= ABORTED_BASE),
                  order_violations=sum(per_key_violations.values()))
