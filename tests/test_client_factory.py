"""Kafka clients through one door: every client constructor call of the package is in
``kafka_eos/client_factory.py`` (except the listed ones still to convert), the log policy gives
each kind of caller its level, and collaborators take factories (fakes here, no patching)."""
from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos import client_factory
from kafka_eos.client_factory import Noise, with_noise
from kafka_eos.offsets.record_times import RecordTimes
from kafka_eos.txn.cluster import acl_checks, broker_configs
from kafka_eos.client_factory import QuietClients
from kafka_eos.txn.topics.claim_topic import ClaimTopic
from kafka_eos.txn.protocol.errors import PrefixClaimAccessError

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kafka_eos", "txn", "offsets", "serde", "config", "connectors")
CONSTRUCTORS = {"AdminClient", "Producer", "Consumer", "KafkaAdminClient", "KafkaProducer", "KafkaConsumer",
                "KafkaClient", "ControlPlaneClient"}
# Built elsewhere for now, in modules other work owns; each is to call client_factory instead.
NOT_YET: set[tuple[str, str]] = set()


def constructor_calls() -> set[tuple[str, str]]:
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(), where)):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                    if name in CONSTRUCTORS:
                        found.add((where, name))
    return found


def test_every_kafka_client_is_built_by_the_client_factory():
    outside = {call for call in constructor_calls() if call[0] != "kafka_eos/client_factory.py"}
    assert outside - NOT_YET == set(), "build these clients with kafka_eos.client_factory"
    assert NOT_YET <= outside, f"converted: remove from NOT_YET {sorted(NOT_YET - outside)}"


def test_the_factory_builds_each_kind_of_client():
    assert {name for where, name in constructor_calls() if where == "kafka_eos/client_factory.py"} == {
        "AdminClient", "Producer", "Consumer", "ControlPlaneClient"}


@pytest.mark.parametrize("noise, expected", [
    (Noise.LIBRDKAFKA, {"bootstrap.servers": "b:1", "log_level": 7}),  # the user's log_level stays
    (Noise.ERRORS, {"bootstrap.servers": "b:1", "log_level": 3}),
    (Noise.SILENT, {"bootstrap.servers": "b:1", "log_level": 0}),
])
def test_the_log_policy_sets_librdkafkas_level(noise, expected):
    assert with_noise({"bootstrap.servers": "b:1", "log_level": 7}, noise) == expected


def test_debug_noise_sends_librdkafkas_lines_to_the_python_log_at_debug(caplog):
    logger = with_noise({"bootstrap.servers": "b:1"}, Noise.DEBUG)["logger"]
    with caplog.at_level(logging.DEBUG, logger="kafka_eos.client_factory"):
        logger.log(3, "FATAL %s", "probe refused")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.DEBUG, "FATAL probe refused")]


def test_real_clients_get_the_settings_and_refuse_a_bad_one():
    for build in (client_factory.admin, client_factory.producer):
        with pytest.raises(KafkaException, match="no.such.setting"):
            build({"bootstrap.servers": "127.0.0.1:1", "no.such.setting": "1"}, Noise.SILENT)
    consumer = client_factory.consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, Noise.SILENT)
    consumer.close()


def test_a_truststore_reaches_every_librdkafka_client_as_ssl_ca_pem(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12
    from kafka_eos.connectors.dev.tls import generate
    from kafka_eos.truststores import StoreProblem
    ca_file = generate(tmp_path / "tls", "ks").ca_file
    store = tmp_path / "truststore.p12"
    store.write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(x509.load_pem_x509_certificate(ca_file.read_bytes()), b"ca")],
        BestAvailableEncryption(b"trust-Pw")))
    conf = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL", "ssl.truststore.location": str(store),
            "ssl.truststore.password": "trust-Pw", "ssl.truststore.type": "PKCS12"}
    assert with_noise(conf, Noise.SILENT) == {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL",
                                              "ssl.ca.pem": ca_file.read_text(), "log_level": 0}
    client_factory.admin(conf, Noise.SILENT)  # librdkafka loads the PEM CA when the client is made
    client_factory.producer(conf, Noise.SILENT).flush(0)
    client_factory.consumer({**conf, "group.id": "g"}, Noise.SILENT).close()
    with pytest.raises(StoreProblem, match="does not open with ssl.truststore.password"):
        client_factory.admin({**conf, "ssl.truststore.password": "wrong"}, Noise.SILENT)


def test_each_caller_keeps_its_log_level():
    assert acl_checks.CHECK_ADMIN.keywords == {"noise": Noise.ERRORS}
    assert acl_checks.PROBE_PRODUCER.keywords == {"noise": Noise.DEBUG}
    assert {f.keywords["noise"] for f in vars(QuietClients()).values()} == {Noise.ERRORS}


class Recorder:
    """A factory that records the settings it is given and returns ``client``."""

    def __init__(self, client: object) -> None:
        self.client, self.settings = client, []

    def __call__(self, conf):
        self.settings.append(dict(conf))
        return self.client


def test_claim_topic_gives_its_clients_only_connection_and_security_settings():
    class NoTopic:
        def list_topics(self, topic, timeout):
            raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied"))
    admin = Recorder(NoTopic())
    conf = {"bootstrap.servers": "b:1", "sasl.username": "u", "linger.ms": "5", "transactional.id": "x"}
    with pytest.raises(PrefixClaimAccessError, match="_claims"):
        ClaimTopic(conf, "_claims", clients=QuietClients(admin=admin)).exists()
    assert admin.settings == [{"bootstrap.servers": "b:1", "sasl.username": "u"}]


def test_record_times_reads_with_a_read_committed_consumer_from_its_factory():
    class Empty:
        def assign(self, partitions):
            self.assigned = partitions

        def consume(self, num_messages, timeout):
            return []

        def unassign(self):
            pass
    consumer = Recorder(Empty())
    times = RecordTimes({"bootstrap.servers": "b:1"}, timeout_s=0.2, new_consumer=consumer)
    with pytest.raises(Exception, match="in-0|in\\[0\\]|head record"):
        times.heads({("in", 0): 5})
    (settings,) = consumer.settings
    assert settings["isolation.level"] == "read_committed" and settings["enable.auto.commit"] == "false"


def test_broker_config_asks_the_admin_its_factory_gives():
    class NoBrokers:
        def list_topics(self, timeout):
            return type("M", (), {"brokers": {}})()
    with pytest.raises(broker_configs.ClusterUnreachable, match="no live brokers"):
        broker_configs.broker_config({"bootstrap.servers": "b:1"}, "x", 0.1, new_admin=Recorder(NoBrokers()))


def test_broker_config_passes_over_a_broker_that_does_not_answer():
    """Issue 44: DescribeConfigs went to the lowest broker id only; hung, it failed the start."""
    from confluent_kafka import KafkaError, KafkaException

    class Answer:
        def __init__(self, value):
            self.value = value

        def result(self, timeout):
            if isinstance(self.value, BaseException):
                raise self.value
            return {"x": type("E", (), {"value": self.value})()}

    class OneHung:
        asked: list = []

        def list_topics(self, timeout):
            return type("M", (), {"brokers": {1: 0, 2: 0, 3: 0}})()

        def describe_configs(self, resources, request_timeout):
            broker = int(resources[0].name)
            self.asked.append(broker)
            hung = KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out"))
            return {resources[0]: Answer(hung if broker == 1 else "900000")}
    admin = OneHung()
    assert broker_configs.broker_config({"bootstrap.servers": "b:1"}, "x", 5.0, new_admin=lambda conf: admin) == "900000"
    assert admin.asked == [1, 2]
