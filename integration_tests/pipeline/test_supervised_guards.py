"""Issue 58 (3, 4): exit codes a supervisor acts on, and guards that hold under supervision.
Real broker, real Spark, `kafka-eos` run as users run it (a subprocess of this venv's Python).

- A replay mismatch (a decided batch whose lost partitions the replay cannot re-write: the driver
  killed between its EndTxns, the broker aborting the rest at transaction.timeout.ms, the
  transform changed before the restart) exits 5 (needs an operator), and `--restarts 3` does not
  start it again.
- A re-created output topic is refused at the first start and at each of ten automatic restarts
  after it (what systemd's `Restart=always`, compose's `on-failure` or a Deployment do), each
  within seconds and with nothing written, until `kafka-eos accept-topic`; a `kafka-eos stop`
  given meanwhile keeps every start stopped (exit 0, nothing started) until `kafka-eos resume`;
  then the run writes every order after the re-creation exactly once.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders, read_committed
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos, orders_pipeline, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, wait_for
from integration_tests.sink.test_sink_topic_changes import delete_topic

TIMEOUT_MS = 8000     # the decided batch's transactions: aborted by the broker this long after the kill
RESTARTS = 10
REFUSED_START_S = 15  # bound on one refused start, Python's start and the file's live checks included


def pipeline_file(tmp_path: Path, topics: tuple[str, str], short_timeout: bool = False, **sink_options: str) -> Path:
    """orders-json.yaml on topics of its own: batches of 100, a 1 s trigger, skip on bad input;
    ``short_timeout``: transactions the broker aborts ``TIMEOUT_MS`` after a kill (the example's
    timeout otherwise: under a loaded machine a batch can take longer than 8 s, and the broker then
    aborts a live run's transactions, TransactionLostError, which a test that kills nothing must
    not meet; found by a CI run at a load of 12)."""
    timeouts = {"transaction_timeout_ms": TIMEOUT_MS, "batch_margin_ms": 2000} if short_timeout else {}
    return orders_pipeline(tmp_path, topics, "guards", 100, "1 second", {**timeouts, "options": sink_options})


def test_a_replay_mismatch_exits_5_and_restarts_do_not_retry_it(bootstrap, tmp_path):
    topics = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {topics[0]: 3, topics[1]: 3})
    produce_orders(bootstrap, topics[0], 300, run=topics[0], aborted_every=300, aborted_size=5)
    faults = tmp_path / "faults"
    faults.mkdir()
    path = pipeline_file(tmp_path, topics, short_timeout=True, faultInjection="between_end_txns@1",
                         faultInjectionDir=str(faults))
    log = tmp_path / "first.log"
    began = time.monotonic()
    first = start_kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, log)
    try:
        wait_for((faults, "between_end_txns.*"), first, 300, log)  # batch 1 decided, one of its EndTxns sent
    finally:
        kill_group(first)
    time.sleep(TIMEOUT_MS / 1000 + 3)  # the broker aborts the rest: the restart records them lost
    doc = yaml.safe_load(path.read_text())
    doc["transform"]["sql"] = doc["transform"]["sql"].replace("value.quantity > 0", "value.quantity > 1")
    doc["sink"]["options"] = {}
    path.write_text(yaml.safe_dump(doc))
    restarted = time.monotonic()
    run = kafka_eos(["run", str(path), "--once", "--restarts", "3"], bootstrap, tmp_path, timeout=400)
    print(f"replay mismatch: first run killed after {restarted - began:.0f} s; the supervised run exited "
          f"{run.code} after {time.monotonic() - restarted:.1f} s")
    assert run.code == 5, run.log()
    assert "ReplayMismatchError" in run.stderr and "kafka-eos accept-loss --batch 1" in run.stderr, run.log()
    assert "exited with 5 (needs an operator); not restarted" in run.stdout, run.log()
    assert "restart 1 of 3" not in run.stdout, run.log()


def refused(run, why: str) -> None:
    assert run.code == 5 and why in run.stderr, run.log()


@pytest.mark.long  # minutes: make long (CI, after make test)
def test_a_recreated_output_topic_stays_refused_across_ten_automatic_restarts(bootstrap, tmp_path):
    topics = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {topics[0]: 3, topics[1]: 3})
    before = produce_orders(bootstrap, topics[0], 200, aborted_every=200, aborted_size=5)
    path = pipeline_file(tmp_path, topics)
    first = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert first.code == 0, first.log()
    assert order_report(bootstrap, {before.run: 200}, topics[1])["missing"] == 0

    delete_topic(bootstrap, topics[1])
    create_topics(bootstrap, {topics[1]: 3})  # another topic id under the same name
    after = produce_orders(bootstrap, topics[0], 200, aborted_every=200, aborted_size=5)
    began = time.monotonic()
    supervised = kafka_eos(["run", str(path), "--once", "--restarts", str(RESTARTS)], bootstrap, tmp_path)
    first_refusal_s = time.monotonic() - began
    refused(supervised, "OutputTopicChangedError")
    assert f"output topic '{topics[1]}' recreated" in supervised.stderr, supervised.log()
    assert "exited with 5 (needs an operator); not restarted" in supervised.stdout, supervised.log()

    seconds = []
    for _ in range(RESTARTS):  # a supervisor that restarts whatever the exit code
        began = time.monotonic()
        again = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, timeout=120)
        seconds.append(time.monotonic() - began)
        refused(again, "not accepted since")
        assert "kafka-eos accept-topic" in again.stderr, again.log()
    assert read_committed(bootstrap, topics[1]) == [], "a refused start wrote into the re-created topic"
    print(f"re-created output topic: refused by the sink's start in {first_refusal_s:.1f} s (under --restarts "
          f"{RESTARTS}: not restarted), then {RESTARTS} automatic restarts refused in "
          f"{min(seconds):.1f}-{max(seconds):.1f} s each ({sum(seconds):.1f} s in all)")
    assert max(seconds) < REFUSED_START_S, seconds

    stop = kafka_eos(["stop", str(path)], bootstrap, tmp_path, timeout=60)
    assert stop.code == 0 and "kafka-eos resume" in stop.stdout, stop.log()
    accepted = kafka_eos(["accept-topic", str(path)], bootstrap, tmp_path, timeout=60)
    assert accepted.code == 0 and "accepted by the operator" in accepted.stdout, accepted.log()
    for args in (["run", str(path), "--once"], ["run", str(path), "--once", "--restarts", "3"]):
        held = kafka_eos(args, bootstrap, tmp_path, timeout=120)  # stopped by request: exit 0, nothing started
        assert held.code == 0 and "a stop was requested" in held.stderr, held.log()
        assert "restart 1" not in held.stdout, held.log()
    resumed = kafka_eos(["resume", str(path)], bootstrap, tmp_path, timeout=60)
    assert resumed.code == 0 and "stop request withdrawn" in resumed.stdout, resumed.log()

    last = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert last.code == 0, last.log()
    report = order_report(bootstrap, {after.run: 200}, topics[1])
    assert report == {"out": 200, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}, last.log()
