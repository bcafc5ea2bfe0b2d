"""The source's start is decided once, with Spark's default ``startingOffsets=latest`` and
input arriving while the query starts.

Spark asks a source for ``initialOffset()`` right before planning batch 0, again before running
it and again on every replay of it, and keeps only batch 0's end in its offset log. The first
test replays that call sequence on the real broker with records arriving between the calls;
the Spark runs pause the first run right before batch 0's decision (its transactions are
pre-committed, so read_uncommitted shows what batch 0 emits), then kill or release it: every id
batch 0 pre-committed, and every input record from the start batch 0 was planned with, must
end up exactly once in the read_committed output."""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka_eos.connectors.spark_compat import ReadAllAvailable

from kafka_eos.connectors.demo_data import count_ids, create_topics, produce_orders, read_committed
from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
from integration_tests.kafka_tools import create_topic, produce, read_all, unique, output_ids
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos
from integration_tests.pipeline_runs import (kill_group, planned_start, run_to_completion, start_job,
                                             wait_for)

PARTITIONS = 3


class Producer(threading.Thread):
    """Writes ids 0, 1, 2, ... to ``topic`` (key = value = id) until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.written = 0

    def run(self) -> None:
        while not self.stop.is_set():
            chunk = [(str(i).encode(), str(i).encode()) for i in range(self.written, self.written + 200)]
            produce(self.bootstrap, self.topic, chunk)
            self.written += len(chunk)
            time.sleep(0.01)

    def finish(self) -> int:
        self.stop.set()
        self.join(60)
        return self.written


@pytest.fixture
def live_input(bootstrap):
    topic = unique("start-in")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    producer = Producer(bootstrap, topic)
    producer.start()
    yield topic, producer
    producer.finish()


def expected_ids(bootstrap: str, topic: str, start: dict[int, int]) -> set[int]:
    records = read_all(bootstrap, topic, "read_committed", idle_s=2.0, timeout_s=120)
    return {int(m.value()) for m in records if m.offset() >= start[m.partition()]}


def test_batch_0_is_read_from_its_planned_start_whatever_initial_offset_says_later(bootstrap):
    """Spark's calls for a new query (initialOffset, latestOffset, initialOffset, partitions),
    with records arriving between them; then a restart's initialOffset and partitions."""
    topic = create_topic(bootstrap, unique("start-calls"), partitions=1)
    produce(bootstrap, topic, [(None, b"before")] * 10)
    source = KafkaStreamReader({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                "startingOffsets": "latest"}, source_schema())
    first = source.initialOffset()
    produce(bootstrap, topic, [(None, b"batch 0")] * 7)
    end0 = source.latestOffset(first, ReadAllAvailable())
    produce(bootstrap, topic, [(None, b"batch 1")] * 5)
    for again in (source.initialOffset(), source.initialOffset()):  # before running batch 0; a restart
        ranges = [(p.value.start, p.value.end) for p in source.partitions(again, end0)]
        assert ranges == [(10, 17)], f"batch 0 planned [10, 17) but would read {ranges}"


def test_no_new_data_after_batch_0_is_the_same_offset_text(bootstrap):
    """Spark runs a batch when the end's JSON text differs from the start's: batch 0's end
    (which records its start) must come back unchanged when nothing new arrived."""
    topic = create_topic(bootstrap, unique("start-idle"), partitions=1)
    produce(bootstrap, topic, [(None, b"before")] * 3)
    source = KafkaStreamReader({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                "startingOffsets": "earliest"}, source_schema())
    end0 = json.loads(json.dumps(source.latestOffset(source.initialOffset(), ReadAllAvailable())))
    assert json.dumps(source.latestOffset(end0, ReadAllAvailable())) == json.dumps(end0)


def start_paused_in_batch_0(bootstrap, tmp_path, topic: str, then: str) -> tuple[set[int], str, list[str], Path]:
    """Run the query (latest start, 1 s trigger, 90 s, at most 5000 offsets a batch) to batch 0's
    decision, note what batch 0 pre-committed, then kill the driver or let it run on. Returns
    batch 0's ids, the output topic, the job's arguments and its log."""
    output, log = unique("start-out"), tmp_path / "job.log"
    checkpoint, faults = tmp_path / "checkpoint", tmp_path / "faults"
    faults.mkdir()
    args = ["--bootstrap", bootstrap, "--input", topic, "--output", output, "--checkpoint", str(checkpoint),
            "--prefix", unique("start"), "--starting-offsets", "latest"]
    proc = start_job(args + ["--trigger", "1", "--run-seconds", "90", "--max-offsets", "5000",
                             "--fault", "before_decision@0", "--fault-dir", str(faults)], log)
    wait_for((faults, "before_decision.*"), proc, 300, log)
    batch0 = set(output_ids(bootstrap, output, "read_uncommitted"))
    if then == "kill":
        kill_group(proc)
    else:
        (faults / "release").touch()
        assert proc.wait(300) == 0, log.read_text()[-3000:]
    return batch0, output, args, log


def check(bootstrap: str, topic: str, output: str, batch0: set[int], checkpoint: Path) -> None:
    counts: Counter = output_ids(bootstrap, output)
    wanted = expected_ids(bootstrap, topic, planned_start(checkpoint))
    assert batch0 <= wanted, f"batch 0 emitted {len(batch0 - wanted)} ids from before its planned start"
    missing = sorted(wanted - set(counts))
    duplicated = {i: c for i, c in counts.items() if c > 1}
    early = set(counts) - wanted
    assert not missing and not duplicated and not early, (
        f"{len(early)} from before the start, "
        f"{len(missing)} missing (of batch 0's {len(batch0)}: {len(batch0 & set(missing))}), "
        f"{len(duplicated)} duplicated; first missing {missing[:10]}")


@pytest.mark.parametrize("then", ["kill", pytest.param("release", marks=pytest.mark.chaos)])  # release: make chaos
def test_a_latest_start_with_input_arriving_is_exactly_once_from_its_planned_start(then, bootstrap, live_input,
                                                                                 tmp_path):
    """The driver is SIGKILLed in batch 0 and restarted ("kill"), or runs on ("release")."""
    topic, producer = live_input
    batch0, output, args, log = start_paused_in_batch_0(bootstrap, tmp_path, topic, then=then)
    producer.finish()
    run_to_completion(args, log)
    check(bootstrap, topic, output, batch0, tmp_path / "checkpoint")


class OrderWriter(threading.Thread):
    """Writes small runs of orders (with poison records) to ``topic`` until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            produce_orders(self.bootstrap, self.topic, 300, poison=3, aborted_every=10_000)

    def finish(self) -> None:
        self.stop.set()
        self.join(60)


def dlq_pipeline(tmp_path: Path, orders: str, priced: str, dlq: str) -> Path:
    """orders-json.yaml on this test's topics, started with Spark's default ``latest``."""
    text = (EXAMPLES / "orders-json.yaml").read_text()
    for old, new in [("topics: [orders]", f"topics: [{orders}]"),
                     ("starting_offsets: earliest", "starting_offsets: latest"),
                     ("file: ../schemas/order.avsc", f"file: {EXAMPLES.parent / 'schemas' / 'order.avsc'}"),
                     ("topic: orders-priced", f"topic: {priced}"), ("dlq_topic: orders-dlq", f"dlq_topic: {dlq}")]:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return path


@pytest.mark.chaos  # a long run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_both_scans_of_a_dlq_plan_start_at_the_same_offsets(bootstrap, tmp_path):
    orders, priced, dlq = unique("orders"), unique("priced"), unique("dlq")
    create_topics(bootstrap, {orders: PARTITIONS, priced: PARTITIONS, dlq: 1})
    writer = OrderWriter(bootstrap, orders)
    writer.start()
    try:
        first = kafka_eos(["run", str(dlq_pipeline(tmp_path, orders, priced, dlq)), "--once"], bootstrap, tmp_path)
    finally:
        writer.finish()
    assert first.code == 0, first.log()
    again = kafka_eos(["run", str(tmp_path / "pipeline.yaml"), "--once"], bootstrap, tmp_path)
    assert again.code == 0, again.log()
    lines = (tmp_path / "orders-json" / "offsets" / "0").read_text().splitlines()[2:]
    starts = [json.loads(line)["start"] for line in lines]
    assert len(starts) == 2 and starts[0] == starts[1], f"the two scans started at {starts}"
    start = {int(p): o for parts in starts[0].values() for p, o in parts.items()}
    records = [m for m in read_committed(bootstrap, orders) if m.offset() >= start[m.partition()]]
    poison = [m.key().decode() for m in records if m.value() == b"{not json"]
    good = [json.loads(m.value())["order_id"] for m in records if m.value() != b"{not json"]
    assert good and poison, "input arrived after the query's start"
    out = [json.loads(m.value())["order_id"] for m in read_committed(bootstrap, priced)]
    assert count_ids(out, good) == {"out": len(good), "duplicates": 0, "missing": 0, "unexpected": 0}
    in_dlq = [m.key().decode() for m in read_committed(bootstrap, dlq)]
    assert count_ids(in_dlq, poison) == {"out": len(poison), "duplicates": 0, "missing": 0, "unexpected": 0}
