"""`kafka-eos run --master spark://...`: the orders-json example through spark-submit on a
standalone cluster (Master + 2 Workers started with spark-class), kafka-eos shipped as a zip;
and `kafka-eos demo` (what `make run` runs) on its own embedded broker."""
from __future__ import annotations

import pytest

import re
from pathlib import Path

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from kafka_eos.connectors.dev.standalone_spark import StandaloneSpark
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, progress_lines, small_spark_conf
from integration_tests.pipeline.test_pipeline_run import ORDER_TOPICS, check_dlq, poison_positions


def executor_logs(cluster: StandaloneSpark) -> dict[int, list[Path]]:
    """Worker n -> the stderr files of the executors it ran (<work-dir>/<app>/<executor>/stderr)."""
    return {n: sorted((cluster.workdir / f"worker-{n}").glob("app-*/*/stderr")) for n in (1, 2)}


@pytest.mark.chaos  # a long run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_json_example_through_spark_submit_on_a_standalone_cluster(bootstrap, tmp_path):
    create_topics(bootstrap, ORDER_TOPICS)
    data = produce_orders(bootstrap, "orders", 5000, poison=2, aborted_every=2000, aborted_size=40)
    with StandaloneSpark(workers=2) as cluster:
        run = kafka_eos(["run", str(EXAMPLES / "orders-json.yaml"), "--master", cluster.master_url, "--once",
                         *small_spark_conf()], bootstrap, tmp_path)
        logs = executor_logs(cluster)
    assert run.code == 0, run.log()
    assert progress_lines(run, "orders-json"), run.stdout
    assert all(logs[n] for n in (1, 2)), f"executors ran on both Workers: {logs}"
    assert order_report(bootstrap, {data.run: 5000}) == \
        {"out": 5000, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
    check_dlq(bootstrap, poison_positions(bootstrap, [data.run]))


@pytest.mark.matrix
@pytest.mark.long  # minutes: make long (CI, after make test); make matrix on every other 4.x
def test_demo_prints_an_exactly_once_count(bootstrap, tmp_path):
    """The demo starts its own broker; ``bootstrap`` only keeps the suite's broker order stable."""
    # a bound, not a figure: 108 s alone under load, past 400 s beside two other cells and a load of 14
    run = kafka_eos(["demo", "--records", "20000", "--poison", "4"], bootstrap, tmp_path, timeout=900)
    assert run.code == 0, run.log()
    assert re.search(r"^demo: 20000 in, 20000 out, 0 duplicates, 0 missing$", run.stdout, re.M), run.stdout
    assert re.search(r"^demo: dlq: 4 poison in, 4 in orders-dlq, 0 duplicates, 0 missing$", run.stdout, re.M)
    assert "FAILED" not in run.stdout
