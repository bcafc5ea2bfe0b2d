"""``kafka-eos verify --follow`` beside a running pipeline (issue 59): every committed batch judged
within the stated delay of its commit, none aged out, and a record another writer commits into the
output mid-run caught with its batch and offset.
"""
from __future__ import annotations

import json
import re
import signal
import threading
import time
from pathlib import Path

import yaml
from confluent_kafka import Producer

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from kafka_eos.connectors.operate.verify_follow import DELAY_BOUND_S
from kafka_eos.txn.follow_state import latest_state
from kafka_eos.txn.sink_log import SinkLogReader, location_for
from kafka_eos.txn.states import BatchState
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import EXAMPLES, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail

EXACT = {"duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
FOLLOW_ROUND_S = 0.5


def follow_pipeline(tmp_path: Path, source: str, sink: str, batch: int = 200, timeout_ms: int = 300_000) -> Path:
    """orders-json.yaml on topics of its own: Spark's default trigger (0 s), ``batch`` orders a batch."""
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [source], sink
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["source"]["max_offsets_per_trigger"] = batch
    doc["sink"]["transactional_id_prefix"] = unique("follow")
    doc["sink"]["transaction_timeout_ms"] = timeout_ms
    doc["checkpoint"]["trigger"] = "0 seconds"
    doc["errors"] = {"on_decode_error": "skip"}
    path = tmp_path / "orders-follow.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def committed_batches(checkpoint: Path) -> list[int]:
    reader = SinkLogReader(location_for(str(checkpoint)))
    return [b for b in reader.batch_ids() if (r := reader.get(b)) is not None and r.state is BatchState.COMMITTED]


def wait_line(log: Path, pattern: str, proc, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text() if log.exists() else "")
        if found:
            return found
        assert proc.poll() is None, tail(log)
        time.sleep(0.2)
    raise AssertionError(f"no line matching {pattern!r} in {timeout:.0f} s:\n{tail(log)}")


def stop_process(proc, log: Path, code: int = 143, timeout: float = 120) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout) == code, tail(log)


def test_follow_beside_a_running_pipeline_judges_every_batch_and_names_a_foreign_record(bootstrap, tmp_path):
    source, sink = unique("f-orders"), unique("f-priced")
    create_topics(bootstrap, {source: 2, sink: 2})
    path = follow_pipeline(tmp_path, source, sink)
    runs = {(first := produce_orders(bootstrap, source, 1000, aborted_every=500, aborted_size=10)).run: 1000}
    checkpoint = tmp_path / "orders-json"
    run_log, follow_log = tmp_path / "run.log", tmp_path / "follow.log"
    run = start_kafka_eos(["run", str(path)], bootstrap, tmp_path, run_log)
    follower = start_kafka_eos(["verify", "--follow", str(path), "--interval", str(FOLLOW_ROUND_S)], bootstrap,
                               tmp_path, follow_log)
    arriving = threading.Event()

    def feed() -> None:
        while not arriving.is_set():
            data = produce_orders(bootstrap, source, 200, aborted_every=200, aborted_size=5)
            runs[data.run] = 200
            arriving.wait(1.0)
    feeder = threading.Thread(target=feed, daemon=True)
    try:
        wait_line(follow_log, r"batches \d+-\d+: \d+ verified", follower, 240)
        feeder.start()
        time.sleep(5)
        intruder = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("intruder")})
        intruder.init_transactions(30)
        placed: list = []
        intruder.begin_transaction()
        intruder.produce(sink, json.dumps({"order_id": "intruder-0"}).encode(), b"not-ours", partition=1,
                         on_delivery=lambda err, msg: placed.append(msg.offset()))
        intruder.commit_transaction(30)
        written = time.monotonic()
        caught = wait_line(follow_log, r"batch (\d+): failed: " + re.escape(sink) + r"\[1\] offset (\d+): 1 record\(s\) "
                           r"of another writer", follower, DELAY_BOUND_S)
        delay = time.monotonic() - written
        assert int(caught[2]) == placed[0], caught[0]
        time.sleep(5)
        arriving.set()
        feeder.join(30)
        stop_process(run, run_log)
        batches = committed_batches(checkpoint)
        deadline = time.monotonic() + DELAY_BOUND_S
        while (state := latest_state(location_for(str(checkpoint)))) is None or state.verified_through < batches[-1]:
            assert time.monotonic() < deadline, (state, batches[-1], tail(follow_log))
            time.sleep(0.5)
        stop_process(follower, follow_log)
    finally:
        arriving.set()
        kill_group(run)
        kill_group(follower)
    assert order_report(bootstrap, runs, topic=sink) == EXACT | {"out": sum(runs.values())}
    assert state.aged_out == 0 and len(batches) == batches[-1] + 1, (state, batches)
    assert state.totals == {"verified": len(batches) - 1, "failed": 1}, (state, len(batches))
    assert int(caught[1]) in batches and delay < DELAY_BOUND_S, (caught[0], delay)
    print(f"follow: {len(batches)} batches, the foreign record caught {delay:.1f} s after its commit "
          f"(batch {caught[1]}, offset {caught[2]}); first run {first.run}")
