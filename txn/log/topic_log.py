"""The output topics' identities in the sink log: ``topics.<seq>.json`` beside the batch records.

Invariants this module enforces:
- Records are create-only (``LogStore.create``) and carry a format version; a newer state is a
  record with the next ``seq``, never an overwrite. A create that finds its name taken means
  another run of the query wrote meanwhile: ``SinkLogConflictError``.
- The newest ``seq`` is the state: every output topic's recorded identity (``OutputTopic``) and
  the topics whose change stopped the query (``refused``, with what the broker showed then), which
  the next start may accept (``kafka_eos.txn.topics.output_topics.judge``).
- A record of an unknown format version is refused by name (``SinkLogError``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Sequence, cast

from kafka_eos.txn.protocol.errors import SinkLogConflictError
from kafka_eos.txn.log.log_store import LogReader, LogStore, versioned
from kafka_eos.txn.log.stores import open_store
from kafka_eos.txn.topics.output_topics import Change, OutputTopic, TopicChange

TOPICS_FORMAT = 1
_NAME = re.compile(r"^topics\.(\d+)\.json$")


def record_name(seq: int) -> str:
    return f"topics.{seq}.json"


def _identity(name: str, data: dict | None) -> OutputTopic | None:
    return None if data is None else OutputTopic(name, str(data["topic_id"]), int(data["partitions"]))


def _plain(topic: OutputTopic | None) -> dict | None:
    return None if topic is None else {"topic_id": topic.topic_id, "partitions": topic.partitions}


@dataclass(frozen=True)
class TopicsRecord:
    topics: dict[str, OutputTopic] = field(default_factory=dict)
    refused: dict[str, dict] = field(default_factory=dict)  # name -> {"change", "current"} at the stop
    batch_id: int | None = None  # the batch whose check wrote it (None: a check before a batch's writes)
    seq: int = -1  # -1: nothing recorded yet

    def to_json(self) -> str:
        return json.dumps({"v": TOPICS_FORMAT, "seq": self.seq, "batch": self.batch_id,
                           "topics": {n: _plain(t) for n, t in sorted(self.topics.items())},
                           "refused": self.refused}, indent=1)

    def held(self) -> list[TopicChange]:
        """The refusals recorded and not accepted since, as the broker showed them at the refusal."""
        return [TopicChange(name, Change(r["change"]), self.topics.get(name), _identity(name, r.get("current")),
                            held=True) for name, r in sorted(self.refused.items())]

    @classmethod
    def from_json(cls, text: str, source: str) -> "TopicsRecord":
        data = versioned(text, source, "output topics record", TOPICS_FORMAT)
        # cast: to_json writes every recorded topic as an identity, never null
        topics = cast(dict[str, OutputTopic], {n: _identity(n, t) for n, t in data["topics"].items()})
        return cls(topics=topics,
                   refused=data.get("refused", {}), batch_id=data.get("batch"), seq=data["seq"])


class TopicLog:
    """Reads (and, given a ``LogStore``, creates) the output-topic records of one sink log."""

    def __init__(self, store: LogReader) -> None:
        self.store = store

    @classmethod
    def at(cls, location: str) -> "TopicLog":
        return cls(open_store(location))

    def latest(self) -> TopicsRecord:
        seqs = [int(m[1]) for m in map(_NAME.match, self.store.names()) if m]
        if not seqs:
            return TopicsRecord()
        name = record_name(max(seqs))
        return TopicsRecord.from_json(self.store.read(name) or "{}", f"{self.store.location}/{name}")

    def append(self, base: TopicsRecord, topics: dict[str, OutputTopic], batch_id: int | None,
               refused: Sequence[TopicChange] = ()) -> TopicsRecord:
        """Create the record after ``base`` (the newest this writer read)."""
        record = replace(base, topics=dict(topics), batch_id=batch_id, seq=base.seq + 1,
                         refused={c.name: {"change": c.change.value, "current": _plain(c.current)}
                                  for c in refused})
        name = record_name(record.seq)
        if not isinstance(self.store, LogStore):
            raise AttributeError(f"{self.store.location}: this topic log is read-only; open it with TopicLog.at to append")
        try:
            self.store.create(name, record.to_json())
        except FileExistsError:
            raise SinkLogConflictError.of_record(f"{self.store.location}/{name}", batch_id or -1) from None
        return record
