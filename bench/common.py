"""Shared benchmark plumbing: a fresh broker, bulk input, spark-submit runs, result files."""
from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from confluent_kafka import Producer

from connectors.spark_harness import spark_submit

RESULTS = Path(__file__).parent / "results"
SPARK_KAFKA_POM = Path(__file__).parent / "spark_kafka" / "pom.xml"


def spark_kafka_jars() -> str:
    """Comma-separated jars of Spark's built-in Kafka connector, resolved once with Maven."""
    from connectors.dev.java_env import cache_root
    target = cache_root() / "jars" / "spark-sql-kafka-4.2.0"
    if not (target / ".complete").exists():
        subprocess.run(["mvn", "-B", "-q", "-f", str(SPARK_KAFKA_POM),
                        "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
                        f"-DoutputDirectory={target}"], check=True)
        (target / ".complete").write_text("ok")
    return ",".join(str(p) for p in sorted(target.glob("*.jar")))


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


def run_job(script: Path, args: list[str], packages: bool = False, master: str = "local[2]") -> dict:
    extra = ["--jars", spark_kafka_jars()] if packages else []
    proc = spark_submit(script, args, master=master, extra=extra, timeout=1800,
                        conf={"spark.driver.memory": "2g"})
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[6:])
    raise RuntimeError(f"{script.name} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def machine() -> dict:
    import pyspark
    import confluent_kafka
    from connectors.dev.java_env import kafka_version
    cpu = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return {"python": sys.version.split()[0], "pyspark": pyspark.__version__, "kafka": kafka_version(),
            "librdkafka": confluent_kafka.libversion()[0], "cores": cpu, "platform": platform.platform()}


def write_result(name: str, result: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{date.today().isoformat()}-{name}.json"
    path.write_text(json.dumps({"date": date.today().isoformat(), "machine": machine(), **result}, indent=2))
    return path
