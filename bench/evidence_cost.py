"""What the write evidence costs a sink task (issue 46: goal < 2% throughput).

One sink task's write outside Spark (``KafkaWriter.write`` of Arrow batches into a
transaction, then the commit), on one local broker, with the evidence (each record's
partition chosen by the task, a digest per output partition) and without it (the sink option
``writeEvidence=false``).
Interleaved rounds, the order flipping each round; per run the task's wall time and the
process's CPU time (librdkafka's threads included). Two sizes: a task of a large batch and of
a small one, keyed 100 B records on 8 partitions.

    python -m bench.evidence_cost [--rounds 5] [--records 250000,2000]

Writes ``bench/results/<date>-evidence-cost.json``.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace

import pyarrow as pa

from bench.common import load_avg, write_result
from bench.method import round_ratios, summary
from integration_tests.kafka_tools import create_topic, unique
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
from kafka_eos.txn.protocol.kafka_committer import KafkaCommitter
from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.protocol.sink_config import SinkConfig

PARTITIONS = 8
ARROW_BATCH = 10_000  # rows per Arrow batch, as Spark hands them to the sink (maxRecordsPerBatch)


def batches(records: int) -> list[pa.RecordBatch]:
    keys = [b"order-%d" % i for i in range(records)]
    values = [b"x" * 100] * records
    return [pa.RecordBatch.from_pydict({"key": keys[i:i + ARROW_BATCH], "value": values[i:i + ARROW_BATCH]})
            for i in range(0, records, ARROW_BATCH)]


def one_run(config: SinkConfig, rows: list[pa.RecordBatch], batch_id: int) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    handle = KafkaWriter(config, batch_id, 0).write(rows)
    out = {"wall_ms": (time.perf_counter() - wall) * 1000, "cpu_ms": (time.process_time() - cpu) * 1000,
           "records": handle.records, "digests": sum(len(p) for p in handle.digests.values())}
    KafkaCommitter(config.client_conf()).commit([handle])
    return out


def measure(bootstrap: str, rounds: int, sizes: list[int]) -> dict:
    """``rounds`` interleaved rounds per task size, on the broker at ``bootstrap``."""
    out: dict = {"rounds": rounds, "partitions": PARTITIONS, "record_bytes": 100, "cells": {}}
    with tempfile.TemporaryDirectory() as log:
        topic = create_topic(bootstrap, unique("evidence"), PARTITIONS)
        config = SinkConfig(producer_conf={"bootstrap.servers": bootstrap}, transactional_id_prefix=unique("ev"),
                            log_location=log, topic=topic, transaction_timeout_ms=60_000)
        arms = {"with_evidence": config, "without": replace(config, write_evidence=False)}
        batch_id = 0
        for size in sizes:
            rows, runs = batches(size), {name: [] for name in arms}
            one_run(config, rows, batch_id := batch_id + 1)  # warm-up: imports, metadata
            for r in range(rounds):
                for name in (list(arms) if r % 2 == 0 else list(arms)[::-1]):
                    runs[name].append(one_run(arms[name], rows, batch_id := batch_id + 1))
            wall = {name: [run["wall_ms"] for run in rs] for name, rs in runs.items()}
            cpu = {name: [run["cpu_ms"] for run in rs] for name, rs in runs.items()}
            out["cells"][str(size)] = {
                "wall_ms": {k: summary(v) for k, v in wall.items()}, "cpu_ms": {k: summary(v) for k, v in cpu.items()},
                "wall_ratio": round_ratios(wall["with_evidence"], wall["without"]),
                "cpu_ratio": round_ratios(cpu["with_evidence"], cpu["without"]),
                "digested_partitions": statistics.median(run["digests"] for run in runs["with_evidence"]),
                "load_avg_1m": load_avg()}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--records", default="250000,2000", help="records per task, comma-separated")
    a = p.parse_args()
    with LocalKafkaCluster() as cluster:
        result = measure(cluster.bootstrap, a.rounds, [int(s) for s in a.records.split(",")])
    path = write_result("evidence-cost", result)
    print("\n".join(lines(result)))
    print(f"wrote {path}")


def lines(result: dict) -> list[str]:
    return [f"evidence cost, {size} records a task: wall with/without {cell['wall_ratio']['median']} "
            f"[{cell['wall_ratio']['min']}-{cell['wall_ratio']['max']}], cpu {cell['cpu_ratio']['median']} "
            f"[{cell['cpu_ratio']['min']}-{cell['cpu_ratio']['max']}]; wall ms {cell['wall_ms']['with_evidence']['median']} "
            f"vs {cell['wall_ms']['without']['median']}" for size, cell in result["cells"].items()]


if __name__ == "__main__":
    main()
