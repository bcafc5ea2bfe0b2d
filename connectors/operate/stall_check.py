"""The stall side of ``kafka-eos status``: how long input has waited with no batch committed, the
pipeline's stall threshold (``batch_times``, the value the alerts use), and whether its driver's
metrics endpoint answers.

    input waiting   0 when nothing is behind; else the time since the later of the last commit
                    and the oldest unread record's Kafka timestamp (a one-shot command has no
                    earlier samples to say when the input was first seen)
    driver          with ``metrics:`` in the file: whether its endpoint answers within a few
                    seconds (a frozen driver accepts the connection and says nothing; a dead one
                    refuses it); None without an endpoint

Invariants:
- Reads only (checkpoint, sink log, the source's first unread records, one HTTP GET of the
  driver's endpoint that sends no credentials); it commits nothing and joins no consumer group.
- A record whose timestamp is older than the last commit (a producer's CreateTime from the past)
  waits from that commit: never longer than the truth since the commit, so an idle pipeline is not
  called stalled by the age of the data it is given, only by the time since its last batch.
"""
from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.operate.batch_times import for_pipeline as batch_times
from kafka_eos.connectors.operate.lag import PartitionLag, TopicPartition, records_behind, source_lag
from kafka_eos.connectors.operate.lag_sampler import last_commit_s
from kafka_eos.connectors.pipeline.spark_options import sink_options, source_options
from kafka_eos.connectors.sink.options import sink_log_location
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.offsets.record_times import RecordTimes

DRIVER_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class StallFacts:
    threshold_s: float                 # the stall threshold (``txn.stall``)
    waiting_s: float                   # how long input has waited with no batch committed (0: none waits)
    records_waiting: int
    last_commit_s: float | None        # Unix time of the newest commit the sink log records
    driver: str | None = None          # "answers at URL", "does not answer at URL (why)"; None: no endpoint

    @property
    def stalled(self) -> bool:
        return self.waiting_s > self.threshold_s

    def document(self) -> dict[str, Any]:
        return asdict(self)


def input_waiting_s(now_s: float, last_commit: float | None, lag: Mapping[TopicPartition, PartitionLag]) -> float:
    """Seconds input has waited with no batch committed (see the module's note), from one reading."""
    if sum(p.records for p in lag.values()) <= 0:
        return 0.0
    oldest = max((p.seconds for p in lag.values()), default=0.0)
    waited = oldest if last_commit is None else min(oldest, now_s - last_commit)
    return round(max(0.0, waited), 3)


def driver_answer(url: str, timeout_s: float = DRIVER_TIMEOUT_S) -> str:
    """Whether the endpoint at ``url`` answers (any HTTP answer, a refused login too, counts)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE   # liveness only: nothing is sent or read
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context if url.startswith("https") else None):
            return f"answers at {url}"
    except urllib.error.HTTPError:
        return f"answers at {url}"
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"does not answer at {url} ({reason})"


def gather(cfg: PipelineConfig, positions: Mapping[TopicPartition, int] | None,
           ends: Mapping[TopicPartition, int], timeout_s: float) -> StallFacts:
    """The stall facts of ``cfg`` given its committed position and the source's ends just read."""
    sink_log = sink_log_location(sink_options(cfg)) if cfg.exactly_once else None
    threshold = batch_times(cfg).threshold_s()
    positions = positions or {}
    behind = {tp: positions[tp] for tp, n in records_behind(positions, ends).items() if n > 0}
    heads: Mapping[TopicPartition, Any] = {}
    if behind:
        times = RecordTimes(parse_source_options(source_options(cfg), streaming=True).admin_conf(), timeout_s)
        try:
            heads = times.heads(behind)
        finally:
            times.close()
    last = last_commit_s(sink_log) if sink_log else None     # after the brokers' answers, however slow
    now = time.time()
    lag = source_lag(positions, ends, heads, int(now * 1000))
    waiting = input_waiting_s(now, last, lag)
    driver = None
    if waiting > threshold and cfg.metrics is not None:
        driver = driver_answer(cfg.metrics.url)
    return StallFacts(threshold, waiting, sum(p.records for p in lag.values()), last, driver)
