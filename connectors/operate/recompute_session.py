"""One local SparkSession kept for the re-runs of ``verify --follow --recompute``.

Invariant: the session is started (and its streaming engine warmed) by ``warm`` or the first
re-run, quiet as ``kafka-eos run``'s, and stopped by ``close``.
"""
from __future__ import annotations

from typing import Any, Callable

from kafka_eos.config.model import PipelineConfig

WARM_UP_S = 120.0


class RecomputeSession:
    """``session(batches)`` -> ``recompute.Recomputed``; ``close()`` stops Spark if it started."""

    def __init__(self, cfg: PipelineConfig, progress: Callable[[str], None] = lambda line: None,
                 master: str = "local[*]") -> None:
        self.cfg, self.progress, self.master = cfg, progress, master
        self._spark: Any = None

    def _session(self) -> Any:
        if self._spark is None:
            from kafka_eos.connectors.pipeline.compiled_pyspark import set_spark_home
            from kafka_eos.connectors.pipeline.console import console_conf, quiet_environment
            from kafka_eos.connectors.pipeline.runner import RUN_CONF
            from kafka_eos.connectors.spark_harness import local_session
            quiet_environment(self.master, False)
            set_spark_home()
            self._spark = local_session(self.master, app=f"kafka-eos verify --follow {self.cfg.name}",
                                        conf={**RUN_CONF, **console_conf(False)})
        return self._spark

    def warm(self) -> None:
        """Start the session now and run one small streaming query the way a re-run does (a
        ``foreachBatch`` of a ``mapInArrow``), so the first re-run does not pay for the engine's,
        the Python workers' and the callback server's start (the re-run worker calls this once)."""
        import threading
        spark = self._session()
        done = threading.Event()

        def batch(df: Any, _batch_id: int) -> None:
            if df.mapInArrow(lambda batches: batches, df.schema).collect():  # rows: the Python workers ran
                done.set()
        query = (spark.readStream.format("rate").option("rowsPerSecond", 10).load().writeStream
                 .foreachBatch(batch).queryName("kafka-eos-recompute-warm-up").start())
        try:
            done.wait(WARM_UP_S)
        finally:
            query.stop()

    def __call__(self, batches: list[int]) -> Any:
        from kafka_eos.connectors.operate.recompute import recompute
        return recompute(self._session(), self.cfg, batches, self.progress)

    def close(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None
