"""The one door for Kafka clients: the timeout table covers every call site, settings only
fill in what the user left unset, one transient classification for both client libraries, and
a driver lookup survives a broker that hangs (issue 24)."""
from __future__ import annotations

import re
from concurrent.futures import Future
from pathlib import Path

import kafka.errors as Errors
import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos.kafka_clients import (TIMEOUTS, PartialFailure, admin_settings, control_plane_settings,
                                     data_settings, is_transient)
from kafka_eos.offsets.kafka_offsets import KafkaLookupError, KafkaOffsets

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kafka_eos", "txn", "offsets", "connectors", "config")
CALL_SITE = re.compile(r'(?:request_s|deadline_s)\("([a-z_.]+)"\)|TIMEOUTS\["([a-z_.]+)"\]|_retrying\(.*, "([a-z]+\.[a-z_]+)"\)')


def sources() -> list[str]:
    return [path.read_text() for package in PACKAGES for path in (ROOT / package).rglob("*.py")
            if path.name != "kafka_clients.py"]


def test_every_call_site_is_in_the_table_and_every_entry_has_a_call_site():
    texts = sources()
    sites = {next(g for g in m.groups() if g) for text in texts for m in CALL_SITE.finditer(text)}
    sites = {s for s in sites if s.split(".")[0] in {"source", "reader", "sink", "control", "checks"}}
    assert sites and sites <= set(TIMEOUTS), f"call sites missing from the table: {sorted(sites - set(TIMEOUTS))}"
    unused = [name for name in TIMEOUTS if not any(f'"{name}"' in text for text in texts)]
    assert not unused, f"table entries no module names: {unused}"


def test_per_request_timeouts_are_well_below_the_driver_deadlines():
    for name, call in TIMEOUTS.items():
        assert call.request_s <= call.deadline_s, name
    for name in ("source.describe_topics", "source.list_topics", "source.list_offsets", "control.end_txn"):
        assert TIMEOUTS[name].deadline_s >= 120 and TIMEOUTS[name].request_s <= TIMEOUTS[name].deadline_s / 10


def test_client_settings_fill_in_only_what_the_user_left_unset():
    assert admin_settings({"bootstrap.servers": "b:1"}) == {
        "bootstrap.servers": "b:1", "socket.keepalive.enable": "true", "socket.timeout.ms": "10000"}
    assert data_settings({"socket.timeout.ms": 45000})["socket.timeout.ms"] == "45000"
    assert control_plane_settings()["request_timeout_ms"] == 10000


@pytest.mark.parametrize("exc", [
    KafkaException(KafkaError(KafkaError._TIMED_OUT)), KafkaException(KafkaError(KafkaError._TRANSPORT)),
    KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)), TimeoutError(), ConnectionResetError(),
    KafkaException(KafkaError(KafkaError._DESTROY_BROKER)),  # a broker left the metadata mid-request
    Errors.KafkaConnectionError(), Errors.NodeNotReadyError(), Errors.KafkaTimeoutError(),
    Errors.CoordinatorNotAvailableError(), PartialFailure({1: TimeoutError()}),
])
def test_transient(exc):
    assert is_transient(exc)


@pytest.mark.parametrize("exc", [
    KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)),
    KafkaException(KafkaError(KafkaError._TIMED_OUT, fatal=True)), ValueError("bad"),
    Errors.TransactionalIdAuthorizationFailedError(), PartialFailure({}),
    PartialFailure({1: TimeoutError(), 2: KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))}),
])
def test_not_transient(exc):
    assert not is_transient(exc)


class HungOrLive:
    """An AdminClient whose connection went to a hung broker (every DescribeTopics times out)
    or to a live one (answers); a client keeps the broker it first connected to."""

    def __init__(self, hung: bool) -> None:
        self.hung = hung

    def describe_topics(self, topics, **kwargs):
        future: Future = Future()
        if self.hung:
            future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for "
                                                           "response from broker: Local: Timed out")))
        else:
            partitions = [type("P", (), {"id": i})() for i in (0, 1)]
            future.set_result(type("T", (), {"partitions": partitions, "authorized_operations": None})())
        return {name: future for name in topics.topic_names}


def test_describe_topics_retries_on_a_new_client_when_a_broker_hangs():
    # The report of issue 24: the first bootstrap broker SIGSTOPped, the client kept its 'up'
    # connection to it and DescribeTopics timed out until the deadline stopped the query.
    clients = iter([HungOrLive(True), HungOrLive(False)])
    from kafka_eos.offsets.subscription import Subscription
    kafka = KafkaOffsets({"bootstrap.servers": "x:1"}, timeout_s=2.0, new_admin=lambda conf: next(clients))
    assert kafka.listing(Subscription.parse("subscribe", "in")) == {"in": [0, 1]}


def test_a_lookup_that_keeps_timing_out_names_the_deadline():
    from kafka_eos.offsets.subscription import Subscription
    with pytest.raises(KafkaLookupError, match=r"within 1s.*_TIMED_OUT"):
        KafkaOffsets({"bootstrap.servers": "x:1"}, timeout_s=1.0,
                     new_admin=lambda conf: HungOrLive(True)).listing(Subscription.parse("subscribe", "in"))


# ---- the documented timeout table (config/README.md, "Kafka call timeouts") ----------------

DOC = ROOT / "config" / "README.md"
DOC_ROWS = {  # the first cell of each row -> the calls of TIMEOUTS it documents
    "control-plane bootstrap": ("control.bootstrap",),
    "DescribeTopics, Metadata: topic listing": ("source.describe_topics", "source.list_topics"),
    "ListOffsets": ("source.list_offsets",),
    "head records": ("source.head_records",),
    "consumer-group offsets": ("source.commit_group",),
    "fetch": ("reader.fetch",),
    "watermarks": ("reader.watermarks",),
    "producer:": ("sink.producer_requests",),
    "DescribeTopics of the output topics": ("sink.describe_output_topics",),
    "prefix claim read": ("sink.prefix_claim",),
    "FindCoordinator + EndTxn rounds": ("control.end_txn", "control.describe_transactions"),
    "ListTransactions": ("control.list_transactions",),
    "DescribeConfigs, ACL checks": ("checks.broker_config",),
}


def doc_table() -> list[list[str]]:
    section = DOC.read_text().split("### Kafka call timeouts", 1)[1].split("\n### ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|")]
    return rows[2:]  # after the header and the |---| line


def seconds(cell: str) -> float | None:
    found = re.match(r"(\d+(?:\.\d+)?) s\b", cell)
    return float(found.group(1)) if found else None


def test_the_documented_timeout_table_matches_timeouts():
    rows = doc_table()
    assert len(rows) == len(DOC_ROWS)
    documented = []
    for call_cell, per_request, deadline, setting, _retry, one_silent in rows:
        calls = next(calls for start, calls in DOC_ROWS.items() if call_cell.startswith(start))
        for name in calls:
            call = TIMEOUTS[name]
            documented.append(name)
            assert seconds(per_request) == call.request_s, (name, per_request)
            default = re.search(r"\(`(\d+)`\)", setting)
            assert (seconds(deadline) or int(default.group(1)) / 1000) == call.deadline_s, (name, deadline)
            assert call.setting in setting.replace("—", "-"), (name, setting)
            assert call.one_silent and one_silent, f"{name}: what one silent broker does is not said"
    assert sorted(documented) == sorted(TIMEOUTS), "every call of TIMEOUTS has one row"


def test_the_documented_socket_timeouts_match_the_client_settings():
    text = DOC.read_text().split("### Kafka call timeouts", 1)[1].split("\n### ", 1)[0]
    assert f"`socket.timeout.ms={admin_settings({})['socket.timeout.ms']}`" in text
    assert f"`{data_settings({})['socket.timeout.ms']}`" in text
    assert "`socket.keepalive.enable=true`" in text and admin_settings({})["socket.keepalive.enable"] == "true"
