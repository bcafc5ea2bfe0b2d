"""Which topic-partitions a query reads: ``subscribe``, ``subscribePattern`` or ``assign``.

Invariants:
- ``select`` is pure: given the cluster's topic -> partitions listing it returns the partitions
  to read now, so new partitions and new topics matching a pattern appear as soon as Kafka
  lists them. Kafka's internal topics never match a pattern.
- ``assign`` is a fixed set; ``select`` returns the assigned partitions Kafka currently lists
  (``missing`` tells which it does not).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

from kafka_eos import KafkaEosError
from kafka_eos.offsets.model import TopicPartition

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

Kind = Literal["subscribe", "subscribePattern", "assign"]


class SubscriptionError(KafkaEosError, ValueError):
    """A subscribe / subscribePattern / assign option is malformed."""


@dataclass(frozen=True)
class Subscription:
    kind: Kind
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    @staticmethod
    def parse(kind: Kind, text: str) -> "Subscription":
        if kind == "subscribe":
            topics = tuple(sorted({t.strip() for t in text.split(",") if t.strip()}))
            if not topics:
                raise SubscriptionError("option subscribe is empty: give a comma-separated topic list, e.g. 'orders,payments'")
            return Subscription("subscribe", topics=topics)
        if kind == "subscribePattern":
            try:
                re.compile(text)
            except re.error as exc:
                raise SubscriptionError(f"option subscribePattern={text!r} is not a valid regular expression ({exc})") from None
            return Subscription("subscribePattern", pattern=text)
        try:
            parsed = json.loads(text)
            assigned = tuple(sorted({(str(t), int(p)) for t, parts in parsed.items() for p in parts}))
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            raise SubscriptionError(
                f'option assign={text!r:.200} must be JSON like {{"topicA": [0, 1], "topicB": [2]}}') from None
        if not assigned:
            raise SubscriptionError("option assign names no partitions")
        return Subscription("assign", assigned=assigned)

    def select(self, listing: Mapping[str, Sequence[int]]) -> set[TopicPartition]:
        """Partitions to read, given Kafka's current topic -> partition ids listing."""
        if self.kind == "assign":
            return {tp for tp in self.assigned if tp[1] in listing.get(tp[0], ())}
        if self.kind == "subscribe":
            names = [t for t in self.topics if t in listing]
        else:
            regex = re.compile(self.pattern or "")
            names = [t for t in listing if t not in INTERNAL_TOPICS and regex.fullmatch(t)]
        return {(t, p) for t in names for p in listing[t]}

    def missing(self, listing: Mapping[str, Sequence[int]]) -> list[TopicPartition]:
        """Assigned partitions Kafka does not list (always empty for subscriptions)."""
        return sorted(set(self.assigned) - self.select(listing)) if self.kind == "assign" else []

    def __str__(self) -> str:
        if self.kind == "subscribe":
            return f"subscribe={','.join(self.topics)}"
        if self.kind == "subscribePattern":
            return f"subscribePattern={self.pattern}"
        return "assign=" + ",".join(f"{t}-{p}" for t, p in self.assigned)
