"""What an exactly-once operator watches first on a pipeline's output, sampled by its driver or the monitor.

Facts (one ``OutputFacts`` per sample):
- the Ongoing transactions under the sink's transactional-id prefix (every owner's): how many,
  the age of the oldest and its ``transaction.timeout.ms`` (the broker aborts it then);
- those of them that are the sink log's decided but uncommitted transactions: how many, and
  the age of the oldest (a dead driver's decided batch waits for the next start's commit);
- per output partition (the sink's topic, the DLQ and the late topic), the records its last
  stable offset is held behind its high watermark, and for how long the LSO has stood still
  while held (every ``read_committed`` reader of the partition waits that long);
- the sink log's newest decision: its state and batch;
- with a follower (``verify --follow``) recorded: the committed batches it has not judged, the
  age of the oldest, the batches that aged out unverified (``txn.follow_state.follow_lag``).

Invariants:
- It reads only (sink log, ListTransactions/DescribeTransactions, ListOffsets): nothing is
  committed, aborted or written. It needs no Spark session and no running driver.
- ``OperatorProbe`` samples once per ``interval_s`` in a daemon thread of its own (sooner when its
  ``next_in`` asks, e.g. the lag probe as a stall nears its threshold); a sample that fails (a
  broker down) is counted and the last facts stay published, and whatever runs beside it (the
  run, the monitor's other probes) is never affected.
- How long a partition is held is measured by the probe's own samples (``HeldClock``): the time
  since the LSO it reports was first seen held, so it covers any producer's transaction, not
  only the pipeline's, to within one interval.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from kafka_eos.config.model import DEFAULT_SAMPLE_INTERVAL_S, PipelineConfig
from kafka_eos.connectors.pipeline.spark_options import late_topic
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_status import last_decision, open_transactions, prefix_ids, still_open
from kafka_eos.txn.log.follow_state import FollowLag, follow_lag
from kafka_eos.txn.log.verify_runs import VerifyRun, runs_since
from kafka_eos.txn.topics.topic_guard import describe_topics

log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]
Facts = TypeVar("Facts")


@dataclass(frozen=True)
class OutputFacts:
    open_transactions: int
    oldest_open_s: float
    oldest_timeout_s: float                      # transaction.timeout.ms of the oldest (0: none open)
    held_records: dict[TopicPartition, int] = field(default_factory=dict)
    held_seconds: dict[TopicPartition, float] = field(default_factory=dict)
    decision_state: str = "none"
    decision_batch: int = -1
    verify_runs: tuple[VerifyRun, ...] = ()      # ``kafka-eos verify`` runs recorded since the last sample
    latest_verify: VerifyRun | None = None
    decided_open: int = 0                        # the newest decision's transactions still open (uncommitted)
    oldest_decided_s: float = 0.0                # age of the oldest of them (0: none)
    follow: FollowLag | None = None              # continuous verification's lag (None: no follower recorded)


class HeldClock:
    """How long each partition's LSO has stood still below its high watermark, from samples."""

    def __init__(self) -> None:
        self._since: dict[TopicPartition, tuple[int, float]] = {}   # partition -> (held LSO, first seen)

    def observe(self, lso: dict[TopicPartition, int], hw: dict[TopicPartition, int],
                now: float) -> tuple[dict[TopicPartition, int], dict[TopicPartition, float]]:
        """(records held, seconds held) per partition answered both ways."""
        records, seconds = {}, {}
        for tp in sorted(set(lso) & set(hw)):
            records[tp] = max(0, hw[tp] - lso[tp])
            if records[tp] == 0:
                self._since.pop(tp, None)
                seconds[tp] = 0.0
                continue
            held_at, first = self._since.get(tp, (None, now))
            if held_at != lso[tp]:
                first = now
            self._since[tp] = (lso[tp], first)
            seconds[tp] = round(now - first, 3)
        return records, seconds


class OutputSampler:
    """``sample()`` -> ``OutputFacts`` for one sink (its client settings, prefix and log) and its
    output topics."""

    def __init__(self, sink: SinkConfig, topics: tuple[str, ...], timeout_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sink, self.topics = sink, topics
        self.ids = prefix_ids(sink)
        self.conf, self.timeout_s = sink.client_conf(), timeout_s
        self.offsets = KafkaOffsets(self.conf, timeout_s)
        self.held, self.clock = HeldClock(), clock
        self._verified_seen_ms = int(time.time() * 1000)  # verify runs before this run are not counted
        self._latest_verify: VerifyRun | None = None

    def sample(self) -> OutputFacts:
        opened = open_transactions(self.sink.producer_conf, self.ids)
        described = describe_topics(self.conf, self.topics, self.timeout_s)
        partitions = {(t, p) for t, topic in described.items() if topic for p in range(topic.partitions)}
        lso, hw = self.offsets.latest(partitions), self.offsets.high_watermarks(partitions)
        records, seconds = self.held.observe(lso, hw, self.clock())
        decision = last_decision(self.sink.log_location)
        oldest = opened[0] if opened else None
        decided, _ = still_open(decision, opened)
        new_runs = self._verify_runs()
        return OutputFacts(len(opened), oldest.age_ms / 1000 if oldest else 0.0,
                           oldest.timeout_ms / 1000 if oldest else 0.0, records, seconds,
                           str(decision.state), decision.batch_id if decision.batch_id is not None else -1,
                           new_runs, self._latest_verify, len(decided),
                           max((t.age_ms / 1000 for t in decided), default=0.0),
                           follow_lag(self.sink.log_location))

    def _verify_runs(self) -> tuple[VerifyRun, ...]:
        """The verify runs recorded since the last sample (the newest is kept for the gauges)."""
        runs = runs_since(self.sink.log_location, -1 if self._latest_verify is None else self._latest_verify.at_ms)
        if runs:
            self._latest_verify = runs[-1]
        new = tuple(r for r in runs if r.at_ms > self._verified_seen_ms)
        self._verified_seen_ms = max([self._verified_seen_ms, *(r.at_ms for r in new)])
        return new


class OperatorProbe(Generic[Facts]):
    """Runs ``sample`` every ``interval_s`` in a daemon thread and hands each result to
    ``publish``; ``failed`` is called with each sample's error instead; ``close`` stops it (and
    calls ``on_close``, e.g. to close the sampler's clients). ``next_in(facts)``, when given, says
    how many seconds after a sample the next one is due (at most ``interval_s``)."""

    def __init__(self, sample: Callable[[], Facts], publish: Callable[[Facts], None],
                 failed: Callable[[BaseException], None], interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
                 name: str = "kafka-eos-operator-probe", on_close: Callable[[], None] | None = None,
                 next_in: Callable[[Facts], float] | None = None) -> None:
        self.sample, self.publish, self.failed, self.interval_s = sample, publish, failed, interval_s
        self._on_close, self._next_in = on_close, next_in
        self._due_in = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> "OperatorProbe[Facts]":
        self._thread.start()
        return self

    def once(self) -> None:
        self._due_in = self.interval_s
        try:
            facts = self.sample()
        except Exception as exc:  # noqa: BLE001 - a monitoring sample never stops the run
            log.debug("kafka-eos: operator probe sample failed: %r", exc)
            self.failed(exc)
            return
        self.publish(facts)
        if self._next_in is not None:
            self._due_in = min(self.interval_s, max(0.0, self._next_in(facts)))

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.once()
            self._stop.wait(max(0.0, self._due_in - (time.monotonic() - began)))

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.interval_s + 15)
        if self._on_close is not None and not self._thread.is_alive():
            self._on_close()


def output_topics(cfg: PipelineConfig) -> tuple[str, ...]:
    """The topics the pipeline's transactions write: the sink's, the DLQ and the late topic."""
    return tuple(sorted({t for t in (cfg.sink.topic, cfg.errors.dlq_topic, late_topic(cfg)) if t}))

