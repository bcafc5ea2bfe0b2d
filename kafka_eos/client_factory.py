"""The one place kafka-eos builds a Kafka client: confluent-kafka's ``AdminClient``, ``Producer``
and ``Consumer``, and the driver's kafka-python control-plane client.

Invariants:
- Every client of txn/, offsets/ and the connectors' readers is built here (a unit test finds
  every other constructor call and fails). Collaborators receive a builder as a factory
  (``AdminFactory``, ``ProducerFactory``, ``ConsumerFactory``: settings -> client) with a
  production default, so a test passes a fake factory instead of patching a module global.
- One log policy (``Noise``), chosen by what the caller does with a failure:
  ``LIBRDKAFKA`` for the pipeline's running clients (source lookups, reads, head records):
  librdkafka's own log, a user's ``log_level`` wins; ``ERRORS`` (log_level 3) for one-off
  clients whose failures the caller reports (ACL checks, the prefix-claim topic, dev tools, the
  demo); ``SILENT`` (log_level 0) where the caller turns every failure into its own error (the
  broker-settings check, ``describe``); ``DEBUG`` for a probe whose failure is expected (the
  transactional-id ACL probe): librdkafka's lines go to this module's logger at debug.
- Settings are taken as given: the caller chooses the metadata- or data-path defaults
  (``kafka_clients.admin_settings`` / ``data_settings``); ``lookup_admin`` is the driver's
  lookup client with the metadata-path defaults. Nothing here connects before a call is made.
- ``kafka_eos.oauthbearer.callback=module:function`` (not a librdkafka setting) becomes
  confluent-kafka's ``oauth_cb`` for every librdkafka client, and the control plane's token
  provider (``kafka_eos.oauth_tokens``): one function serves the executors and the driver.
- A truststore (``ssl.truststore.location`` / ``.password`` / ``.type``, not librdkafka settings)
  becomes ``ssl.ca.pem`` for every librdkafka client (``kafka_eos.truststores``, which raises
  ``StoreProblem`` for one no client can use); the control plane trusts the same certificates.
- A client the driver keeps across calls is held by ``HeldClients``: one per connection settings
  per process, built on first use, forgotten by ``drop`` (the caller's next ``get`` builds anew).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
import logging
import threading
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Collection, Generic, Mapping, TypeVar

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from kafka_eos import truststores
from kafka_eos.kafka_clients import admin_settings, control_plane_settings
from kafka_eos.oauth_tokens import CALLBACK_KEY, load_callback

if TYPE_CHECKING:  # kafka-python is the driver's alone; a task's worker does not import it
    from kafka_eos.control_plane_client import ControlPlaneClient

log = logging.getLogger(__name__)
C = TypeVar("C")
Settings = Mapping[str, Any]
AdminFactory = Callable[[Settings], AdminClient]
ProducerFactory = Callable[[Settings], Producer]
ConsumerFactory = Callable[[Settings], Consumer]


class Noise(Enum):
    """How much of librdkafka's own log a client writes (see the module's invariants)."""
    LIBRDKAFKA = "librdkafka"
    ERRORS = "errors"
    SILENT = "silent"
    DEBUG = "debug"


class _DebugLog:
    """librdkafka's log lines at Python debug level (a probe's expected fatal error included)."""

    def log(self, level: int, msg: str, *args: object) -> None:
        log.debug(msg, *args)


_LOG_LEVEL = {Noise.ERRORS: 3, Noise.SILENT: 0}


def with_noise(conf: Settings, noise: Noise) -> dict[str, Any]:
    """``conf`` with the log settings of ``noise`` (they win over the caller's), the OAuth
    callback setting as ``oauth_cb`` and a truststore as ``ssl.ca.pem``."""
    conf = truststores.librdkafka_settings(conf)
    if CALLBACK_KEY in conf:
        conf = {**{k: v for k, v in conf.items() if k != CALLBACK_KEY}, "oauth_cb": load_callback(conf[CALLBACK_KEY])}
    if noise is Noise.DEBUG:
        return {**conf, "logger": _DebugLog()}
    if noise in _LOG_LEVEL:
        return {**conf, "log_level": _LOG_LEVEL[noise]}
    return dict(conf)


def admin(conf: Settings, noise: Noise = Noise.LIBRDKAFKA) -> AdminClient:
    return AdminClient(with_noise(conf, noise))


def producer(conf: Settings, noise: Noise = Noise.LIBRDKAFKA) -> Producer:
    return Producer(with_noise(conf, noise))


def consumer(conf: Settings, noise: Noise = Noise.LIBRDKAFKA) -> Consumer:
    return Consumer(with_noise(conf, noise))


def quiet(build: Callable[..., Any], noise: Noise) -> Callable[[Settings], Any]:
    """``build`` (admin, producer, consumer) as a one-argument factory with ``noise``."""
    return functools.partial(build, noise=noise)


def lookup_admin(conf: Settings) -> AdminClient:
    """The driver's lookup client: metadata-path defaults, librdkafka's own log; a callback in
    ``conf`` (``error_cb``) is kept as given."""
    callbacks = {k: v for k, v in conf.items() if callable(v)}
    return admin({**admin_settings({k: v for k, v in conf.items() if k not in callbacks}), **callbacks})


def control_plane_client(settings: Mapping[str, object]) -> ControlPlaneClient:
    """The control-plane client for kafka-python ``settings`` (``txn.client_settings`` maps
    librdkafka's), with the per-request timeout and keepalive of ``kafka_clients``."""
    from kafka_eos.control_plane_client import ControlPlaneClient
    return ControlPlaneClient(**settings, **control_plane_settings())


@dataclass(frozen=True)
class QuietClients:
    """Admin, consumer and producer factories logging librdkafka's errors only (``Noise.ERRORS``),
    for collaborators that report their own failures (the prefix-claim topic, the record store);
    a unit test passes fakes."""
    admin: AdminFactory = quiet(admin, Noise.ERRORS)
    consumer: ConsumerFactory = quiet(consumer, Noise.ERRORS)
    producer: ProducerFactory = quiet(producer, Noise.ERRORS)


class HeldClients(Generic[C]):
    """One client per connection settings per process (thread-safe): ``get`` builds it with
    ``build`` on first use, ``drop`` forgets it. Settings named in ``ignored`` do not tell
    clients apart."""

    def __init__(self, build: Callable[[Settings], C], ignored: Collection[str] = ()) -> None:
        self._build, self._ignored = build, frozenset(ignored)
        self._clients: dict[tuple, C] = {}
        self._lock = threading.Lock()

    def _key(self, conf: Settings) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in conf.items() if k not in self._ignored))

    def get(self, conf: Settings) -> C:
        key = self._key(conf)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self._build(conf)
            return client

    def drop(self, conf: Settings, client: C) -> None:
        """Forget ``client`` if it is still the one held for ``conf``."""
        key = self._key(conf)
        with self._lock:
            if self._clients.get(key) is client:
                del self._clients[key]
