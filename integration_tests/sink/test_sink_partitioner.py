"""Keys land where Java clients put them (issue 10, point 7).

The same keyed records go through Spark's built-in ``kafka`` sink (Java client, murmur2) and
through the kafka-eos sink into two topics with the same partition count; every key must land
in the same partition number in both.
"""
from __future__ import annotations

import pytest

from bench.common import spark_kafka_jars
from kafka_eos.connectors.spark_harness import spark_submit
from integration_tests.kafka_tools import create_topic, read_all, unique
from integration_tests.pipeline_runs import JOB, seed_input

IDS = 2000
PARTITIONS = 6


def _run(bootstrap: str, input_topic: str, output: str, sink_format: str, tmp_path) -> None:
    args = ["--bootstrap", bootstrap, "--input", input_topic, "--output", output,
            "--checkpoint", str(tmp_path / f"ck-{sink_format}"), "--prefix", unique("part"),
            "--sink-format", sink_format]
    done = spark_submit(JOB, args, master="local[2]", timeout=900, extra=["--jars", spark_kafka_jars()])
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def _partition_of_keys(bootstrap: str, topic: str) -> dict[bytes, int]:
    return {m.key(): m.partition() for m in read_all(bootstrap, topic, "read_committed", idle_s=1.5)}


@pytest.mark.chaos  # a long run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_keys_land_in_the_partitions_of_sparks_builtin_kafka_sink(bootstrap, tmp_path):
    input_topic, java_out, eos_out = unique("keys-in"), unique("keys-java"), unique("keys-eos")
    seed_input(bootstrap, input_topic, IDS)
    for topic in (java_out, eos_out):
        create_topic(bootstrap, topic, partitions=PARTITIONS)
    _run(bootstrap, input_topic, java_out, "kafka", tmp_path)
    _run(bootstrap, input_topic, eos_out, "kafka-eos", tmp_path)
    java, eos = _partition_of_keys(bootstrap, java_out), _partition_of_keys(bootstrap, eos_out)
    assert len(java) == len(eos) == IDS, (len(java), len(eos))
    moved = sorted(k for k in java if java[k] != eos.get(k))
    assert not moved, f"{len(moved)} of {IDS} keys in another partition than Spark's kafka sink put them, e.g. {moved[:5]}"
