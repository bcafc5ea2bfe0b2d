"""Spark alone on a store under test (issue 63's store modules): ``SCRIPT``, given to spark-submit
with a checkpoint location, runs a rate -> noop streaming query for 3 batches, then a second query
from the same checkpoint for 3 more, and prints the offset and commit logs it finds there and the
file system that holds them; ``check`` asserts that the second query went on from the first's
checkpoint. A module may append lines to the script (they see ``spark``, ``jvm``, ``path``)."""
from __future__ import annotations

SCRIPT = '''
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
spark.sparkContext.setLogLevel("WARN")
checkpoint = sys.argv[1]
jvm = spark._jvm


def run(batches):
    query = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
             .writeStream.format("noop").option("checkpointLocation", checkpoint)
             .trigger(processingTime="500 milliseconds").start())
    ids = set()
    while len(ids) < batches:
        query.awaitTermination(0.2)
        ids |= {p["batchId"] for p in query.recentProgress}
    query.stop()
    return sorted(ids)


first = run(3)
again = run(3)
path = jvm.org.apache.hadoop.fs.Path(checkpoint)
fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
for folder in ("offsets", "commits"):
    names = sorted(s.getPath().getName() for s in fs.listStatus(jvm.org.apache.hadoop.fs.Path(path, folder)))
    print(f"{folder}: {' '.join(n for n in names if not n.startswith('.'))}")
print(f"filesystem: {fs.getClass().getName()} {fs.getUri()}")
print(f"first run: {first}")
print(f"second run: {again}")
'''


def check(stdout: str, filesystem: str) -> dict[str, str]:
    """The script's printed facts, asserted: the file system starts with ``filesystem``; the first
    query ran batches 0-2 and the second went on after them, both logged on the store."""
    lines = dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)
    assert lines["filesystem"].startswith(filesystem), lines
    first = [int(i) for i in lines["first run"].strip("[]").split(", ")]
    second = [int(i) for i in lines["second run"].strip("[]").split(", ")]
    assert first[:3] == [0, 1, 2], first
    assert second[0] > first[-1], (first, second)  # the second query went on from the checkpoint
    assert {"0", "1", "2", str(second[0])} <= set(lines["offsets"].split()), lines
    assert {"0", "1", "2"} <= set(lines["commits"].split()), lines
    return lines
