"""What an exactly-once operator watches first, sampled on the driver for the metrics endpoint.

Facts (one ``OutputFacts`` per sample):
- the Ongoing transactions under the sink's transactional-id prefix (every owner's): how many,
  the age of the oldest and its ``transaction.timeout.ms`` (the broker aborts it then);
- per output partition (the sink's topic, the DLQ and the late topic), the records its last
  stable offset is held behind its high watermark, and for how long the LSO has stood still
  while held (every ``read_committed`` reader of the partition waits that long);
- the sink log's newest decision: its state and batch.

Invariants:
- It reads only (sink log, ListTransactions/DescribeTransactions, ListOffsets): nothing is
  committed, aborted or written.
- It samples at most once per ``interval_s`` in a daemon thread of its own; a sample that fails
  (a broker down) is counted and the last facts stay published, and the run is never affected.
- How long a partition is held is measured by the probe's own samples (``HeldClock``): the time
  since the LSO it reports was first seen held, so it covers any producer's transaction, not
  only the pipeline's, to within one interval.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from kafka_eos.config.model import DEFAULT_SAMPLE_INTERVAL_S, PipelineConfig
from kafka_eos.connectors.pipeline.spark_options import late_topic, sink_options
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.txn.sink_config import SinkConfig
from kafka_eos.txn.sink_status import last_decision, open_transactions, prefix_ids
from kafka_eos.txn.verify_runs import VerifyRun, runs_since
from kafka_eos.txn.topic_guard import describe_topics

log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]


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
        new_runs = self._verify_runs()
        return OutputFacts(len(opened), oldest.age_ms / 1000 if oldest else 0.0,
                           oldest.timeout_ms / 1000 if oldest else 0.0, records, seconds,
                           str(decision.state), decision.batch_id if decision.batch_id is not None else -1,
                           new_runs, self._latest_verify)

    def _verify_runs(self) -> tuple[VerifyRun, ...]:
        """The verify runs recorded since the last sample (the newest is kept for the gauges)."""
        runs = runs_since(self.sink.log_location, -1 if self._latest_verify is None else self._latest_verify.at_ms)
        if runs:
            self._latest_verify = runs[-1]
        new = tuple(r for r in runs if r.at_ms > self._verified_seen_ms)
        self._verified_seen_ms = max([self._verified_seen_ms, *(r.at_ms for r in new)])
        return new


class OperatorProbe:
    """Runs ``sample`` every ``interval_s`` in a daemon thread and hands each result to
    ``publish``; ``failed`` is called with each sample's error instead."""

    def __init__(self, sample: Callable[[], OutputFacts], publish: Callable[[OutputFacts], None],
                 failed: Callable[[BaseException], None], interval_s: float = DEFAULT_SAMPLE_INTERVAL_S) -> None:
        self.sample, self.publish, self.failed, self.interval_s = sample, publish, failed, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kafka-eos-operator-probe", daemon=True)

    def start(self) -> "OperatorProbe":
        self._thread.start()
        return self

    def once(self) -> None:
        try:
            facts = self.sample()
        except Exception as exc:  # noqa: BLE001 - a monitoring sample never stops the run
            log.debug("kafka-eos: operator probe sample failed: %r", exc)
            self.failed(exc)
            return
        self.publish(facts)

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.once()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(self.interval_s + 15)


def output_topics(cfg: PipelineConfig) -> tuple[str, ...]:
    """The topics the pipeline's transactions write: the sink's, the DLQ and the late topic."""
    return tuple(sorted({t for t in (cfg.sink.topic, cfg.errors.dlq_topic, late_topic(cfg)) if t}))


def for_pipeline(cfg: PipelineConfig, publish: Callable[[OutputFacts], None],
                 failed: Callable[[BaseException], None]) -> OperatorProbe | None:
    """The started probe of an exactly-once pipeline (None for at-least-once: no transactions)."""
    if not cfg.exactly_once:
        return None
    sampler = OutputSampler(sink_config(sink_options(cfg)), output_topics(cfg))
    interval = cfg.metrics.sample_interval_s if cfg.metrics else DEFAULT_SAMPLE_INTERVAL_S
    return OperatorProbe(sampler.sample, publish, failed, interval).start()
