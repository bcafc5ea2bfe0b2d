"""Ask a Kafka cluster for its brokers and a broker's configuration (Metadata, DescribeConfigs).

The one way kafka-eos reads a broker setting such as ``transaction.max.timeout.ms``: the live
validation and the sink's start-up check both call ``transaction_max_timeout_ms``.

Invariants:
- Reads only (Metadata, DescribeConfigs); nothing is created or changed on a cluster.
- The client takes librdkafka settings as given (confluent-kafka's AdminClient, built by
  ``kafka_eos.client_factory`` with ``Noise.SILENT``), so every connection and security setting
  the producers use applies here too; its own log is silenced (every failure is raised typed).
- The broker asked is the lowest broker id in the cluster metadata that answers, on a BROKER
  resource (a broker that does not answer within the request timeout is passed over); the value
  reported includes the broker's defaults.
- DescribeConfigs is retried on transient errors (``kafka_clients.is_transient``) until ``timeout_s``.
- Failures are typed: ``SettingsRefused`` (the client refuses the settings),
  ``AuthenticationFailed`` (the brokers refused the SASL login: ``txn.auth_errors``, user and
  mechanism named), ``ClusterUnreachable`` (no metadata within ``timeout_s``, or no live broker),
  ``DescribeConfigsFailed``; callers decide what each means to them.
"""
from __future__ import annotations

import weakref
from typing import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kafka_eos import KafkaEosError, client_factory
from kafka_eos.client_factory import AdminFactory, Noise
from kafka_eos.kafka_clients import PartialFailure, admin_settings, is_transient, request_s
from kafka_eos.txn.cluster.auth_errors import AuthWatch, failure

TRANSACTION_MAX_TIMEOUT_MS = "transaction.max.timeout.ms"
# each admin client of ``admin_client``: its error callback and the settings it logs in with
WATCHES: weakref.WeakKeyDictionary[AdminClient, tuple[AuthWatch, Mapping[str, str]]] = weakref.WeakKeyDictionary()


class BrokerConfigError(KafkaEosError):
    """A broker could not be asked; ``detail`` says why (librdkafka's words)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class SettingsRefused(BrokerConfigError):
    """The Kafka client refuses these settings."""


class ClusterUnreachable(BrokerConfigError):
    """No metadata within the timeout; ``no_brokers`` when the cluster answered with no live broker."""

    def __init__(self, detail: str, no_brokers: bool = False) -> None:
        super().__init__(detail)
        self.no_brokers = no_brokers


class AuthenticationFailed(BrokerConfigError):
    """The brokers refused the client's login; ``detail`` names the user and mechanism, ``fix`` what to check."""

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.fix = fix


class DescribeConfigsFailed(BrokerConfigError):
    """DescribeConfigs on ``broker_id`` failed or did not answer in time."""

    def __init__(self, broker_id: int, detail: str) -> None:
        super().__init__(detail)
        self.broker_id = broker_id


def admin_client(conf: Mapping[str, str]) -> AdminClient:
    """A silent metadata-path AdminClient; ``SettingsRefused`` if librdkafka refuses ``conf``."""
    watch = AuthWatch()
    try:
        admin = client_factory.admin({**admin_settings(conf), "error_cb": watch}, Noise.SILENT)
    except (KafkaException, ValueError, TypeError) as exc:
        raise SettingsRefused(str(exc)) from None
    WATCHES[admin] = (watch, conf)  # read by broker_ids when the metadata request fails
    return admin


def broker_ids(admin: AdminClient, timeout_s: float) -> list[int]:
    """The live brokers' ids, lowest first."""
    try:
        brokers = admin.list_topics(timeout=timeout_s).brokers
    except KafkaException as exc:
        _raise_if_authentication(admin)
        raise ClusterUnreachable(exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)) from None
    if not brokers:
        raise ClusterUnreachable("the cluster answered with no live brokers", no_brokers=True)
    return sorted(brokers)


def _raise_if_authentication(admin: AdminClient) -> None:
    """``AuthenticationFailed`` if librdkafka's error callback saw the login refused."""
    watch, conf = WATCHES.get(admin, (None, {}))
    if watch is not None:
        admin.poll(0)  # serves the error callbacks queued while the request waited
        if watch.last:
            raise AuthenticationFailed(*failure(conf, watch.last))


def broker_config(conf: Mapping[str, str], key: str, timeout_s: float = request_s("checks.broker_config"),
                  new_admin: AdminFactory = admin_client) -> str | None:
    """The value of ``key`` on the lowest-id broker that answers (None if it does not report it)."""
    admin = new_admin(conf)
    brokers = broker_ids(admin, timeout_s)
    per_broker = min(request_s("checks.broker_config"), timeout_s)
    try:
        for attempt in Retrying(retry=retry_if_exception(is_transient), stop=stop_after_delay(timeout_s),
                                wait=wait_exponential(0.1, max=1.0), reraise=True):
            with attempt:
                entries = _first_answer(admin, brokers, per_broker)
    except (KafkaException, TimeoutError, PartialFailure) as exc:
        raise DescribeConfigsFailed(brokers[0], str(exc) or "no answer within the timeout") from None
    entry = entries.get(key)
    return None if entry is None else entry.value


def _first_answer(admin: AdminClient, brokers: list[int], timeout_s: float) -> dict:
    """DescribeConfigs of the first broker in ``brokers`` that answers within ``timeout_s``; a
    broker that does not (hung, cut off) is passed over for the next one."""
    failures: dict[int, BaseException] = {}
    for broker in brokers:
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        try:
            return admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(timeout_s)
        except (KafkaException, TimeoutError) as exc:
            if not is_transient(exc):
                raise
            failures[broker] = exc
    raise PartialFailure(failures)


def transaction_max_timeout_ms(conf: Mapping[str, str], timeout_s: float = request_s("checks.broker_config"),
                               new_admin: AdminFactory = admin_client) -> int | None:
    """The broker's ``transaction.max.timeout.ms`` (None if it does not report one)."""
    value = broker_config(conf, TRANSACTION_MAX_TIMEOUT_MS, timeout_s, new_admin)
    return None if value is None else int(value)
