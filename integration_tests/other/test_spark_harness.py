"""The Spark harness runs real Spark: a local session and a real spark-submit job."""
from __future__ import annotations

import textwrap

from kafka_eos.connectors.spark_harness import spark_submit


def test_session_runs_python_udf_in_workers(spark):
    from pyspark.sql.functions import udf
    double = udf(lambda x: x * 2, "long")
    assert sorted(r[0] for r in spark.range(4).select(double("id")).collect()) == [0, 2, 4, 6]


def test_spark_submit_runs_a_job(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        print("sum=" + str(spark.range(101).groupBy().sum("id").collect()[0][0]))
        spark.stop()
    """))
    proc = spark_submit(script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sum=5050" in proc.stdout


def _task_daemons(spark) -> list[str]:
    """Python daemons of this session's task workers (children of its JVM, not the driver's runners)."""
    import psutil
    jvm = next(p for p in psutil.Process().children(recursive=True)
               if p.name() == "java" and "org.apache.spark.deploy.SparkSubmit" in p.cmdline())
    found = []
    for child in jvm.children():
        try:
            cmd = child.cmdline()
        except psutil.Error:
            continue
        if cmd[-1:] == ["pyspark.worker"]:
            found.append(" ".join(cmd[cmd.index("-m") + 1:]))
    return found


def test_a_local_session_starts_its_task_workers_early_in_the_daemon_its_data_source_tasks_use(spark):
    """kafka-eos's preloading daemon on a local master; start_early's job starts the very daemon
    a Python data source's tasks then use (a second one would mean the early start was wasted)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader

    from kafka_eos.connectors.worker_daemon import start_early

    class OneRow(DataSourceReader):
        def read(self, partition):
            yield (1,)

    class Probe(DataSource):
        @classmethod
        def name(cls):
            return "kafka-eos-harness-probe"

        def schema(self):
            return "x int"

        def reader(self, schema):
            return OneRow()

    thread = start_early(spark)
    assert thread is not None, "a local session gets kafka-eos's daemon, so an early start"
    thread.join(180)
    assert not thread.is_alive()
    assert _task_daemons(spark) == ["kafka_eos.connectors.worker_daemon pyspark.worker"]
    spark.dataSource.register(Probe)
    assert spark.read.format("kafka-eos-harness-probe").load().collect()[0].x == 1
    assert _task_daemons(spark) == ["kafka_eos.connectors.worker_daemon pyspark.worker"]
