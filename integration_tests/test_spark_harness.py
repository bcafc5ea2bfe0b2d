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
