"""The probes of one pipeline, started for whichever exporter asks (the driver's endpoint, the monitor).

Invariants:
- Every pipeline gets a lag probe (``lag_sampler``); an exactly-once one also an output probe
  (``operator_probe.OutputSampler``): an at-least-once sink has no transactions to watch.
- Both sample every ``metrics.sample_interval_s`` of the file (else 15 s), each in its own
  thread, so a source cluster that does not answer never stalls the output's facts, nor the
  reverse. The lag probe samples sooner when input that waits nears the stall threshold, and
  every few seconds while stalled (``txn.stall.next_sample_in_s``): a stall is exported when it
  crosses the threshold and its end soon after, not up to an interval later.
"""
from __future__ import annotations

from kafka_eos.config.model import DEFAULT_SAMPLE_INTERVAL_S, PipelineConfig
from kafka_eos.connectors.operate import lag_sampler
from kafka_eos.connectors.operate.batch_times import trigger_s
from kafka_eos.connectors.operate.lag import LagFacts
from kafka_eos.connectors.operate.operator_probe import OperatorProbe, OutputSampler, output_topics
from kafka_eos.connectors.operate.probe_gauges import LAG, OUTPUT, ProbeGauges
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.txn.log.stall import next_sample_in_s, stall_threshold_s


def sample_interval_s(cfg: PipelineConfig) -> int:
    return cfg.metrics.sample_interval_s if cfg.metrics else DEFAULT_SAMPLE_INTERVAL_S


def batch_budget_s(cfg: PipelineConfig) -> float:
    """The budget ``txn.timeouts`` checks ``transaction.timeout.ms`` against: the trigger interval +
    ``sink.batch_margin_ms`` (exported for that rule only; a stall is judged by ``txn.stall``)."""
    return trigger_s(cfg) + cfg.sink.batch_margin_ms / 1000


def start_probes(cfg: PipelineConfig, gauges: ProbeGauges, timeout_s: float = 10.0) -> list[OperatorProbe]:
    """The started probes of ``cfg``, publishing to ``gauges`` (close each to stop it)."""
    interval = sample_interval_s(cfg)
    gauges.settings(batch_budget_s(cfg), interval, stall_threshold_s(trigger_s(cfg), ()))
    name = cfg.name or "kafka-eos"
    lag = lag_sampler.for_pipeline(cfg, timeout_s)
    gauges.expect(LAG)

    def lag_due(facts: LagFacts) -> float:
        threshold = facts.stall_threshold_s
        return interval if threshold is None else next_sample_in_s(facts.waiting_s, threshold, interval)
    probes: list[OperatorProbe] = [OperatorProbe(lag.sample, gauges.lag, lambda e: gauges.failed(LAG, e), interval,
                                                 f"kafka-eos-lag-{name}", lag.close, lag_due)]
    if cfg.exactly_once:
        output = OutputSampler(sink_config(sink_options(cfg)), output_topics(cfg), timeout_s)
        gauges.expect(OUTPUT)
        probes.append(OperatorProbe(output.sample, gauges.output, lambda e: gauges.failed(OUTPUT, e), interval,
                                    f"kafka-eos-output-{name}"))
    return [probe.start() for probe in probes]
