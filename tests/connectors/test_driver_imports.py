"""The driver's Python processes that only look up the data source or commit batches (pyspark's
``create_data_source`` and ``python_streaming_sink_runner`` workers) load no pyarrow, numpy or
pandas through kafka-eos: each of them is a process of its own for the whole query, and pyarrow
with numpy is about 38 MB of it. (The writer planner and the source's runners load pyarrow
themselves; the executors' workers need it.)

Runs in a fresh interpreter: what the test process imported would hide an import."""
from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import pyspark.sql.worker.python_streaming_sink_runner
from pyspark.sql.types import StructType
HEAVY = ("pyarrow", "numpy", "pandas")
pyspark_own = [name for name in HEAVY if name in sys.modules]  # pyspark 4.1's runner loads numpy itself
from kafka_eos.connectors.datasource import KafkaEosDataSource
from kafka_eos.connectors.sink.query_start import QueryStart
from kafka_eos.connectors.sink.stream_writer import KafkaEosStreamWriter
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
source = KafkaEosDataSource({"kafka.bootstrap.servers": "b:9092", "subscribe": "in"})
schemas = [source.schema(), KafkaEosDataSource({"emit": "offsetRanges"}).schema()]
print(json.dumps({name: name in sys.modules for name in HEAVY if name not in pyspark_own}))
"""


def test_the_lookup_and_commit_processes_load_no_arrow():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert loaded and not any(loaded.values()), f"kafka-eos loaded {loaded} in a lookup or commit process"
