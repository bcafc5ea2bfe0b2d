"""Spark side of kafka-eos: the ``kafka-eos`` data source (source and sink), pipelines and CLI."""


def register(spark) -> None:
    """Register the ``kafka-eos`` data source in ``spark``."""
    from kafka_eos.connectors.datasource import register as _register
    _register(spark)
