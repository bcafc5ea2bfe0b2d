"""Spark side of kafka-eos: the ``kafka-eos`` data source (source and sink), pipelines and CLI."""


def register(spark) -> None:
    """Register the ``kafka-eos`` data source in ``spark``."""
    from kafka_eos.connectors.datasource import register as _register
    _register(spark)


def check_deterministic(df, allow_nondeterministic: bool = False):
    """Refuse (``NonDeterministicPlanError``) a streaming DataFrame whose replay may give the sink
    other rows: call it on the frame given to ``writeStream.format("kafka-eos")`` before ``start()``
    (``kafka_eos.connectors.plan_check`` says what it covers)."""
    from kafka_eos.connectors.plan_check import check_deterministic as _check
    return _check(df, allow_nondeterministic)
