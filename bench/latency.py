"""End-to-end latency of a kafka-eos exactly-once pipeline at a steady input rate.

A paced producer writes ``rate`` records/s, each value stamped with its produce time (wall
clock, ns); the kafka-eos pipeline (``bench/k2k_job.py``, spark-submit, its trigger) copies
them; a ``read_committed`` consumer of the output takes the time each record becomes visible to
it. Latency = visible time - produce time, per record. Before the timed phase a probe of 1,000
records must come through, so the query's start-up is not measured. Duplicates and missing
records are counted (both must be 0 under exactly-once).
"""
from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from bench import method
from bench.common import SparkJob
from bench.throughput import JOB, SPARK_TUNED_SINK
from integration_tests.kafka_tools import create_topic, unique

PROBE = 1_000
PARTITIONS = 8  # issue 45.3: 2,000 records/s on 8 partitions, trigger 1 s


def _value(tag: bytes, seq: int, size: int) -> bytes:
    head = b"%s%010d:%019d:" % (tag, seq, time.time_ns())
    return head.ljust(size, b"x")


def paced_produce(bootstrap: str, topic: str, rate: int, count: int, size: int) -> None:
    """Produce ``count`` stamped records at ``rate``/s (in ~1 ms steps), then flush."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    started, sent = time.monotonic(), 0
    while sent < count:
        due = min(count, int((time.monotonic() - started) * rate) + 1)
        while sent < due:
            producer.produce(topic, _value(b"T", sent, size), str(sent).encode())
            sent += 1
        producer.poll(0)
        time.sleep(0.001)
    producer.flush(60)


def _consumer(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("latency"),
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 50})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    return consumer


def measure(bootstrap: str, trigger_s: float, rate: int = 10_000, duration_s: int = 60, size: int = 100,
            fmt: str = "kafka-eos", profile: str = "", partitions: int = PARTITIONS) -> dict:
    """Latencies (ms) of ``rate * duration_s`` records through ``fmt`` (kafka-eos with its defaults,
    or Spark's ``kafka`` tuned as in ``bench.throughput``) with ``trigger_s``; ``profile`` (a
    directory): run kafka-eos profiled (``bench.profile_hooks``), the stage timings of every task there."""
    source = create_topic(bootstrap, unique("lat-in"), partitions)
    out = create_topic(bootstrap, unique("lat-out"), partitions)
    count = rate * duration_s
    tuned = [f"--sink-option={k}={v}" for k, v in SPARK_TUNED_SINK.items()] if fmt == "kafka" else []
    with tempfile.TemporaryDirectory() as ck:
        job = SparkJob(JOB, ["--bootstrap", bootstrap, "--input", source, "--output", out, "--checkpoint", ck,
                             "--format", fmt, "--records", str(PROBE + count), *tuned,
                             "--trigger-seconds", str(trigger_s), *(["--profile", profile] if profile else [])],
                       packages=fmt == "kafka")
        try:
            consumer = _consumer(bootstrap, out, partitions)
            probe = Producer({"bootstrap.servers": bootstrap})
            for i in range(PROBE):
                probe.produce(source, _value(b"P", i, size), str(i).encode())
            probe.flush(30)
            _wait_for_probe(consumer, job, timeout_s=600)
            producer = threading.Thread(target=paced_produce, args=(bootstrap, source, rate, count, size))
            producer.start()
            latencies, duplicates = _collect(consumer, count, timeout_s=duration_s + 300)
            producer.join()
            consumer.close()
            job_result = job.result(timeout=300)
        finally:
            job.kill()
    latencies.sort()
    batch_times = sorted(b["ms"]["triggerExecution"] for b in job_result["per_batch"][1:])
    return {"format": fmt, "trigger_s": trigger_s, "rate_per_s": rate, "duration_s": duration_s, "record_bytes": size,
            "partitions": partitions, "records": len(latencies), "missing": count - len(latencies),
            "duplicates": duplicates, **summary(latencies), "cdf_ms": cdf(latencies), "batches": job_result["batches"],
            "batch_ms": batch_durations(job_result["per_batch"]),
            "batch_time_ms": {"p50": percentile(batch_times, 50), "p99": percentile(batch_times, 99),
                              "over_trigger": sum(t > trigger_s * 1000 for t in batch_times)},
            "_samples_ms": latencies,
            "per_batch": job_result["per_batch"]}


def batch_durations(per_batch: list[dict]) -> dict:
    """Median of each of Spark's per-batch durations (triggerExecution, addBatch, walCommit, ...)
    over the batches that had input: where a micro-batch's time goes."""
    return method.key_medians([b["ms"] for b in per_batch], missing=0)


def _wait_for_probe(consumer: Consumer, job: SparkJob, timeout_s: float) -> None:
    seen, deadline = 0, time.monotonic() + timeout_s
    while seen < PROBE:
        if time.monotonic() > deadline or job.proc.poll() is not None:
            raise RuntimeError(f"latency pipeline: only {seen}/{PROBE} probe records came through")
        seen += len([m for m in consumer.consume(1000, 0.5) if not m.error()])


def _collect(consumer: Consumer, count: int, timeout_s: float) -> tuple[list[float], int]:
    latencies, seen, duplicates = [], set(), 0
    deadline = time.monotonic() + timeout_s
    while len(seen) < count and time.monotonic() < deadline:
        messages = consumer.consume(10000, 0.2)
        now = time.time_ns()
        for msg in messages:
            if msg.error():
                raise KafkaException(msg.error())
            value = msg.value()
            if value[:1] != b"T":
                continue
            seq, stamp = int(value[1:11]), int(value[12:31])
            if seq in seen:
                duplicates += 1
                continue
            seen.add(seq)
            latencies.append((now - stamp) / 1e6)
    return latencies, duplicates


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered))) - 1))]


def summary(ordered: list[float]) -> dict:
    return {"p50": round(percentile(ordered, 50), 1), "p90": round(percentile(ordered, 90), 1),
            "p99": round(percentile(ordered, 99), 1), "max": round(ordered[-1], 1) if ordered else None,
            "mean": round(sum(ordered) / len(ordered), 1) if ordered else None}


def cdf(ordered: list[float], points: int = 100) -> list[list[float]]:
    """[latency ms, fraction] at every 1 % (plus 99.9 %), for re-plotting from the JSON."""
    qs = [i * 100 / points for i in range(1, points + 1)] + [99.9]
    return [[round(percentile(ordered, q), 1), q / 100] for q in sorted(qs)]


FORMATS = ("kafka-eos", "kafka")  # kafka-eos exactly-once, and Spark's built-in kafka source + sink


def suite(bootstrap: str, triggers: list[float], rate: int, duration_s: int, rounds: int,
          settle: Callable[[], dict], log: Callable[[str], None] = print) -> dict:
    """``rounds`` interleaved rounds of (trigger x format) latency runs; median [min-max] of p50 and p99."""
    runs = []
    for r in range(rounds):
        for trigger in triggers:
            for fmt in FORMATS:
                settled = settle()
                run = measure(bootstrap, trigger, rate, duration_s, fmt=fmt)
                run.update(round=r, settle=settled)
                runs.append(run)
                log(f"latency round {r + 1}/{rounds} {fmt}, trigger {trigger:g} s: p50 {run['p50']} ms, "
                    f"p99 {run['p99']} ms, batch p50 {run['batch_time_ms']['p50']} ms p99 "
                    f"{run['batch_time_ms']['p99']} ms ({run['batch_time_ms']['over_trigger']} over the trigger)")
    return {"runs": runs, "summary": summarize(runs)}


def small_batch_profile(bootstrap: str, trigger_s: float, rate: int, duration_s: int) -> dict:
    """One profiled kafka-eos run at ``trigger_s``: latency and where each small batch's time goes
    (``stage_profile.small_batch_medians``)."""
    from bench.stage_profile import read_lines, small_batch_medians
    with tempfile.TemporaryDirectory() as directory:
        run = measure(bootstrap, trigger_s, rate, duration_s, profile=directory)
        stages = small_batch_medians(read_lines(Path(directory)), run["per_batch"])
    return {"trigger_s": trigger_s, "rate_per_s": rate, "p50": run["p50"], "p99": run["p99"],
            "batches": run["batches"], **stages}


def summarize(runs: list[dict]) -> dict:
    """Per ``<format> <trigger>s``: median, min, max and spread of the runs' p50 and p99 (ms)."""
    out = {}
    for fmt, trigger in sorted({(r["format"], r["trigger_s"]) for r in runs}, key=lambda k: (k[1], k[0])):
        chosen = [r for r in runs if r["format"] == fmt and r["trigger_s"] == trigger]
        out[f"{fmt} {trigger:g}s"] = {q: method.summary([r[q] for r in chosen]) for q in ("p50", "p99")}
        out[f"{fmt} {trigger:g}s"]["batch_p99_ms"] = method.summary([r["batch_time_ms"]["p99"] for r in chosen])
    return out
