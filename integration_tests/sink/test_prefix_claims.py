"""One prefix, one pipeline: a second checkpoint claiming an owned prefix is refused at start and
the first runs on exactly once; `retire` leaves nothing open and nothing decided lost; a
checkpoint whose sink log was written with the legacy ids (no owner) resumes exactly once."""
from __future__ import annotations

import json

import pytest

from confluent_kafka import Producer
from integration_tests.kafka_tools import (assert_exactly_once, check_exactly_once, committed_end_offsets,
                                           high_watermarks, output_ids, unique)
from integration_tests.pipeline_runs import kill_group, seed_input, start_job, tail, wait_for
from integration_tests.sink.test_sink_e2e import run_query
from kafka_eos.connectors.operate.retire import retire_sink
from kafka_eos.txn.topics.claim_topic import ClaimTopic
from kafka_eos.txn.log.sink_log import SinkLogReader
from kafka_eos.txn.log.sink_markers import read_id_scheme

IDS = 2000


def nothing_open(bootstrap: str, topic: str) -> bool:
    """Every partition's last stable offset equals its high watermark."""
    return committed_end_offsets(bootstrap, topic) == high_watermarks(bootstrap, topic)


def job(bootstrap, names, checkpoint, prefix) -> list[str]:
    return ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(checkpoint), "--prefix", prefix, "--max-offsets", "700"]


def pipeline(bootstrap) -> dict[str, str]:
    names = {"input": unique("in"), "output": unique("out")}
    seed_input(bootstrap, names["input"], IDS)
    return names


def test_a_claim_topic_just_created_is_read_at_once(bootstrap):
    """The first pipeline on a cluster creates the claim topic and reads it straight away, before
    its partition has a leader everywhere: that read waits for the leader (it failed the query's
    start with NOT_LEADER_FOR_PARTITION)."""
    for _ in range(5):
        claims = ClaimTopic({"bootstrap.servers": bootstrap}, unique("_claims"), 30.0)
        claims.ensure()
        assert claims.read("p") == ([], 0)


def test_a_second_pipeline_with_the_prefix_is_refused_and_the_first_runs_on(spark, bootstrap, tmp_path):
    """A pauses with batch 1 pre-committed (its transactions open); B (own input, output and
    checkpoint, A's prefix) starts: before, B's start aborted A's open transactions and A stopped
    with TransactionLostError; now B is refused naming both checkpoints and A ends exactly once."""
    prefix, first = unique("shared"), pipeline(bootstrap)
    faults, log = tmp_path / "faults", tmp_path / "a.log"
    faults.mkdir()
    proc = start_job(job(bootstrap, first, tmp_path / "ck-a", prefix) + ["--fault", "before_decision@1",
                                                                        "--fault-dir", str(faults)], log)
    try:
        wait_for((faults, "before_decision.*"), proc, 300, log)
        second = {"input": unique("in-b"), "output": unique("out-b")}
        seed_input(bootstrap, second["input"], 50)
        query = run_query(spark, bootstrap, second["input"], second["output"], tmp_path / "ck-b", prefix)
        (faults / "release").write_text("go")
        assert proc.wait(300) == 0, tail(log)
    finally:
        kill_group(proc)
    refused = str(query.exception())
    assert "PrefixClaimedError" in refused or "belongs to the pipeline" in refused, refused
    assert str(tmp_path / "ck-a") in refused and str(tmp_path / "ck-b") in refused and "retire" in refused
    assert sum(output_ids(bootstrap, second["output"], "read_uncommitted").values()) == 0  # B wrote nothing
    assert_exactly_once(check_exactly_once(bootstrap, first["output"], IDS))
    assert_owner_ids(tmp_path / "ck-a" / "kafka-eos-sink", prefix)


def assert_owner_ids(sink_log, prefix: str) -> None:
    """A checkpoint started by this build writes with its owner's ids (`<prefix>-<owner>-<p>-<slot>`),
    not the legacy ones: a new sink log's binding check must not start the log before the scheme is
    chosen (it did, and every new checkpoint fell back to the legacy ids)."""
    scheme = read_id_scheme(str(sink_log))
    assert scheme.scheme == "owner" and scheme.owner, scheme
    reader = SinkLogReader(str(sink_log))
    ids = {h.transactional_id for b in reader.batch_ids() for h in reader.get(b).handles if h.has_transaction}
    assert ids and all(i.startswith(f"{prefix}-{scheme.owner}-") for i in ids), sorted(ids)[:3]


@pytest.mark.parametrize("scheme", ["owner", pytest.param("legacy", marks=pytest.mark.chaos)])
def test_retire_commits_the_decided_batch_and_leaves_nothing_open(spark, bootstrap, tmp_path, scheme):
    """Stopped after batch 1's decision (its transactions open, decided) plus a straggler's open
    transaction on one of the checkpoint's ids; retire commits batch 1, aborts the straggler, releases
    the prefix and marks the checkpoint: every input id of the decided batches is in the output
    once, every output partition's last stable offset equals its high watermark, a rerun is refused.
    Also for a checkpoint an older build started (legacy ids, no owner): users retire those too."""
    prefix, names = unique("retire"), pipeline(bootstrap)
    checkpoint, faults, log = tmp_path / "ck", tmp_path / "faults", tmp_path / "job.log"
    faults.mkdir()
    if scheme == "legacy":
        (checkpoint / "kafka-eos-sink").mkdir(parents=True)
        (checkpoint / "kafka-eos-sink" / "_ids.json").write_text(json.dumps({"v": 1, "scheme": "legacy", "owner": None}))
    proc = start_job(job(bootstrap, names, checkpoint, prefix) + ["--fault", "after_decision@1",
                                                                 "--fault-dir", str(faults)], log)
    wait_for((faults, "after_decision.*"), proc, 300, log)
    kill_group(proc)
    if scheme == "owner":
        assert_owner_ids(checkpoint / "kafka-eos-sink", prefix)
        straggler_id = f"{prefix}-{read_id_scheme(str(checkpoint / 'kafka-eos-sink')).owner}-0-7"
    else:
        (checkpoint / "kafka-eos-sink" / "_ids.json").unlink()  # as an older build left it
        straggler_id = f"{prefix}-0-7"
    straggler = Producer({"bootstrap.servers": bootstrap, "transactional.id": straggler_id,
                          "transaction.timeout.ms": 300_000})
    straggler.init_transactions(30)
    straggler.begin_transaction()
    straggler.produce(names["output"], key=b"x", value=b"straggler")
    straggler.flush(30)
    assert not nothing_open(bootstrap, names["output"])

    options = {"kafka.bootstrap.servers": bootstrap, "topic": names["output"], "transactional.id.prefix": prefix,
               "checkpointLocation": str(checkpoint), "kafka.transaction.timeout.ms": "300000"}
    done = retire_sink(options)
    text = "\n".join(done.lines)
    assert done.exit_code == 0, text
    assert "committed batch 1" in text and straggler_id in text and f"released prefix {prefix}" in text
    assert nothing_open(bootstrap, names["output"])
    log_reader = SinkLogReader(str(checkpoint / "kafka-eos-sink"))
    decided = sum(h.records for b in log_reader.batch_ids() for h in log_reader.get(b).handles)
    assert log_reader.batch_ids() == [0, 1] and decided > 700  # batch 0 committed, batch 1 decided
    seen = output_ids(bootstrap, names["output"])
    assert sum(seen.values()) == len(seen) == decided, seen.most_common(3)  # each decided id once
    assert retire_sink(options).exit_code == 0  # again: nothing left to do

    rerun = run_query(spark, bootstrap, names["input"], names["output"], checkpoint, prefix)
    assert "retired" in str(rerun.exception()), rerun.exception()


@pytest.mark.chaos  # `make chaos`: checkpoints of the legacy id scheme; make test keeps the owner scheme
def test_a_checkpoint_with_legacy_ids_resumes_exactly_once(spark, bootstrap, tmp_path):
    """The first run writes with the legacy ids (`<prefix>-<p>-<slot>`, as builds before owners did)
    and is killed with batch 1 pre-committed but undecided; its sink log then looks like an older
    build's (no `_ids.json`). The restart must keep the legacy ids - new ids would leave the old
    open transactions holding back read_committed readers - and end exactly once."""
    prefix, names = unique("legacy"), pipeline(bootstrap)
    checkpoint, faults, log = tmp_path / "ck", tmp_path / "faults", tmp_path / "job.log"
    faults.mkdir()
    sink_log = checkpoint / "kafka-eos-sink"
    sink_log.mkdir(parents=True)
    (sink_log / "_ids.json").write_text(json.dumps({"v": 1, "scheme": "legacy", "owner": None}))
    proc = start_job(job(bootstrap, names, checkpoint, prefix) + ["--fault", "before_decision@1",
                                                                 "--fault-dir", str(faults)], log)
    wait_for((faults, "before_decision.*"), proc, 300, log)
    kill_group(proc)
    handles = SinkLogReader(str(sink_log)).get(0).handles
    assert all(h.transactional_id.startswith(f"{prefix}-") and h.transactional_id.count("-") ==
               prefix.count("-") + 2 for h in handles if h.has_transaction)  # legacy ids were decided
    (sink_log / "_ids.json").unlink()
    assert not nothing_open(bootstrap, names["output"])  # batch 1's undecided transactions

    restarted = run_query(spark, bootstrap, names["input"], names["output"], checkpoint, prefix)
    assert restarted.exception() is None, restarted.exception()
    assert nothing_open(bootstrap, names["output"])
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    assert read_id_scheme(str(sink_log)).scheme == "legacy"
