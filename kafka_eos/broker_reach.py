"""What each broker of ``bootstrap.servers`` does when asked (in ``broker_outcomes``' words).

Enforced here:
- ``probe(conf, timeout_s)`` asks every listed broker at once, each with its own librdkafka
  client limited to that one address (the caller's connection and security settings), for
  metadata within ``timeout_s``, and returns address -> None (it answered) or its outcome.
  librdkafka reports why a connection failed only to ``error_cb``, so the outcome is read there.
"""
from __future__ import annotations

import threading
from typing import Mapping

from confluent_kafka import KafkaError, KafkaException

from kafka_eos import client_factory
from kafka_eos.broker_outcomes import from_librdkafka, other, silent
from kafka_eos.client_factory import AdminFactory, Noise
from kafka_eos.kafka_clients import admin_settings


def addresses(conf: Mapping[str, object]) -> list[str]:
    return [a.strip() for a in str(conf.get("bootstrap.servers", "")).split(",") if a.strip()]


class _LastError:
    """An ``error_cb`` keeping the last error other than the all-brokers-down summary."""

    def __init__(self) -> None:
        self.last: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.code() != KafkaError._ALL_BROKERS_DOWN or self.last is None:
            self.last = error


def _ask(conf: Mapping[str, object], address: str, timeout_s: float, out: dict[str, str | None],
         new_admin: AdminFactory) -> None:
    errors = _LastError()
    settings = {**admin_settings({k: v for k, v in conf.items() if not callable(v)}),
                "bootstrap.servers": address, "error_cb": errors}
    admin = None
    try:
        admin = new_admin(settings)
        admin.list_topics(timeout=timeout_s)
        out[address] = None
    except KafkaException:  # its own error says only "no broker up": the broker's reason is in error_cb
        if admin is not None:
            admin.poll(0)  # serves the error callbacks queued meanwhile
        out[address] = from_librdkafka(errors.last, timeout_s)
    except Exception as exc:  # noqa: BLE001 - a probe reports, never raises
        out[address] = other(f"{type(exc).__name__}: {exc}")


def probe(conf: Mapping[str, object], timeout_s: float = 5.0,
          new_admin: AdminFactory = client_factory.quiet(client_factory.admin, Noise.SILENT)
          ) -> dict[str, str | None]:
    """Each listed broker's outcome (None: it answered), all asked at once within ``timeout_s``."""
    out: dict[str, str | None] = {}
    threads = [threading.Thread(target=_ask, args=(conf, a, timeout_s, out, new_admin), daemon=True)
               for a in addresses(conf)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s + 5)
    return {a: out.get(a, silent(timeout_s)) for a in addresses(conf)}
