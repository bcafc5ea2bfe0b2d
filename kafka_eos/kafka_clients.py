"""One door for Kafka clients: their timeout settings, the timeout table and one transient test
(the clients themselves are built by ``kafka_eos.client_factory`` from these settings).

Invariants:
- ``TIMEOUTS`` names every Kafka call kafka-eos makes, with its per-request timeout, its overall
  deadline and the setting that changes the deadline. Call sites read their figures from it (by
  key), so the table and the code cannot drift apart (a unit test checks every key is used,
  another checks config/README.md's "Kafka call timeouts" table against it).
- A per-request timeout is well below its deadline (10 s against >= 120 s for the driver's
  lookups and EndTxn rounds), so a hung broker (SIGSTOP, a black hole: the TCP connection stays
  "up") costs one request, and the retry asks again with fresh metadata (a new librdkafka client
  on the driver: an old one keeps its connection to the hung broker and may pick it again).
- Client settings only fill in what the user left unset (a user's ``socket.timeout.ms`` wins):
  TCP keepalive on, and ``socket.timeout.ms`` 10 s on metadata paths (AdminClient, the head-record
  reader), 30 s on data paths (fetch, produce), instead of librdkafka's 60 s.
- ``is_transient`` is the one classification of a failed Kafka call (confluent-kafka or
  kafka-python) as a broker outage, hang, leader or coordinator move: retry within the deadline;
  anything else (authorization, a bad request, a fatal producer error) is not retried.
"""
from __future__ import annotations

import socket
import sys
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Mapping

from confluent_kafka import KafkaError, KafkaException

from kafka_eos import KafkaEosError

REQUEST_S = 10.0              # one request to one broker, on the driver's metadata/control paths
LOOKUP_DEADLINE_MS = 120_000  # source lookups on the driver (outlasts a failover and replica.lag.time.max.ms)
COMMIT_DEADLINE_MS = 120_000  # the driver's EndTxn rounds for one batch
METADATA_SOCKET_TIMEOUT_MS = 10_000
DATA_SOCKET_TIMEOUT_MS = 30_000
BOOTSTRAP_TRY_S = 5.0         # the control plane's first try of one bootstrap broker (doubled each round)
BOOTSTRAP_DEADLINE_S = 60.0   # the control plane's bootstrap, every listed broker tried in turn


@dataclass(frozen=True)
class CallTimeout:
    """How long one Kafka call may take: ``request_s`` per request, ``deadline_s`` in all (retries
    included), changed with ``setting``; ``retries`` says what a retry does; ``one_silent`` what
    happens when one broker of several does not answer (hung, cut off)."""
    where: str
    request_s: float
    deadline_s: float
    setting: str
    retries: str
    one_silent: str


_LOOKUP_S = LOOKUP_DEADLINE_MS / 1000
_COMMIT_S = COMMIT_DEADLINE_MS / 1000
_NEW_LEADER = "waits for the controller to move its partitions' leadership (broker.session.timeout.ms, 9 s by default)"
TIMEOUTS: dict[str, CallTimeout] = {
    "control.bootstrap": CallTimeout("driver/CLI", BOOTSTRAP_TRY_S, BOOTSTRAP_DEADLINE_S, "-",
                                     "the next listed broker at once; the try doubles each round",
                                     "costs one try (5 s), then the next listed broker"),
    "source.describe_topics": CallTimeout("driver", REQUEST_S, _LOOKUP_S, "lookupTimeoutMs", "new AdminClient",
                                          "a request to it times out (10 s); the retry's new client asks another"),
    "source.list_topics": CallTimeout("driver", REQUEST_S, _LOOKUP_S, "lookupTimeoutMs", "new AdminClient",
                                      "a request to it times out (10 s); the retry's new client asks another"),
    "source.list_offsets": CallTimeout("driver", REQUEST_S, _LOOKUP_S, "lookupTimeoutMs",
                                       "new AdminClient, unanswered partitions only",
                                       f"its partitions' ListOffsets {_NEW_LEADER}"),
    "source.head_records": CallTimeout("driver", METADATA_SOCKET_TIMEOUT_MS / 1000, _LOOKUP_S, "lookupTimeoutMs",
                                       "librdkafka refetches until the deadline", f"a fetch from it {_NEW_LEADER}"),
    "source.commit_group": CallTimeout("driver", 5.0, 5.0, "-", "none: monitoring only, a failure is logged",
                                       "the group coordinator silent: logged, nothing waits"),
    "reader.fetch": CallTimeout("executor", DATA_SOCKET_TIMEOUT_MS / 1000, 120.0, "kafkaConsumer.pollTimeoutMs",
                                "librdkafka refetches; then the task fails and Spark retries it",
                                "a fetch in flight waits 30 s, then librdkafka fetches from the new leader"),
    "reader.watermarks": CallTimeout("executor", REQUEST_S, REQUEST_S, "-", "the task fails, Spark retries it",
                                     "the task fails after 10 s, Spark retries it"),
    "sink.producer_requests": CallTimeout("executor", DATA_SOCKET_TIMEOUT_MS / 1000, 900.0, "transaction_timeout_ms",
                                          "librdkafka (metadata, InitProducerId, AddPartitionsToTxn, produce, flush)",
                                          "a produce in flight waits 30 s, then goes to the new leader; the "
                                          "transaction coordinator moves with its partition"),
    "sink.describe_output_topics": CallTimeout("driver", REQUEST_S, _COMMIT_S, "commit.timeout.ms",
                                               "the same AdminClient until a request fails, then a new one",
                                               "a request to it times out (10 s); the new client asks another"),
    "sink.prefix_claim": CallTimeout("driver", REQUEST_S, _COMMIT_S, "commit.timeout.ms",
                                     "a new consumer (fresh metadata) per attempt",
                                     f"the claim partition's read {_NEW_LEADER}"),
    "control.end_txn": CallTimeout("driver", REQUEST_S, _COMMIT_S, "commit.timeout.ms",
                                   "next round: FindCoordinator again on fresh metadata",
                                   "the coordinator moves with its __transaction_state partition; the next "
                                   "round finds it"),
    "control.describe_transactions": CallTimeout("driver", REQUEST_S, _COMMIT_S, "commit.timeout.ms",
                                                 "within the EndTxn round", "as EndTxn"),
    "control.list_transactions": CallTimeout("driver", REQUEST_S, REQUEST_S, "-", "the caller's own retry",
                                             "each broker asked in turn: the silent one named in a warning and "
                                             "passed over (10 s); its coordinator partitions usually moved"),
    "checks.broker_config": CallTimeout("driver/CLI", REQUEST_S, REQUEST_S, "--timeout", "DescribeConfigs retried",
                                        "ApiVersions: named in a warning, asked again no sooner than 5 min; "
                                        "DescribeConfigs: the next broker is asked"),
}


def request_s(call: str) -> float:
    return TIMEOUTS[call].request_s


def deadline_s(call: str) -> float:
    return TIMEOUTS[call].deadline_s


def _defaults(conf: Mapping[str, object], socket_timeout_ms: int) -> dict[str, str]:
    return {"socket.keepalive.enable": "true", "socket.timeout.ms": str(socket_timeout_ms),
            **{k: str(v) for k, v in conf.items()}}


def admin_settings(conf: Mapping[str, object]) -> dict[str, str]:
    """librdkafka settings of a metadata-path client (AdminClient, head-record consumer)."""
    return _defaults(conf, METADATA_SOCKET_TIMEOUT_MS)


def data_settings(conf: Mapping[str, object]) -> dict[str, str]:
    """librdkafka settings of a data-path client (a reader's consumer, a sink task's producer)."""
    return _defaults(conf, DATA_SOCKET_TIMEOUT_MS)


def control_plane_settings() -> dict[str, object]:
    """kafka-python settings of the driver's control-plane client (beside the connection ones): a
    request and a new connection to one broker wait at most ``REQUEST_S``."""
    options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    return {"request_timeout_ms": int(REQUEST_S * 1000), "socket_options": options,
            "bootstrap_timeout_ms": int(BOOTSTRAP_DEADLINE_S * 1000)}


def control_plane_connection_settings() -> dict[str, object]:
    """The control plane's connection manager's settings (kafka-python's admin client does not take
    them): a new connection to one broker waits ``BOOTSTRAP_TRY_S``, at most ``REQUEST_S`` after failures."""
    return {"socket_connection_setup_timeout_ms": int(BOOTSTRAP_TRY_S * 1000),
            "socket_connection_setup_timeout_max_ms": int(REQUEST_S * 1000)}


class BrokersUnreachable(KafkaEosError):
    """No broker of ``bootstrap.servers`` answered; ``outcomes``: broker address -> what it did."""

    def __init__(self, bootstrap: str, outcomes: Mapping[str, str], waited_s: float) -> None:
        said = "; ".join(f"{broker} {outcome}" for broker, outcome in outcomes.items()) or "none was tried"
        super().__init__(f"kafka-eos: no Kafka broker of bootstrap.servers={bootstrap} answered within "
                         f"{waited_s:.0f} s: {said}. Check that the brokers run and that this host reaches "
                         "them (firewall, advertised listeners, security settings)")
        self.bootstrap, self.outcomes = bootstrap, dict(outcomes)


class PartialFailure(Exception):
    """Some parts of one call failed (``errors``: part -> exception); transient if all are."""

    def __init__(self, errors: Mapping[Any, BaseException]) -> None:
        super().__init__(dict(errors))
        self.errors: dict[Any, BaseException] = dict(errors)


# librdkafka codes a broker outage, hang or leader move produces; transient whatever retriable()
# says (librdkafka's admin results mark _TIMED_OUT / _TRANSPORT as not retriable). _DESTROY_BROKER:
# a broker left the cluster's metadata (a hung one the controller fenced) and librdkafka failed the
# requests in flight to it.
_TRANSIENT_CODES = {KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                    KafkaError._WAIT_COORD, KafkaError.REQUEST_TIMED_OUT,
                    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                    KafkaError.BROKER_NOT_AVAILABLE, KafkaError.REPLICA_NOT_AVAILABLE,
                    KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.FENCED_LEADER_EPOCH,
                    KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.OFFSET_NOT_AVAILABLE,
                    KafkaError.NETWORK_EXCEPTION, KafkaError._DESTROY_BROKER}
_PYTHON_TRANSIENT = ("KafkaConnectionError", "BrokerNotAvailableError", "NodeNotReadyError", "KafkaTimeoutError")


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The ``KafkaError`` confluent-kafka raised (inside a ``KafkaException``, or as itself), else None."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    return error if isinstance(error, KafkaError) else None


def error_code(exc: BaseException) -> int | None:
    """The ``KafkaError`` code of ``exc`` (``kafka_error``), None for another exception."""
    error = kafka_error(exc)
    return None if error is None else error.code()


def is_transient(exc: BaseException) -> bool:
    """True for a failure a broker outage, a hung broker, or a leader/coordinator move explains."""
    if isinstance(exc, BrokersUnreachable):
        return True
    if isinstance(exc, PartialFailure):
        return bool(exc.errors) and all(is_transient(e) for e in exc.errors.values())
    if isinstance(exc, (TimeoutError, FutureTimeout, ConnectionError)):
        return True
    if isinstance(exc, KafkaException):
        error = exc.args[0] if exc.args else None
        return isinstance(error, KafkaError) and not error.fatal() and (
            error.retriable() or error.code() in _TRANSIENT_CODES)
    return _is_transient_kafka_python(exc)


def _is_transient_kafka_python(exc: BaseException) -> bool:
    """kafka-python's errors, looked up only where kafka-python is loaded (an error of it cannot
    exist elsewhere): every Python worker that loads the data source skips its ~0.1 s import."""
    errors = sys.modules.get("kafka.errors")
    if errors is None or not isinstance(exc, errors.KafkaError):
        return False
    return bool(getattr(exc, "retriable", False)) or isinstance(
        exc, tuple(getattr(errors, name) for name in _PYTHON_TRANSIENT))
