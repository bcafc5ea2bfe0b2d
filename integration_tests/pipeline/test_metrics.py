"""`kafka-eos run --metrics-port` and the file's `metrics:`: scraped during a real run (in process,
and through spark-submit), the counters equal what was written, and the probes' series (lag read
from the broker on a timer, held-back output, open transactions) carry exporter="driver"."""
from __future__ import annotations

import signal
import socket
import time
import urllib.request

import pytest
import yaml

from kafka_eos.connectors.demo_data import create_topics, produce_orders, read_committed
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.pipeline.test_pipeline_stop import Run, pipeline  # noqa: F401 - the fixture


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def read_total(run: Run) -> int:
    return sum(int(l.split(": ", 1)[1].split(" in")[0]) for l in run.out if l.startswith("kafka-eos orders-json batch "))


def scrape_once_read(run: Run, port: int, records: int) -> dict[str, float]:
    """The endpoint's numbers once the run's batch lines say ``records`` were read (or 120 s passed)."""
    run.wait_for_batches("orders-json", 1)
    deadline = time.monotonic() + 120
    while read_total(run) < records and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(1)
    return scrape(port)


@pytest.mark.chaos  # `make chaos`: make test keeps the spark-submit run scraped over its port
def test_scrape_during_a_run_counts_what_was_written(bootstrap, tmp_path, pipeline):
    path, source, sink = pipeline
    create_topics(bootstrap, {source: 2, sink: 2})
    produce_orders(bootstrap, source, 1200, poison=2, aborted_every=600, aborted_size=10)
    port = free_port()
    run = Run(["run", str(path), "--metrics-port", str(port)], bootstrap, tmp_path)
    try:
        got = scrape_once_read(run, port, 1202)
        lag = scrape_until(port, lambda m: len(behind(m, source)) == 2, "the lag probe's sample after a commit")
    finally:
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish() == 143, run.log()  # stopped by its signal after the running batch: 128 + SIGTERM
    written = len(read_committed(bootstrap, sink))
    assert written == 1200
    assert got['kafka_eos_records_written_total{pipeline="orders-json"}'] == written, got
    assert got['kafka_eos_records_read_total{pipeline="orders-json"}'] == 1202
    assert got['kafka_eos_records_skipped_total{pipeline="orders-json"}'] == 2
    assert got['kafka_eos_batch_duration_seconds_count{pipeline="orders-json"}'] >= 1
    assert got['kafka_eos_last_committed_batch{pipeline="orders-json"}'] >= 0
    assert set(behind(lag, source).values()) == {0}, lag  # everything read and committed by then


def behind(got: dict[str, float], topic: str) -> dict[str, float]:
    """The driver's ``kafka_eos_offsets_behind`` series of ``topic``."""
    return {k: v for k, v in got.items() if k.startswith("kafka_eos_offsets_behind{")
            and f'topic="{topic}"' in k and 'exporter="driver"' in k}


def open_transaction(bootstrap: str, transactional_id: str, topic: str, partition: int):
    """A producer with one record in an open transaction on ``topic``/``partition`` (abort it). Its
    timeout outlasts a loaded machine's run (a CI run at a load of 12 reached the abort after the
    broker had ended a 120 s transaction: the abort was fenced)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 600_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"held", partition=partition)
    producer.flush(30)
    return producer


def scrape_until(port: int, holds, what: str, bound_s: float = 60.0) -> dict[str, float]:
    """Scrapes until ``holds(numbers)`` (at most ``bound_s``; then fails saying ``what``)."""
    deadline = time.monotonic() + bound_s
    while not holds(got := scrape(port)):
        assert time.monotonic() < deadline, f"{what} not seen within {bound_s} s: {got}"
        time.sleep(0.5)
    return got


def test_metrics_from_the_file_through_spark_submit_with_the_flag_over_its_port(bootstrap, tmp_path, pipeline):
    """`run --master local[2]` goes through spark-submit; the driver it starts serves the metrics the
    file asks for, on the port of --metrics-port; its console stays quiet; `kafka-eos stop` ends it.
    The operator probe's facts: another producer's transaction left open on output partition 0 holds
    it back (records and seconds, growing while it stands), one under the pipeline's prefix (another
    owner's id) is an open transaction with its age and timeout; both gone once aborted."""
    path, source, sink = pipeline
    doc = yaml.safe_load(path.read_text())
    file_port, port = free_port(), free_port()
    doc["metrics"] = {"port": file_port, "host": "127.0.0.1", "sample_interval_s": 1}
    path.write_text(yaml.safe_dump(doc))
    create_topics(bootstrap, {source: 2, sink: 2})
    produce_orders(bootstrap, source, 600, poison=1, aborted_every=600, aborted_size=10)
    prefix, p = doc["sink"]["transactional_id_prefix"], 'exporter="driver",pipeline="orders-json"'
    held = f'{{exporter="driver",partition="0",pipeline="orders-json",topic="{sink}"}}'
    batches = 'pipeline="orders-json"'
    lingering = [open_transaction(bootstrap, unique("other-producer"), sink, 0),
                 open_transaction(bootstrap, f"{prefix}-0badc0de-7-0", sink, 1)]
    run = Run(["run", str(path), "--master", "local[2]", "--metrics-port", str(port)], bootstrap, tmp_path)
    try:
        got = scrape_once_read(run, port, 601)
        opened = scrape_until(port, lambda m: m.get(f"kafka_eos_output_held_back_seconds{held}", 0) >= 2,
                              "partition 0 held back for 2 s")
        for producer in lingering:
            producer.abort_transaction(30)
        lingering.clear()
        ended = scrape_until(port, lambda m: m.get(f"kafka_eos_output_held_back_records{held}") == 0
                             and m.get(f"kafka_eos_open_transactions{{{p}}}") == 0, "the aborts")
    finally:
        for producer in lingering:
            producer.abort_transaction(30)
        stop = kafka_eos(["stop", str(path)], bootstrap, tmp_path, timeout=120)
        assert stop.code == 0, stop.log()
        assert run.finish(timeout=180) == 0, run.log()
    assert f"kafka-eos orders-json: metrics at http://127.0.0.1:{port}/metrics" in run.out, run.log()
    assert got['kafka_eos_records_written_total{pipeline="orders-json"}'] == 600, got
    assert got['kafka_eos_records_read_total{pipeline="orders-json"}'] == 601
    assert set(behind(opened, source).values()) == {0} and len(behind(opened, source)) == 2, opened
    assert opened[f"kafka_eos_last_commit_timestamp_seconds{{{p}}}"] > time.time() - 120, opened
    assert opened[f"kafka_eos_input_waiting_seconds{{{p}}}"] == 0, opened
    assert opened[f"kafka_eos_output_held_back_records{held}"] >= 1, opened
    assert opened[f"kafka_eos_open_transactions{{{p}}}"] >= 1, opened
    assert opened[f"kafka_eos_oldest_open_transaction_seconds{{{p}}}"] >= 2, opened
    assert opened[f"kafka_eos_oldest_open_transaction_timeout_seconds{{{p}}}"] == 600, opened
    assert opened[f'kafka_eos_decision_state{{{p},state="committed"}}'] == 1, opened
    assert opened[f'kafka_eos_probe_failures_total{{{p},probe="output"}}'] == 0, opened
    assert opened[f'kafka_eos_probe_failures_total{{{p},probe="lag"}}'] == 0, opened
    assert ended[f"kafka_eos_output_held_back_seconds{held}"] == 0, ended
    assert ended[f"kafka_eos_transactions_committed_total{{{batches}}}"] >= 1, ended
    assert ended[f"kafka_eos_commit_seconds_count{{{batches}}}"] == ended[f"kafka_eos_batches_committed_total{{{batches}}}"] >= 1
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", file_port)) != 0, "the flag's port replaced the file's"
    assert not [l for l in run.err if " INFO " in l or "default log4j profile" in l], run.log()
