"""The Python ceiling: the classic single-process Kafka exactly-once loop in plain confluent-kafka.

One consumer (``read_committed``, assigned every input partition from the beginning) feeds one
transactional producer; every ``--txn-seconds`` (5 s, like the trigger of the Spark runs) the
loop adds the consumer's positions with ``send_offsets_to_transaction`` and commits, then
begins the next transaction. Consumer fetch settings are the kafka-eos source's defaults and
producer settings the kafka-eos sink's, so the loop differs from kafka-eos only in having no
Spark. Runs in a fresh interpreter; prints ``BENCH {...}`` with the process's peak RSS and
records/s in steady state like the Spark runs: the first transaction (connections, first
fetches) is not timed, the rate is the later transactions' records over their time (the whole
run when there is only one transaction); ``wall_records_per_s`` is first consume -> last commit;
``steady_cpu_s`` the process's CPU (every thread) over the same steady part, ``cpu_s`` over the run.

    python -m bench.ceiling --bootstrap HOST:PORT --input TOPIC --output TOPIC --records N
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

FETCH = {"max.partition.fetch.bytes": 10485760, "queued.min.messages": 1000000,
         "queued.max.messages.kbytes": 131072, "fetch.queue.backoff.ms": 0}
PRODUCE = {"linger.ms": 5, "batch.num.messages": 10000, "queue.buffering.max.messages": 500000,
           "delivery.report.only.error": True}


def eos_loop(bootstrap: str, source: str, output: str, records: int, txn_seconds: float = 5.0) -> dict:
    group = f"ceiling-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **FETCH})
    partitions = consumer.list_topics(source, timeout=10).topics[source].partitions
    consumer.assign([TopicPartition(source, p, OFFSET_BEGINNING) for p in partitions])
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": group,
                         "on_delivery": _failed, **PRODUCE})
    producer.init_transactions(30)
    producer.begin_transaction()
    produce, poll = producer.produce, producer.poll

    def commit(last: bool) -> None:
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(60)
        if not last:
            producer.begin_transaction()

    done, transactions, first_txn = 0, 0, None
    started = last_commit = time.monotonic()
    cpu_started = time.process_time()  # every thread of the process: librdkafka's too
    while done < records:
        for msg in consumer.consume(10000, 0.5):
            if msg.error():
                raise KafkaException(msg.error())
            while True:
                try:
                    produce(output, msg.value(), msg.key())
                    break
                except BufferError:
                    poll(0.05)
            done += 1
        poll(0)
        if time.monotonic() - last_commit >= txn_seconds:
            commit(last=False)
            transactions += 1
            last_commit = time.monotonic()
            first_txn = first_txn or (done, last_commit, time.process_time())
    commit(last=True)
    ended, cpu_ended = time.monotonic(), time.process_time()
    elapsed = ended - started
    consumer.close()
    steady_records, steady_s = (done - first_txn[0], ended - first_txn[1]) if first_txn else (done, elapsed)
    steady_cpu = cpu_ended - (first_txn[2] if first_txn else cpu_started)
    return {"records": done, "transactions": transactions + 1, "elapsed_s": round(elapsed, 3),
            "wall_records_per_s": round(done / elapsed), "steady_records": steady_records,
            "steady_s": round(steady_s, 3), "steady_batches": transactions,
            "records_per_s": round(steady_records / steady_s),
            "cpu_s": round(cpu_ended - cpu_started, 3), "steady_cpu_s": round(steady_cpu, 3),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def _failed(err, msg) -> None:
    if err is not None:
        raise KafkaException(err)


def python_ceiling(inp) -> dict:
    """Run the loop over ``inp`` (a ``bench.throughput.Input``) in a fresh Python process."""
    from bench.throughput import PARTITIONS
    from integration_tests.kafka_tools import committed_end_offsets, create_topic, unique
    out = create_topic(inp.bootstrap, unique("out-ceiling"), PARTITIONS)
    proc = subprocess.run([sys.executable, "-m", "bench.ceiling", "--bootstrap", inp.bootstrap, "--input", inp.topic,
                           "--output", out, "--records", str(inp.records)],
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=1800)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BENCH ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"python ceiling failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(lines[-1][6:])
    result["output_end_offsets"] = sum(committed_end_offsets(inp.bootstrap, out).values())
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("bootstrap", "input", "output"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--records", type=int, required=True)
    p.add_argument("--txn-seconds", type=float, default=5.0)
    a = p.parse_args()
    print("BENCH " + json.dumps(eos_loop(a.bootstrap, a.input, a.output, a.records, a.txn_seconds)), flush=True)


if __name__ == "__main__":
    main()
