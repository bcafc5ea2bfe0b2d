"""kafka-eos: exactly-once Kafka-to-Kafka pipelines on PySpark.

The import namespace of the project's folders (see pyproject's package-dir): ``kafka_eos.txn``
(the two-phase commit), ``kafka_eos.offsets`` (offset state and planning), ``kafka_eos.serde``
(formats and codecs), ``kafka_eos.config`` (the YAML model and its rules) and
``kafka_eos.connectors`` (Spark source, sink, pipelines, CLI). Loggers live under ``kafka_eos``.
"""
from __future__ import annotations

from typing import Any, Callable

from kafka_eos.runbooks import ending


def _ending_with_runbook(own: Callable[[Any], str]) -> Callable[[Any], str]:
    def __str__(self: Any) -> str:
        return ending(type(self), own(self))
    __str__.__doc__ = own.__doc__
    return __str__


class KafkaEosError(Exception):
    """Base of every error kafka-eos raises on purpose (catch this to catch them all).

    The message of an error ``kafka_eos.runbooks`` names (or of a subclass of one) ends with the
    anchor of its runbook in docs/runbooks.md, also when a subclass writes its own ``__str__``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__str__")
        if own is not None:
            cls.__str__ = _ending_with_runbook(own)  # type: ignore[method-assign]

    def __str__(self) -> str:
        return ending(type(self), super().__str__())
