"""Kafka's own performance tools on loopback, the physical ceiling of ``bench.size_profile``.

``ProducerPerformance`` (kafka-producer-perf-test) writes as many records of the input's size as
the input has into a fresh topic of as many partitions (``acks=all``, idempotent: the Java
client's defaults, ``linger.ms=5``, 1 MB batches: the producer settings of kafka-eos and of Spark
tuned); ``ConsumerPerformance`` (kafka-consumer-perf-test) reads the input topic. Their jars are
resolved once with Maven from ``bench/kafka_tools/pom.xml`` into ``build/kafka-tools-<version>``.
CPU: the tool's JVM (its children's rusage) minus a run of one record (the JVM's start and the
client's connections), and the broker's over the run, per MB of record values. The rate is the
tool's own (records/s over its whole run: no warm-up is excluded, unlike the Spark runs).
"""
from __future__ import annotations

import re
import resource
import subprocess
from pathlib import Path

import psutil

from bench.throughput import Input
from integration_tests.kafka_tools import create_topic, unique
from kafka_eos.connectors.dev.java_env import java_binary, kafka_version

ROOT = Path(__file__).resolve().parents[1]
POM = Path(__file__).with_name("kafka_tools") / "pom.xml"
HEAP = "-Xmx512m"
PRODUCER_PROPS = ("linger.ms=5", "batch.size=1000000", "acks=all", "compression.type=none")


def classpath() -> str:
    target = ROOT / "build" / f"kafka-tools-{kafka_version()}"
    if not (target / ".complete").exists():
        subprocess.run(["mvn", "-B", "-q", "-f", str(POM), f"-Dmaven.repo.local={ROOT / 'build' / 'm2'}",
                        "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
                        f"-DoutputDirectory={target}", "-DincludeScope=runtime"], check=True)
        (target / ".complete").write_text("ok")
    return str(target / "*")


def broker_cpu(pids: tuple[int, ...]) -> float:
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tool(main: str, args: list[str], brokers: tuple[int, ...]) -> tuple[str, float, float]:
    """(stdout, the tool's CPU seconds, the broker's) of one run."""
    cpu, broker = _children_cpu(), broker_cpu(brokers)
    proc = subprocess.run([java_binary(), HEAP, "-cp", classpath(), main, *args], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode:
        raise RuntimeError(f"{main} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout, _children_cpu() - cpu, broker_cpu(brokers) - broker


def _produce(inp: Input, records: int) -> tuple[str, float, float]:
    topic = create_topic(inp.bootstrap, unique(f"perf-{inp.size}"), inp.partitions)
    return _tool("org.apache.kafka.tools.ProducerPerformance",
                 ["--topic", topic, "--num-records", str(records), "--record-size", str(inp.size),
                  "--throughput", "-1", "--producer-props", f"bootstrap.servers={inp.bootstrap}", *PRODUCER_PROPS],
                 inp.broker_pids)


def produce_perf(inp: Input) -> dict:
    _, base_cpu, _ = _produce(inp, 1)
    out, cpu, broker = _produce(inp, inp.records)
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    rate = float(re.search(r"([\d.]+) records/sec", last).group(1))
    return _result(inp, rate, cpu - base_cpu, broker, base_cpu, last)


def _consume(inp: Input, records: int) -> tuple[str, float, float]:
    return _tool("org.apache.kafka.tools.ConsumerPerformance",
                 ["--bootstrap-server", inp.bootstrap, "--topic", inp.topic, "--messages", str(records),
                  "--timeout", "60000"], inp.broker_pids)


def consume_perf(inp: Input) -> dict:
    _, base_cpu, _ = _consume(inp, 1)
    out, cpu, broker = _consume(inp, inp.records)
    head, row = [line for line in out.splitlines() if line.strip()][-2:]
    fields = dict(zip((h.strip() for h in head.split(",")), (v.strip() for v in row.split(",")), strict=False))
    return _result(inp, float(fields.get("fetch.nMsg.sec") or fields["nMsg.sec"]), cpu - base_cpu, broker, base_cpu, row)


def _result(inp: Input, rate: float, cpu: float, broker: float, base_cpu: float, line: str) -> dict:
    mb = inp.records * inp.size / 1e6
    return {"records": inp.records, "records_per_s": round(rate), "tool_line": line.strip(),
            "cpu_s": round(cpu, 3), "start_cpu_s": round(base_cpu, 3), "broker_cpu_s": round(broker, 3),
            "stages_s_per_mb": {"process": round(cpu / mb, 5), "broker": round(broker / mb, 5)}}
