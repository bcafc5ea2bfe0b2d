"""The probes of one pipeline, started for whichever exporter asks (the driver's endpoint, the monitor).

Invariants:
- Every pipeline gets a lag probe (``lag_sampler``); an exactly-once one also an output probe
  (``operator_probe.OutputSampler``): an at-least-once sink has no transactions to watch.
- Both sample every ``metrics.sample_interval_s`` of the file (else 15 s), each in its own
  thread, so a source cluster that does not answer never stalls the output's facts, nor the
  reverse.
"""
from __future__ import annotations

from kafka_eos.config.model import DEFAULT_SAMPLE_INTERVAL_S, PipelineConfig
from kafka_eos.connectors.operate import lag_sampler
from kafka_eos.connectors.operate.operator_probe import OperatorProbe, OutputSampler, output_topics
from kafka_eos.connectors.operate.probe_gauges import LAG, OUTPUT, ProbeGauges
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.connectors.sink.options import sink_config


def sample_interval_s(cfg: PipelineConfig) -> int:
    return cfg.metrics.sample_interval_s if cfg.metrics else DEFAULT_SAMPLE_INTERVAL_S


def batch_budget_s(cfg: PipelineConfig) -> float:
    """How long a batch of ``cfg`` may take: its trigger interval + ``sink.batch_margin_ms`` (the
    budget ``txn.timeouts`` checks ``transaction.timeout.ms`` against)."""
    trigger = cfg.checkpoint.trigger
    return ((0 if trigger.available_now else trigger.interval_ms) + cfg.sink.batch_margin_ms) / 1000


def start_probes(cfg: PipelineConfig, gauges: ProbeGauges, timeout_s: float = 10.0) -> list[OperatorProbe]:
    """The started probes of ``cfg``, publishing to ``gauges`` (close each to stop it)."""
    interval = sample_interval_s(cfg)
    gauges.settings(batch_budget_s(cfg), interval)
    name = cfg.name or "kafka-eos"
    lag = lag_sampler.for_pipeline(cfg, timeout_s)
    gauges.expect(LAG)
    probes: list[OperatorProbe] = [OperatorProbe(lag.sample, gauges.lag, lambda e: gauges.failed(LAG, e), interval,
                                                 f"kafka-eos-lag-{name}", lag.close)]
    if cfg.exactly_once:
        output = OutputSampler(sink_config(sink_options(cfg)), output_topics(cfg), timeout_s)
        gauges.expect(OUTPUT)
        probes.append(OperatorProbe(output.sample, gauges.output, lambda e: gauges.failed(OUTPUT, e), interval,
                                    f"kafka-eos-output-{name}"))
    return [probe.start() for probe in probes]
