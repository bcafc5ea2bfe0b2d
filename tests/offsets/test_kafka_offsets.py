"""Source lookups with fake AdminClients (given to KafkaOffsets as its factory): transient
errors are retried within one deadline on a new client, an answer without an offset is no
answer, a non-transient error fails at once and a failure names the partitions and the fix."""
from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos.offsets.kafka_offsets import KafkaLookupError, KafkaOffsets, SourceLoginRefused


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
        self.offsets, self.topics, self.calls, self.offset_calls = list(offsets), list(topics or [None]), 0, 0

    def list_offsets(self, request, **kwargs):
        self.calls += 1
        self.offset_calls += 1
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
    assert admin.offset_calls == 3 and len(built) == 3


def test_no_leaders_found_for_a_partition_that_does_not_exist_fails_at_once():
    # librdkafka answers a deleted (or never created) topic's ListOffsets with the same _NOENT "No
    # leaders found": retried as a fenced broker's, every lookup of it waited out lookupTimeoutMs
    # (120 s) before failing; the metadata (topic "in", partitions 0 and 1) says it is gone.
    admin = FakeAdmin([NO_LEADERS])
    with pytest.raises(KafkaLookupError, match="UNKNOWN_TOPIC_OR_PART") as info:
        offsets_with(admin, timeout_s=30.0).latest([("gone", 0), ("in", 5)])
    assert admin.offset_calls == 1 and "gone" in str(info.value)


def test_no_leaders_found_until_the_deadline_names_the_partitions_and_the_leaders():
    kafka = offsets_with(FakeAdmin([NO_LEADERS]), timeout_s=0.5)
    with pytest.raises(KafkaLookupError, match=r"in-0|in\[0\]|partition") as info:
        kafka.earliest([("in", 0)])
    assert "LEADER_NOT_AVAILABLE" in str(info.value) and "No leaders found" in str(info.value)


SASL = {"bootstrap.servers": "x:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "etl", "sasl.password": "Pw-Never-Shown-3"}
REFUSED = KafkaError(KafkaError._AUTHENTICATION, "x:1/bootstrap: SASL authentication error: Authentication failed "
                     "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")


class LoginAdmin(FakeAdmin):
    """As librdkafka on a refused login: the request fails as a transport failure, and the refusal
    reaches the client's error_cb when it is polled (``refused``: one entry per poll; KafkaOffsets
    polls before each attempt, and after a failed one)."""

    def __init__(self, conf, answers: list, refused: list[bool]) -> None:
        super().__init__(answers, [kafka_exc(KafkaError._TRANSPORT)])
        self.offsets = answers  # one script for every client of the KafkaOffsets
        self.error_cb, self.refused = conf["error_cb"], refused

    def poll(self, timeout):
        if self.refused and self.refused.pop(0):
            self.error_cb(REFUSED)


def login_offsets(answers: list, refused: list[bool], timeout_s: float = 10.0) -> tuple[KafkaOffsets, list]:
    admins: list[LoginAdmin] = []

    def new_admin(conf):
        admins.append(LoginAdmin(conf, answers, refused))
        return admins[-1]
    return KafkaOffsets(SASL, timeout_s, new_admin=new_admin), admins


def test_a_refused_login_is_named_with_the_user_and_mechanism_at_once():
    kafka, admins = login_offsets([kafka_exc(KafkaError._TRANSPORT)], [False, True] * 10)
    with pytest.raises(SourceLoginRefused) as refused:
        kafka.listing()
    text = str(refused.value)
    assert "authentication failed for user 'etl' with SASL mechanism SCRAM-SHA-512" in text and "invalid credentials" in text
    assert "--entity-name etl" in refused.value.fix and "Pw-Never-Shown-3" not in text
    assert isinstance(refused.value, KafkaLookupError) and len(admins) == 1 and admins[0].calls == 1


def test_a_transport_failure_without_a_refused_login_stays_a_lookup_failure():
    kafka, _ = login_offsets([kafka_exc(KafkaError._TRANSPORT)], [], timeout_s=0.5)
    with pytest.raises(KafkaLookupError, match="reachable") as failed:
        kafka.latest([("in", 0)])
    assert not isinstance(failed.value, SourceLoginRefused)


def test_a_refusal_seen_before_the_call_does_not_count():
    kafka, _ = login_offsets([kafka_exc(KafkaError._TRANSPORT)], [True], timeout_s=0.5)  # served by the reset
    with pytest.raises(KafkaLookupError) as failed:
        kafka.latest([("in", 0)])
    assert not isinstance(failed.value, SourceLoginRefused)


def test_once_lookups_answered_a_refused_login_is_retried_then_named_at_the_deadline():
    kafka, admins = login_offsets([7, kafka_exc(KafkaError._TRANSPORT), 8], [False, False, True])
    assert kafka.latest([("in", 0)]) == {("in", 0): 7}
    assert kafka.latest([("in", 0)]) == {("in", 0): 8}, "a broker refusing logins for a while is waited for"
    assert len(admins) == 2
    kafka, _ = login_offsets([7, kafka_exc(KafkaError._TRANSPORT)], [False] + [False, True] * 100, 0.5)
    kafka.latest([("in", 0)])
    with pytest.raises(SourceLoginRefused, match="user 'etl'"):
        kafka.latest([("in", 0)])


def test_the_lookup_client_gets_the_watch_as_its_error_callback():
    """lookup_admin keeps a callback as given (its other settings become librdkafka strings)."""
    kafka = KafkaOffsets({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    assert type(kafka._admin).__name__ == "AdminClient"
