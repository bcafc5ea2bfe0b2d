"""What a commit's own records cost on each store kafka-eos can keep them on (issue 63).

Per batch the driver's commit writes the decided record, the committed record and prunes the log
(lists it; rolls and deletes every 1,000 batches): ``SinkLog.append`` twice and ``prune``, timed
here on real records (2 sink partitions writing 4 output partitions each, with digests and the
batch's offset-log text). Stores, in interleaved rounds:
- ``local``: this machine's disk (hard links: exclusive create);
- ``fuse``: a bucket of moto's S3 server on loopback mounted with s3fs (no hard links: checked
  create, a rename that copies the object), what /dbfs and /Volumes are;
- ``s3``: the same server through pyarrow's S3 client (``s3a://``: check, then one PUT);
- ``kafka``: the same commit (two appends and the prune) on a ``kafka:`` location, as a pipeline
  with ``checkpoint.records: kafka`` opens it (``txn/log/stores.py``; ``txn/log/kafka_store.py``:
  a compacted topic of one partition, a transactional producer per writer role, one transaction
  per record: the decision must be durable before its EndTxns), on a local one-broker cluster.
The servers are on loopback: the figures are the store protocol's own cost (requests, fsyncs,
copies), not a cloud's round trip, which adds per request.

    python -m bench.store_latency [--rounds 5] [--batches 40] [--stores local,kafka]

Writes ``bench/results/<date>-store-latency.json``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from bench.common import write_result
from bench.sink_log_size import handles, offsets_text
from integration_tests.object_stores import CREDENTIALS, create_bucket, fuse_mount, s3_server
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog
from kafka_eos.txn.log.stores import forget_clusters, kafka_records_root, register, use_role


def commit_ms(location: str, batches: int) -> list[float]:
    """Milliseconds of each batch's store work: decided, committed, prune."""
    log, times = SinkLog(location, "bench", f"q-{uuid.uuid4().hex[:8]}"), []
    for batch in range(batches):
        hs = handles(batch, 2, 4)
        started = time.perf_counter()
        decided = log.append(BatchRecord(batch, DECIDED, 2, hs, {h.sink_partition: "pending" for h in hs},
                                         inputs=offsets_text(batch, 8)), None)
        log.append(BatchRecord(batch, COMMITTED, 2, hs, {h.sink_partition: "committed" for h in hs},
                               {"records": 4000.0, "committed_at_ms": float(time.time() * 1000)},
                               inputs=decided.inputs), decided)
        log.prune()
        times.append((time.perf_counter() - started) * 1000)
    return times


def kafka_location(bootstrap: str) -> str:
    """A sink log location in a Kafka record store of its own, registered as the sink registers it."""
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    location = f"{kafka_records_root(prefix, '/bench/ck')}/kafka-eos-sink"
    register(location, {"bootstrap.servers": bootstrap}, prefix)
    use_role(StoreRole.DRIVER)
    return location


def summary(rounds: list[list[float]]) -> dict:
    medians = [statistics.median(r) for r in rounds]
    every = sorted(t for r in rounds for t in r)
    return {"median_ms": round(statistics.median(medians), 2), "spread_ms": [round(min(medians), 2),
            round(max(medians), 2)], "p95_ms": round(every[int(len(every) * 0.95)], 2), "batches": len(every)}


def measure(rounds: int, batches: int, stores: tuple[str, ...] = ("local", "fuse", "s3", "kafka")) -> dict:
    os.environ.update(CREDENTIALS)
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        where: dict[str, Callable[[int], str]] = {"local": lambda r: str(scratch / "local" / str(r))}
        if "fuse" in stores or "s3" in stores:
            endpoint = stack.enter_context(s3_server())
            create_bucket(endpoint, "bench")
            mount = stack.enter_context(fuse_mount(endpoint, "bench", scratch / "mnt"))
            where["fuse"] = lambda r: str(mount / str(r))
            where["s3"] = lambda r: f"s3a://bench/s3/{r}?endpoint_override={endpoint}&scheme=http&region=us-east-1"
        if "kafka" in stores:
            from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
            bootstrap = stack.enter_context(LocalKafkaCluster()).bootstrap
            stack.callback(forget_clusters)  # the store's clients closed before the broker stops
            where["kafka"] = lambda r: kafka_location(bootstrap)
        where = {s: w for s, w in where.items() if s in stores}
        times: dict[str, list[list[float]]] = {store: [] for store in where}
        for r in range(rounds):
            for store, location in where.items():
                times[store].append(commit_ms(location(r), batches))
    return {"rounds": rounds, "load": os.getloadavg(), "stores": {s: summary(t) for s, t in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--stores", default="local,fuse,s3,kafka", help="comma-separated: local, fuse, s3, kafka")
    a = parser.parse_args()
    result = measure(a.rounds, a.batches, tuple(a.stores.split(",")))
    for store, s in result["stores"].items():
        print(f"{store}: {s['median_ms']} ms a commit [{s['spread_ms'][0]}-{s['spread_ms'][1]}], p95 {s['p95_ms']} ms")
    print(write_result("store-latency", result))


if __name__ == "__main__":
    main()
