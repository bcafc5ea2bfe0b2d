"""The sink's query start without a cluster: which steps run for which writer, once per query, and
what the tasks get (the collaborators that would call the cluster are fakes)."""
from __future__ import annotations

import pickle

import pytest
from pyspark import cloudpickle  # what Spark pickles the writer with
from pyspark.sql.types import StringType, StructField, StructType

from kafka_eos.connectors.sink.query_start import (QueryStart, WriterRole, keep_at_start, release_sink,
                                                   writer_role)
from kafka_eos.connectors.sink.sink_queries import SinkQueries
from kafka_eos.txn.log import sink_markers
from kafka_eos.txn.protocol.errors import OutputTopicChangedError
from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.protocol.replay import ReplayPlan
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog
from kafka_eos.txn.log import stores
from kafka_eos.txn.log.kafka_store import StoreRole

SCHEMA = StructType([StructField("value", StringType())])
PLANNER = "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/daemon.py"


class Committer:
    def commit(self, handles):
        return {h.sink_partition: COMMITTED for h in handles}

    def abort(self, handles):
        return {}


class Aborter:
    def __init__(self):
        self.kept: list[set[str]] = []

    def abort_lingering(self, keep=frozenset()):
        self.kept.append(set(keep))
        return []


class Guard:
    def __init__(self, refuse: bool = False):
        self.checks, self.refuse = 0, refuse

    def before_writes(self):
        self.checks += 1
        if self.refuse:
            raise OutputTopicChangedError("topic out was re-created")


def built(config: SinkConfig, query_id, faults) -> TwoPhaseCommitProtocol:
    return TwoPhaseCommitProtocol(SinkLog(config.log_location, config.transactional_id_prefix, query_id),
                                  Committer(), Aborter())


def options(tmp_path, name: str = "ck") -> dict:
    return {"kafka.bootstrap.servers": "unused:1", "transactional.id.prefix": "p", "topic": "out",
            "checkpointLocation": str(tmp_path / name)}


def start(role: WriterRole, queries: SinkQueries, guard: Guard) -> QueryStart:
    return QueryStart(role=role, queries=queries, cluster_checks=lambda c: None, binding_check=lambda c, q: None,
                      claim=lambda c, o, q: c, topic_guard=lambda c: guard)


@pytest.mark.parametrize("argv,role", [
    ([PLANNER, "pyspark.sql.worker.write_into_data_source"], WriterRole.TASKS),  # a worker forked by the daemon
    (["/x/pyspark/sql/worker/write_into_data_source.py"], WriterRole.TASKS),    # python -m <module>
    ([PLANNER, "pyspark.sql.worker.python_streaming_sink_runner"], WriterRole.COMMIT),
    (["/x/pyspark/sql/worker/python_streaming_sink_runner.py"], WriterRole.COMMIT),
    (["pytest"], WriterRole.COMMIT),
])
def test_the_role_is_the_pyspark_worker_that_builds_the_writer(argv, role):
    assert writer_role(argv) is role


def test_task_writers_abort_lingering_transactions_once_per_query_and_check_topics_every_batch(tmp_path):
    queries, guard = SinkQueries(build=built), Guard()
    tasks = start(WriterRole.TASKS, queries, guard)
    first = tasks.writer(options(tmp_path), SCHEMA)
    again = tasks.writer(options(tmp_path), SCHEMA)
    other = tasks.writer(options(tmp_path, "ck2"), SCHEMA)
    assert first._protocol is again._protocol and first._protocol.aborter.kept == [set()]
    assert other._protocol.aborter.kept == [set()]
    assert guard.checks == 3  # one output-topic check per batch's writer
    shipped = pickle.loads(cloudpickle.dumps(first))
    assert not hasattr(shipped, "_protocol") and shipped.plan == ReplayPlan() and shipped.config == first.config
    assert first._protocol.aborter.kept == [set()] and guard.checks == 3  # pickling calls nothing
    assert stores.process_role() is StoreRole.PLANNER  # a Kafka record store's writer: not the commit's
    stores.use_role(StoreRole.OPERATOR)


def test_a_commit_writer_recovers_but_neither_aborts_lingering_transactions_nor_checks_topics(tmp_path):
    cfg = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                     log_location=str(tmp_path / "ck" / "kafka-eos-sink"))
    pending = TxnHandle(sink_partition=0, transactional_id="p-0-1", producer_id=7, producer_epoch=0, records=3)
    SinkLog(cfg.log_location, "p").append(BatchRecord(1, DECIDED, 1, (pending,), {0: "pending"}), None)
    queries, guard = SinkQueries(build=built), Guard(refuse=True)
    writer = start(WriterRole.COMMIT, queries, guard).writer(options(tmp_path), SCHEMA)
    assert writer.plan == ReplayPlan(1, frozenset({0}))  # the decided batch was committed by recovery
    assert writer._protocol.aborter.kept == [] and guard.checks == 0
    assert stores.process_role() is StoreRole.DRIVER
    stores.use_role(StoreRole.OPERATOR)


def test_a_refused_topic_change_stops_the_task_writer_before_any_task(tmp_path):
    with pytest.raises(OutputTopicChangedError, match="re-created"):
        start(WriterRole.TASKS, SinkQueries(build=built), Guard(refuse=True)).writer(options(tmp_path), SCHEMA)


def test_the_start_keeps_a_pending_decisions_transactions():
    pending = TxnHandle(sink_partition=0, transactional_id="p-0-1", producer_id=7, producer_epoch=0, records=3)
    done = TxnHandle(sink_partition=1, transactional_id="p-1-1", producer_id=8, producer_epoch=0, records=3)
    decided = BatchRecord(1, DECIDED, 2, (pending, done), {0: "pending", 1: "committed"})
    assert keep_at_start(decided) == {"p-0-1"}
    assert keep_at_start(BatchRecord(1, COMMITTED, 2, (pending, done), {0: "committed", 1: "committed"})) == set()
    assert keep_at_start(None) == set()


def test_the_driver_keeps_one_protocol_per_query_and_sink_log(tmp_path):
    queries = SinkQueries()
    cfg = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                     log_location=str(tmp_path / "log"))
    one = queries.protocol(cfg, FaultPlan(), "query-1")
    assert queries.protocol(cfg, FaultPlan(), "query-1") is one
    assert queries.protocol(cfg, FaultPlan(), None) is not one
    other = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                       log_location=str(tmp_path / "log"), commit_timeout_s=5.0)
    assert queries.protocol(other, FaultPlan(), "query-1") is not one


def test_the_prefix_is_claimed_once_per_query(tmp_path):
    queries, claims = SinkQueries(build=built), []

    def claim(config, opts, query_id):
        claims.append(query_id)
        return SinkConfig(**{**{f: getattr(config, f) for f in ("producer_conf", "transactional_id_prefix",
                                                                 "log_location", "topic")}, "id_owner": "0000abcd"})
    tasks = QueryStart(role=WriterRole.TASKS, queries=queries, cluster_checks=lambda c: None,
                       binding_check=lambda c, q: None, claim=claim, topic_guard=lambda c: Guard())
    first, again = tasks.writer(options(tmp_path), SCHEMA), tasks.writer(options(tmp_path), SCHEMA)
    assert claims == [None] and first.config.id_owner == again.config.id_owner == "0000abcd"


def test_release_sweeps_the_ids_its_sink_log_recorded(tmp_path):
    """The query's end runs in the process that ran the query, which never claimed: the owner of the
    ids comes from the sink log's id scheme, else release would sweep legacy ids only."""
    seen: list[SinkConfig] = []

    def build(config, query_id, faults):
        seen.append(config)
        return built(config, query_id, faults)
    opts = options(tmp_path)
    location = str(tmp_path / "ck" / "kafka-eos-sink")
    scheme = sink_markers.id_scheme(location, "0a1b2c3d")
    release_sink(opts, SinkQueries(build=build))
    assert [c.id_owner for c in seen] == [scheme.id_owner] and scheme.id_owner == "0a1b2c3d"
    assert stores.process_role() is StoreRole.RUNNER  # the run's process writes as itself
    stores.use_role(StoreRole.OPERATOR)


def test_a_refused_client_setting_stops_the_start_before_any_cluster_call(tmp_path):
    from kafka_eos.txn.cluster.client_settings import ClientSettingsError
    called = []
    jks = tmp_path / "client.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 32)
    start_ = QueryStart(role=WriterRole.TASKS, queries=SinkQueries(build=built),
                        cluster_checks=lambda c: called.append("cluster"), binding_check=lambda c, q: called.append(1),
                        claim=lambda c, o, q: c, topic_guard=lambda c: Guard())
    refused = {**options(tmp_path), "kafka.security.protocol": "SSL", "kafka.ssl.keystore.location": str(jks)}
    with pytest.raises(ClientSettingsError, match="keytool -importkeystore"):
        start_.writer(refused, SCHEMA)
    assert called == [], "refused at step 1: no broker asked, no transaction opened"


def test_a_commit_writer_asks_no_start_up_check_and_claims_nothing_on_the_cluster(tmp_path):
    """Issue 44: the commit runner is a fresh process; its first writer ran the start-up checks
    (ApiVersions of every broker) and one hung broker stopped the query at its first commit, with
    the batch's transactions pre-committed. A commit writer needs only what the commit needs."""
    called = []
    commit = QueryStart(role=WriterRole.COMMIT, queries=SinkQueries(build=built),
                        cluster_checks=lambda c: called.append("checks"), binding_check=lambda c, q: None,
                        claim=lambda c, o, q: called.append("claim") or c, topic_guard=lambda c: Guard())
    writer = commit.writer(options(tmp_path), SCHEMA)
    assert called == [] and writer.config.id_owner is not None, "the id scheme comes from the sink log, locally"
    tasks = QueryStart(role=WriterRole.TASKS, queries=SinkQueries(build=built),
                       cluster_checks=lambda c: called.append("checks"), binding_check=lambda c, q: None,
                       claim=lambda c, o, q: called.append("claim") or c, topic_guard=lambda c: Guard())
    tasks.writer(options(tmp_path), SCHEMA)
    assert sorted(called) == ["checks", "claim"]  # the checks run beside the claim


def test_the_cluster_checks_run_beside_the_claim_and_their_failure_stops_the_start_before_recovery(tmp_path):
    """Issue 45: the checks (ApiVersions, DescribeConfigs, ACLs: 1.2 s) no longer wait for the
    binding and the claim; a failed check is the error raised (not the claim's), and nothing is
    recovered or aborted."""
    import threading
    release, seen = threading.Event(), []

    def slow_check(config):
        assert release.wait(5), "the claim did not run while the checks ran"
        raise PermissionError("principal may not Write topic out")

    def claim(c, o, q):
        seen.append("claim")
        release.set()
        raise RuntimeError("claim refused: not authorized")

    start_ = QueryStart(role=WriterRole.TASKS, queries=SinkQueries(build=built), cluster_checks=slow_check,
                        binding_check=lambda c, q: None, claim=claim, topic_guard=lambda c: Guard())
    with pytest.raises(PermissionError, match="may not Write"):
        start_.writer(options(tmp_path), SCHEMA)
    assert seen == ["claim"]


def test_the_query_id_the_run_hands_over_is_taken_without_reading_the_checkpoint():
    """A checkpoint the sink's worker cannot read (hdfs://: pyarrow has no libhdfs here): the run
    read Spark's metadata in the driver and gives it as option queryId."""
    from kafka_eos.connectors.sink.query_start import checkpoint_query_id
    given = {"checkpointLocation": "hdfs://nn:8020/nowhere", "queryId": "5f1c-query"}
    assert checkpoint_query_id(given) == "5f1c-query"
    assert checkpoint_query_id({"checkpointlocation": "hdfs://nn:8020/x", "QUERYID": "q"}) == "q", "any case"
