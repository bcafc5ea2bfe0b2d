"""kafka-eos: exactly-once Kafka-to-Kafka pipelines on PySpark.

The import namespace of the project's folders (see pyproject's package-dir): ``kafka_eos.txn``
(the two-phase commit), ``kafka_eos.offsets`` (offset state and planning), ``kafka_eos.serde``
(formats and codecs), ``kafka_eos.config`` (the YAML model and its rules) and
``kafka_eos.connectors`` (Spark source, sink, pipelines, CLI). Loggers live under ``kafka_eos``.
"""
from __future__ import annotations


class KafkaEosError(Exception):
    """Base of every error kafka-eos raises on purpose (catch this to catch them all)."""
