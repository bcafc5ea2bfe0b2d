"""A streaming query with no Kafka and no kafka-eos in it: pyspark's own cost per Python stage.

Run by ``bench.python_floor`` through spark-submit. ``--mode`` picks the source and the sink:
``jvm_jvm`` Spark's ``rate`` source into Spark's ``noop`` sink; ``jvm_py`` rate into a Python data
source sink that only counts the Arrow rows; ``py_jvm`` a Python data source whose tasks return
ready-made Arrow batches (no I/O) into ``noop``; ``py_py`` that source into that sink: the shape of
a kafka-eos query (Python source, Python sink), every Kafka and kafka-eos step left out. Each batch
carries ``--rows`` rows of a 100 B value in 2 tasks, trigger ``--trigger-seconds``. Prints
``BENCH {json}`` with the per-batch durations as ``bench.k2k_job`` does.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import datetime

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (DataSource, DataSourceStreamArrowWriter, DataSourceStreamReader, InputPartition,
                                    WriterCommitMessage)

MODES = ("jvm_jvm", "jvm_py", "py_jvm", "py_py")
TASKS = 2


class Part(InputPartition):
    def __init__(self, rows: int) -> None:
        self.rows = rows


class Reader(DataSourceStreamReader):
    def __init__(self, rows: int) -> None:
        self.rows, self.n = rows, 0

    def initialOffset(self) -> dict:
        return {"n": 0}

    def latestOffset(self) -> dict:
        self.n += 1
        return {"n": self.n}

    def partitions(self, start: dict, end: dict) -> list:
        return [Part(self.rows // TASKS) for _ in range(TASKS)]

    def read(self, partition: Part):
        n = partition.rows
        yield pa.RecordBatch.from_pydict({"key": [b"k"] * n, "value": [b"x" * 100] * n})

    def commit(self, end: dict) -> None:
        pass


class Writer(DataSourceStreamArrowWriter):
    def write(self, iterator) -> WriterCommitMessage:
        sum(batch.num_rows for batch in iterator)
        return WriterCommitMessage()

    def commit(self, messages: list, batchId: int) -> None:
        pass

    def abort(self, messages: list, batchId: int) -> None:
        pass


class Floor(DataSource):
    @classmethod
    def name(cls) -> str:
        return "floor"

    def schema(self) -> str:
        return "key binary, value binary"

    def streamReader(self, schema):
        return Reader(int(self.options["rows"]))

    def streamWriter(self, schema, overwrite: bool):
        return Writer()


def _epoch(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--rows", type=int, default=4_000)
    p.add_argument("--batches", type=int, default=26)
    p.add_argument("--trigger-seconds", type=float, default=1.0)
    a = p.parse_args()
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(Floor)
    if a.mode.startswith("py"):
        df = spark.readStream.format("floor").option("rows", a.rows).load()
    else:
        df = (spark.readStream.format("rate").option("rowsPerSecond", int(a.rows / a.trigger_seconds))
              .option("numPartitions", TASKS).load()
              .selectExpr("cast(cast(value as string) as binary) key", "cast(repeat('x', 100) as binary) value"))
    sink = "floor" if a.mode.endswith("py") else "noop"
    with tempfile.TemporaryDirectory() as ck:
        query = (df.writeStream.format(sink).option("checkpointLocation", ck)
                 .trigger(processingTime=f"{a.trigger_seconds} seconds").start())
        while sum(1 for p in query.recentProgress if p["numInputRows"]) < a.batches:
            time.sleep(0.2)
        batches = [p for p in query.recentProgress if p["numInputRows"]][:a.batches]
        query.stop()
    print("BENCH " + json.dumps({"mode": a.mode, "batches": len(batches), "per_batch": [
        {"batch": p["batchId"], "rows": p["numInputRows"], "start_s": _epoch(p["timestamp"]), "ms": p["durationMs"]}
        for p in batches]}), flush=True)


if __name__ == "__main__":
    main()
