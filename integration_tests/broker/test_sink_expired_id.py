"""Issue 10, point 6: a decided batch whose transactional ids expired while the driver was down.
The broker aborts the decided transactions (transaction.max.timeout.ms) and then expires the ids
(transactional.id.expiration.ms), so EndTxn answers INVALID_PRODUCER_ID_MAPPING /
TRANSACTIONAL_ID_NOT_FOUND: the restart must treat them as LOST and re-write, exactly once."""
from __future__ import annotations

import pytest

import time

from kafka_eos.connectors.dev.local_kafka import ClusterSettings
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import (kill_group, run_to_completion,
                                             seed_input, start_job, wait_for)
from integration_tests.providers import local_broker
from kafka_eos.txn.log.sink_log import SinkLogReader

IDS = 3000
EXPIRY = ClusterSettings(transaction_max_timeout_ms=15_000, extra=(
    ("transactional.id.expiration.ms", "10000"),
    ("transaction.remove.expired.transaction.cleanup.interval.ms", "2000"),
    ("producer.id.expiration.ms", "10000"),
    ("producer.id.expiration.check.interval.ms", "2000"),
))


@pytest.mark.chaos  # a long fault run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_decided_batch_with_expired_transactional_ids_is_rewritten(tmp_path):
    with local_broker(EXPIRY) as broker:
        names = {"input": unique("in"), "output": unique("out"), "prefix": unique("expired")}
        seed_input(broker.bootstrap, names["input"], IDS)
        (tmp_path / "faults").mkdir()
        args = ["--bootstrap", broker.bootstrap, "--input", names["input"], "--output", names["output"],
                "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"],
                "--max-offsets", "1000", "--transaction-timeout-ms", "12000"]
        log = tmp_path / "job.log"
        proc = start_job(args + ["--fault", "after_decision@1", "--fault-dir", str(tmp_path / "faults")], log)
        wait_for((tmp_path / "faults", "after_decision.*"), proc, 300, log)
        kill_group(proc)
        time.sleep(40)  # > timeout 12 s + expiration 10 s + cleanup intervals: aborted, then expired
        run_to_completion(args, log)
        reader = SinkLogReader(str(tmp_path / "checkpoint" / "kafka-eos-sink"))
        assert reader.get(1).state == "committed"
        assert_exactly_once(check_exactly_once(broker.bootstrap, names["output"], IDS))
