"""``kafka-eos monitor pipeline.yaml...``: the pipelines' probes in one process that outlives their drivers.

    kafka-eos monitor orders.yaml clicks.yaml --port 9465 --host 0.0.0.0

What a dead driver's endpoint no longer says (open and decided-but-uncommitted transactions and
their age, output held back behind the last stable offset and for how long, the newest decision,
lag and the time since the last commit) is read here from each pipeline's checkpoint, sink log
and brokers, by the probes the driver runs too (``probes.start_probes``), and exported as the
same series with ``exporter="monitor"``; alerts take whichever answers.

Invariants:
- It needs no Spark session (nothing here imports pyspark) and no running driver.
- One registry and one endpoint (``MetricsServer``; loopback unless ``--host``) for every
  pipeline given; two files of one pipeline name are refused, their series would be one.
- It commits and aborts nothing, and writes nothing but, with ``verify``, the followers' records
  beside the sink logs, so it may run beside the drivers, and
  a pipeline whose brokers do not answer only counts its probes' failures.
- With ``verify``, it also runs each exactly-once pipeline's follower (``verify_follow``: every
  committed batch read back and judged within seconds of its commit, no re-runs: those need
  Spark), one thread each; a follower's failing round never stops the others or the probes.
- It runs until SIGTERM or Ctrl-C, then stops its probes and its endpoint and returns 128 + the
  signal's number (143, 130), as a shell reports a stop by a signal; 0 when stopped from code.
"""
from __future__ import annotations

import signal
import threading
from collections import Counter
from typing import Callable

from kafka_eos.config.model import DEFAULT_METRICS_HOST, PipelineConfig
from kafka_eos.connectors.operate.metric_table import MONITOR, MONITORED, register
from kafka_eos.connectors.operate.metrics_server import MetricsServer
from kafka_eos.connectors.operate.operator_probe import OperatorProbe
from kafka_eos.connectors.operate.probe_gauges import ProbeGauges
from kafka_eos.connectors.operate.probes import start_probes

DEFAULT_PORT = 9465   # the driver's is 9464 (metrics.port)


def duplicate_names(cfgs: list[PipelineConfig]) -> list[str]:
    """Pipeline names given more than once."""
    return sorted(name for name, n in Counter(cfg.name or "kafka-eos" for cfg in cfgs).items() if n > 1)


class Monitor:
    """The started probes of ``cfgs`` and the endpoint that serves their series; ``close`` stops both."""

    def __init__(self, cfgs: list[PipelineConfig], port: int = DEFAULT_PORT, host: str = DEFAULT_METRICS_HOST,
                 timeout_s: float = 10.0, verify: bool = False, emit: Callable[[str], None] = lambda line: None) -> None:
        from prometheus_client import CollectorRegistry
        self.registry = CollectorRegistry()
        made = register(self.registry, MONITORED)
        self.probes: list[OperatorProbe] = []
        for cfg in cfgs:
            self.probes += start_probes(cfg, ProbeGauges(made, cfg.name or "kafka-eos", MONITOR), timeout_s)
        self._server = MetricsServer(self.registry, host, port)
        self.port = self._server.port
        self._stop_followers = threading.Event()
        self.followers = [self._follower(cfg, emit) for cfg in cfgs if verify and cfg.exactly_once]

    def _follower(self, cfg: PipelineConfig, emit: Callable[[str], None]) -> threading.Thread:
        from kafka_eos.connectors.operate.verify_follow import Follower, follow
        from kafka_eos.connectors.pipeline.spark_options import sink_options
        from kafka_eos.connectors.sink.options import sink_config
        name = cfg.name or "kafka-eos"

        def loop() -> None:
            while not self._stop_followers.is_set():
                try:
                    follower = Follower(sink_config(sink_options(cfg)), lambda line: emit(f"kafka-eos verify {name}: {line}"))
                    break
                except Exception as exc:  # noqa: BLE001 - the cluster may come later: try again
                    emit(f"kafka-eos verify {name}: cannot start following ({exc}); retrying in 10 s")
                    self._stop_followers.wait(10)
            else:
                return
            follow(follower, name, self._stop_followers, emit)
        thread = threading.Thread(target=loop, name=f"kafka-eos-follow-{name}", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self._stop_followers.set()
        for thread in self.followers:
            thread.join(30)
        for probe in self.probes:
            probe.close()
        self._server.close()


def run(cfgs: list[PipelineConfig], port: int, host: str, emit: Callable[[str], None],
        stop: threading.Event | None = None, timeout_s: float = 10.0, verify: bool = False) -> int:
    """Serve until ``stop`` is set (SIGTERM and SIGINT set it when this is the main thread)."""
    stop = stop or threading.Event()
    received: list[int] = []
    if threading.current_thread() is threading.main_thread():
        def on_signal(signum: int, _frame: object) -> None:
            received.append(signum)
            stop.set()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
    monitor = Monitor(cfgs, port, host, timeout_s, verify, emit)
    try:
        names = ", ".join(cfg.name or "kafka-eos" for cfg in cfgs)
        where = f"[{host}]" if ":" in host else host
        emit(f"kafka-eos monitor: {len(cfgs)} pipeline(s) ({names}): metrics at http://{where}:{monitor.port}/metrics"
             + (f"; following {len(monitor.followers)} with verify" if verify else ""))
        stop.wait()
    finally:
        monitor.close()
    emit("kafka-eos monitor: stopped")
    return 128 + received[0] if received else 0
