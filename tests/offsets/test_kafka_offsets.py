"""Source lookups with fake AdminClients (given to KafkaOffsets as its factory): transient
errors are retried within one deadline on a new client, an answer without an offset is no
answer, a non-transient error fails at once and a failure names the partitions and the fix."""
from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos.offsets.kafka_offsets import KafkaLookupError, KafkaOffsets


def kafka_exc(code: int, retriable: bool = False) -> KafkaException:
    return KafkaException(KafkaError(code, "fake", retriable=retriable))


def failed(exc: BaseException) -> Future:
    future: Future = Future()
    future.set_exception(exc)
    return future


def done(offset: int) -> Future:
    future: Future = Future()
    future.set_result(type("R", (), {"offset": offset})())
    return future


class FakeAdmin:
    """list_offsets answers one scripted item per call: an exception for every partition,
    a per-partition callable, or an offset; list_topics likewise."""

    def __init__(self, offsets: list, topics: list | None = None) -> None:
        self.offsets, self.topics, self.calls = list(offsets), list(topics or []), 0

    def list_offsets(self, request, **kwargs):
        self.calls += 1
        item = self.offsets.pop(0) if len(self.offsets) > 1 else self.offsets[0]
        if isinstance(item, BaseException) and not isinstance(item, KafkaException):
            raise item
        return {ktp: failed(item) if isinstance(item, BaseException) else done(item) for ktp in request}

    def list_topics(self, timeout=None):
        self.calls += 1
        item = self.topics.pop(0) if len(self.topics) > 1 else self.topics[0]
        if isinstance(item, BaseException):
            raise item
        partitions = {0: None, 1: None}
        return type("M", (), {"topics": {"in": type("T", (), {"partitions": partitions, "error": None})()}})()


def offsets_with(admin: FakeAdmin, timeout_s: float = 10.0) -> KafkaOffsets:
    return KafkaOffsets({"bootstrap.servers": "x:1"}, timeout_s, new_admin=lambda conf: admin)


@pytest.mark.parametrize("failure", [
    kafka_exc(KafkaError._TIMED_OUT),          # what librdkafka answers while a leader is down
    kafka_exc(KafkaError._TRANSPORT),
    kafka_exc(KafkaError.NOT_LEADER_FOR_PARTITION),
    kafka_exc(KafkaError.LEADER_NOT_AVAILABLE, retriable=True),
    TimeoutError("future timed out"),          # future.result(timeout) while a broker is down
])
def test_latest_offsets_retry_transient_failures_within_one_deadline(failure):
    admin = FakeAdmin([failure, failure, 42])
    kafka = offsets_with(admin)
    assert kafka.latest([("in", 0), ("in", 1)]) == {("in", 0): 42, ("in", 1): 42}
    assert admin.calls == 3


def test_a_lookup_that_keeps_failing_names_the_partitions_and_the_fix():
    kafka = offsets_with(FakeAdmin([kafka_exc(KafkaError._TIMED_OUT)]), timeout_s=0.5)
    with pytest.raises(KafkaLookupError, match=r"in-0.*in-1|in\[0\]|partition") as info:
        kafka.latest([("in", 0), ("in", 1)])
    assert "bootstrap" in str(info.value) or "reachable" in str(info.value)


def test_a_non_retriable_lookup_error_fails_at_once():
    admin = FakeAdmin([kafka_exc(KafkaError.TOPIC_AUTHORIZATION_FAILED)])
    with pytest.raises(KafkaLookupError):
        offsets_with(admin).earliest([("in", 0)])
    assert admin.calls == 1


@pytest.mark.parametrize("failure", [kafka_exc(KafkaError._TIMED_OUT), kafka_exc(KafkaError._TRANSPORT),
                                     kafka_exc(KafkaError._ALL_BROKERS_DOWN), TimeoutError("timed out")])
def test_listing_topics_retries_transient_failures(failure):
    admin = FakeAdmin([0], topics=[failure, None])
    assert offsets_with(admin).listing() == {"in": [0, 1]}
    assert admin.calls == 2


@pytest.mark.parametrize("lookup", ["earliest", "latest"])
def test_an_answer_without_an_offset_is_retried_not_taken_as_an_offset(lookup):
    # Seen in the broker-outage chaos run: with the partition's leader just killed, ListOffsets
    # answered OFFSET_INVALID (-1001) without an error. Taken as an offset, the source read
    # "offsets went backwards" and stopped the query with KafkaDataLossError.
    admin = FakeAdmin([-1001, -1001, 42])
    kafka = offsets_with(admin)
    assert getattr(kafka, lookup)([("in", 0), ("in", 1)]) == {("in", 0): 42, ("in", 1): 42}
    assert admin.calls == 3


def test_each_retry_of_an_offset_lookup_asks_with_a_new_client():
    # A client's cached metadata can name a leader that is down: in the broker-outage run, one
    # client answered OFFSET_INVALID for a partition for 30 s after its leader was killed.
    admin = FakeAdmin([-1001, -1001, 42])
    built = []
    kafka = KafkaOffsets({"bootstrap.servers": "x:1"}, 10.0, new_admin=lambda conf: built.append(conf) or admin)
    assert kafka.latest([("in", 0)]) == {("in", 0): 42}
    assert len(built) == 3  # the first client, and one per retry


def test_an_answer_that_stays_without_an_offset_fails_naming_the_partitions():
    kafka = offsets_with(FakeAdmin([-1001]), timeout_s=0.5)
    with pytest.raises(KafkaLookupError, match=r"in.*0.*OFFSET_INVALID|OFFSET_INVALID"):
        kafka.latest([("in", 0)])


def test_a_timestamp_lookup_with_no_record_after_the_time_is_none_not_retried():
    admin = FakeAdmin([-1])  # OFFSET_END: no record at or after the timestamp
    assert offsets_with(admin).for_times({("in", 0): 1_000}) == {("in", 0): None}
    assert admin.calls == 1


NO_LEADERS = KafkaException(KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found"))


def test_no_leaders_found_is_retried_on_a_new_client():
    # The paused-broker container run: a single broker frozen longer than its session timeout is
    # fenced at unpause, leaving every partition leader -1 until it is unfenced. A client whose
    # metadata says so fails ListOffsets at once with _NOENT "No leaders found" (no ListOffsets
    # request is sent); taken as non-transient, it stopped the query.
    admin = FakeAdmin([NO_LEADERS, NO_LEADERS, 42])
    built = []
    kafka = KafkaOffsets({"bootstrap.servers": "x:1"}, 10.0, new_admin=lambda conf: built.append(conf) or admin)
    assert kafka.latest([("in", 0), ("in", 1)]) == {("in", 0): 42, ("in", 1): 42}
    assert admin.calls == 3 and len(built) == 3


def test_no_leaders_found_until_the_deadline_names_the_partitions_and_the_leaders():
    kafka = offsets_with(FakeAdmin([NO_LEADERS]), timeout_s=0.5)
    with pytest.raises(KafkaLookupError, match=r"in-0|in\[0\]|partition") as info:
        kafka.earliest([("in", 0)])
    assert "LEADER_NOT_AVAILABLE" in str(info.value) and "No leaders found" in str(info.value)
