"""Shared benchmark plumbing: a fresh broker, bulk input, spark-submit runs, result files."""
from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from confluent_kafka import Producer

from kafka_eos.connectors.pipeline.runner import WORKER_MEMORY_CONF
from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env, spark_submit_binary

RESULTS = Path(__file__).parent / "results"
SPARK_KAFKA_POM = Path(__file__).parent / "spark_kafka" / "pom.xml"
CONNECTOR_NOTE = ("Maven Central has no spark-sql-kafka-0-10_2.13 for pyspark {pyspark} (checked 2026-11-23, newest "
                  "4.2.0), so connector {connector} runs against pyspark {pyspark}'s Spark jars")


def _pom_version(artifact: str) -> str:
    found = re.search(artifact + r"</artifactId>\s*<version>([^<]+)", SPARK_KAFKA_POM.read_text())
    return found.group(1) if found else "?"


def spark_kafka_jars() -> str:
    """Comma-separated jars of Spark's built-in Kafka connector, resolved once with Maven."""
    from kafka_eos.connectors.dev.java_env import cache_root
    target = cache_root() / "jars" / f"spark-sql-kafka-{_pom_version('spark-sql-kafka-0-10_2.13')}-pom{_pom_digest()}"
    if not (target / ".complete").exists():
        subprocess.run(["mvn", "-B", "-q", "-f", str(SPARK_KAFKA_POM),
                        "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
                        f"-DoutputDirectory={target}"], check=True)
        (target / ".complete").write_text("ok")
    return ",".join(str(p) for p in sorted(target.glob("*.jar")))


def _pom_digest() -> str:
    import hashlib
    return hashlib.sha1(SPARK_KAFKA_POM.read_bytes()).hexdigest()[:8]


def produce_bulk(bootstrap: str, topic: str, records: int, size: int = 100) -> float:
    """Write ``records`` values of ``size`` bytes (keys are the ids); return seconds taken."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "none", "queue.buffering.max.messages": 1_000_000})
    pad = b"x" * size
    started = time.monotonic()
    for i in range(records):
        key = str(i).encode()
        while True:
            try:
                producer.produce(topic, pad[: size - len(key)] + key, key)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)
    return time.monotonic() - started


class SparkJob:
    """One spark-submit run in the background (``run_job`` = start + ``result``).

    ``sample_memory`` samples the process tree's peak memory (``bench.memory``) while it runs."""

    def __init__(self, script: Path, args: list[str], packages: bool = False, master: str = "local[2]",
                 sample_memory: bool = False, broker_pids: tuple[int, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        cmd = [spark_submit_binary(), "--master", master]
        # every job, kafka-eos's and Spark's, gets the Spark settings kafka-eos's CLI sets
        for key, value in {**SMALL_CONF, **WORKER_MEMORY_CONF, "spark.driver.memory": "2g"}.items():
            cmd += ["--conf", f"{key}={value}"]
        if packages:
            cmd += ["--jars", spark_kafka_jars()]
        cmd += [str(script), *args]
        self.script = script
        self.logs = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, env={**python_env(), **(env or {})}, stdout=subprocess.PIPE,
                                     stderr=self.logs, text=True)
        from bench.cpu import CpuSampler
        # local mode only: a cluster's executors run under its Workers, not in this process tree
        self.cpu = CpuSampler(self.proc.pid, str(script), broker_pids).start() if master.startswith("local") else None
        self.sampler = None
        if sample_memory:
            from bench.memory import TreeSampler
            self.sampler = TreeSampler(self.proc.pid, str(script)).start()

    def result(self, timeout: float = 1800) -> dict:
        """Wait for the job; return its ``BENCH {json}`` line (plus ``memory`` when sampled)."""
        try:
            stdout, _ = self.proc.communicate(timeout=timeout)
        finally:
            if self.cpu:
                self.cpu.stop()
            if self.sampler:
                self.sampler.stop()
        for line in stdout.splitlines():
            if line.startswith("BENCH "):
                out = json.loads(line[6:])
                if self.sampler:
                    out["memory"] = self.sampler.peaks()
                if self.cpu and out.get("per_batch"):
                    out["cpu"] = self.cpu.per_million(out["per_batch"], out.get("steady_records", 0))
                return out
        self.logs.seek(0)
        raise RuntimeError(f"{self.script.name} failed ({self.proc.returncode}):\n{self.logs.read()[-4000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def run_job(script: Path, args: list[str], packages: bool = False, master: str = "local[2]",
            sample_memory: bool = False, attempts: int = 2, broker_pids: tuple[int, ...] = ()) -> dict:
    """Run a job through the real spark-submit; return the job's ``BENCH {json}`` line.

    A failed run (on a loaded shared machine the broker can time out a job's first metadata
    request) is retried once; ``attempts`` in the result says so. Jobs keep their checkpoints
    in a fresh directory per run under ``--checkpoint``, so a retry starts from scratch."""
    for attempt in range(1, attempts + 1):
        try:
            result = SparkJob(script, args, packages, master, sample_memory, broker_pids).result()
            result["attempts"] = attempt
            return result
        except RuntimeError as exc:
            if attempt == attempts:
                raise
            print(f"{script.name} failed, retrying: {str(exc)[-600:]}", file=sys.stderr, flush=True)
    raise AssertionError("unreachable")


def machine() -> dict:
    """The machine and the versions under test (printed with every result)."""
    import confluent_kafka
    import pyspark
    from kafka_eos.connectors.dev.java_env import java_binary, kafka_version
    connector = _pom_version("spark-sql-kafka-0-10_2.13")
    java = subprocess.run([java_binary(), "-version"], capture_output=True, text=True).stderr.splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")))
    return {"python": sys.version.split()[0], "pyspark": pyspark.__version__, "kafka": kafka_version(),
            "confluent_kafka": confluent_kafka.__version__, "librdkafka": confluent_kafka.libversion()[0],
            "spark_sql_kafka": connector, "kafka_clients_java": _pom_version("kafka-clients"),
            "spark_sql_kafka_note": (None if connector == pyspark.__version__ else
                                     CONNECTOR_NOTE.format(pyspark=pyspark.__version__, connector=connector)),
            "java": java[0] if java else "?",
            "cores": os.cpu_count(), "cpu": cpu, "memory_gb": round(mem_kb / 1024 / 1024, 1),
            "platform": platform.platform()}


def load_avg() -> float:
    """The 1-minute load average (on a shared machine it explains noise)."""
    return round(os.getloadavg()[0], 2)


def write_result(name: str | None, result: dict) -> Path:
    """``bench/results/<date>-<name>.json`` (``<date>.json`` without a name; ``-2``, ``-3``, ...
    appended when a run of the same day and parts wrote one already); returns the path."""
    RESULTS.mkdir(exist_ok=True)
    today = date.today().isoformat()
    stem = f"{today}-{name}" if name else today
    path, n = RESULTS / f"{stem}.json", 2
    while path.exists():  # an earlier run's file is kept, never replaced
        path, n = RESULTS / f"{stem}-{n}.json", n + 1
    path.write_text(json.dumps({"date": today, "machine": machine(), **result}, indent=2))
    return path
