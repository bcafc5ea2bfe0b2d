"""`kafka-eos run --metrics-port` and the file's `metrics:`: scraped during a real run (in process,
and through spark-submit), the counters equal what was written."""
from __future__ import annotations

import signal
import socket
import time
import urllib.request

import pytest
import yaml

from kafka_eos.connectors.demo_data import create_topics, produce_orders, read_committed
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.test_pipeline_stop import Run, pipeline  # noqa: F401 - the fixture


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
    finally:
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish() == 0, run.log()
    written = len(read_committed(bootstrap, sink))
    assert written == 1200
    assert got['kafka_eos_records_written_total{pipeline="orders-json"}'] == written, got
    assert got['kafka_eos_records_read_total{pipeline="orders-json"}'] == 1202
    assert got['kafka_eos_records_skipped_total{pipeline="orders-json"}'] == 2
    assert got['kafka_eos_batch_duration_seconds_count{pipeline="orders-json"}'] >= 1
    assert got['kafka_eos_last_committed_batch{pipeline="orders-json"}'] >= 0
    behind = {k: v for k, v in got.items() if k.startswith("kafka_eos_offsets_behind") and f'topic="{source}"' in k}
    assert len(behind) == 2 and set(behind.values()) == {0}, got  # everything read by then


def test_metrics_from_the_file_through_spark_submit_with_the_flag_over_its_port(bootstrap, tmp_path, pipeline):
    """`run --master local[2]` goes through spark-submit; the driver it starts serves the metrics the
    file asks for, on the port of --metrics-port; its console stays quiet; `kafka-eos stop` ends it."""
    path, source, sink = pipeline
    doc = yaml.safe_load(path.read_text())
    file_port, port = free_port(), free_port()
    doc["metrics"] = {"port": file_port, "host": "127.0.0.1"}
    path.write_text(yaml.safe_dump(doc))
    create_topics(bootstrap, {source: 2, sink: 2})
    produce_orders(bootstrap, source, 600, poison=1, aborted_every=600, aborted_size=10)
    run = Run(["run", str(path), "--master", "local[2]", "--metrics-port", str(port)], bootstrap, tmp_path)
    try:
        got = scrape_once_read(run, port, 601)
    finally:
        stop = kafka_eos(["stop", str(path)], bootstrap, tmp_path, timeout=120)
        assert stop.code == 0, stop.log()
        assert run.finish(timeout=180) == 0, run.log()
    assert f"kafka-eos orders-json: metrics at http://127.0.0.1:{port}/metrics" in run.out, run.log()
    assert got['kafka_eos_records_written_total{pipeline="orders-json"}'] == 600, got
    assert got['kafka_eos_records_read_total{pipeline="orders-json"}'] == 601
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", file_port)) != 0, "the flag's port replaced the file's"
    assert not [l for l in run.err if " INFO " in l or "default log4j profile" in l], run.log()
