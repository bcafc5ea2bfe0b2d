"""``kafka_eos.connectors.verify``: ``kafka-eos verify [--recompute]`` for a query built in code.

The user hands the same function their query runs between the ``kafka-eos`` source and sink
(``build``: the source stream in, the frame given to ``writeStream.format("kafka-eos")`` out),
the source and sink options and the query's checkpoint location; the rest is the pipeline
verify's (``pipeline.verify.verify_sink``, ``pipeline.recompute.replay_batches``).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from kafka_eos.connectors.operate.recompute import replay_batches
from kafka_eos.connectors.operate.verify import VerifyReport, verify_sink
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.source.options import parse_source_options


def verify_query(spark: Any, build: Callable[[Any], Any], source_options: Mapping[str, str],
                 sink_options: Mapping[str, str], checkpoint_location: str, batches: tuple[int, int] | None = None,
                 recompute: bool = True, progress: Callable[[str], None] = lambda line: None) -> VerifyReport:
    """Each committed batch of the query's sink log (``batches``: an inclusive id range) read back
    and, with ``recompute``, re-run through ``build`` over its recorded input."""
    from kafka_eos.connectors import register
    config = sink_config({**sink_options, "checkpointLocation": checkpoint_location})

    def frame_of(extra: dict[str, str], _scratch: str) -> Any:
        register(spark)
        return build(spark.readStream.format("kafka-eos").options(**{**source_options, **extra}).load())

    def again(ids: list[int]):
        inputs = parse_source_options(source_options, streaming=True).admin_conf()
        return replay_batches(spark, frame_of, checkpoint_location, config, ids, progress, input_conf=inputs)

    return verify_sink(config, batches, progress=progress, recompute=again if recompute else None)
