"""`kafka-eos validate` against real brokers: the broker's transaction.max.timeout.ms, and exit 2
when the broker cannot be reached."""
from __future__ import annotations

import json

import pytest

from kafka_eos.config.live import transaction_max_timeout_ms
from kafka_eos.config.loader import load_file
from kafka_eos.connectors.cli import main
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster, free_port
from integration_tests.kafka_tools import create_topic, produce, unique
from tests.factories import valid, write


def pipeline(tmp_path, bootstrap: str, timeout_ms: int, topic: str = "in"):
    data = valid(tmp_path)
    data["source"]["topics"] = [topic]
    for side in ("source", "sink"):
        data[side]["kafka"]["bootstrap_servers"] = bootstrap
    data["checkpoint"]["trigger"] = "1 second"
    data["sink"]["batch_margin_ms"] = 5_000
    data["sink"]["transaction_timeout_ms"] = timeout_ms
    return write(tmp_path, "live.yaml", data)


def test_session_broker_reports_its_maximum_and_a_safe_file_passes(bootstrap, tmp_path, capsys):
    path = pipeline(tmp_path, bootstrap, 30_000)
    cfg, _ = load_file(path, env={})
    assert transaction_max_timeout_ms(cfg.sink.kafka, timeout_s=20) >= 30_000
    assert main(["validate", "--timeout", "20", str(path)]) == 0, capsys.readouterr().err


def test_live_timeout_rule_fires_with_the_brokers_real_value(broker, tmp_path, capsys):
    cluster = LocalKafkaCluster(ClusterSettings(transaction_max_timeout_ms=60_000, heap="256m"))
    if cluster.cluster_id.startswith("-"):   # kafka-storage would read "-t -xyz" as an option
        cluster.cluster_id = "A" + cluster.cluster_id[1:]
    with cluster:
        path = pipeline(tmp_path, cluster.bootstrap, 90_000)
        cfg, _ = load_file(path, env={})
        assert transaction_max_timeout_ms(cfg.sink.kafka, timeout_s=20) == 60_000
        code = main(["validate", "--timeout", "20", str(path)])
        err = capsys.readouterr().err
        assert code == 1, err
        assert "sink.transaction_timeout_ms: 90000 ms exceeds the broker's transaction.max.timeout.ms 60000 ms" in err
        assert "lower sink.transaction_timeout_ms to at most 60000" in err
        assert main(["validate", "--offline", str(path)]) == 0     # only the live check knows the maximum
        code = main(["validate", "--timeout", "20", str(pipeline(tmp_path, cluster.bootstrap, 50_000))])
        assert code == 0, capsys.readouterr()


@pytest.mark.parametrize("offline,expected", [(False, 2), (True, 0)])
def test_unreachable_broker_exits_2_unless_offline(tmp_path, capsys, offline, expected):
    path = pipeline(tmp_path, f"127.0.0.1:{free_port()}", 30_000)
    args = ["validate", "--timeout", "2", str(path)] + (["--offline"] if offline else [])
    assert main(args) == expected
    if not offline:
        err = capsys.readouterr().err
        assert "sink.kafka.bootstrap_servers: cannot reach Kafka at 127.0.0.1:" in err and "--offline" in err


def test_describe_resolves_starting_offsets_on_the_live_broker(bootstrap, tmp_path, capsys):
    topic = create_topic(bootstrap, unique("describe"), partitions=2)
    produce(bootstrap, topic, [(None, b"{}")] * 3, partition=1)
    assert main(["describe", "--json", "--timeout", "20", str(pipeline(tmp_path, bootstrap, 30_000, topic))]) == 0
    live = json.loads(capsys.readouterr().out)["live_offsets"]
    assert live == {f"{topic}-0": {"earliest": 0, "latest": 0, "start": 0},
                    f"{topic}-1": {"earliest": 0, "latest": 3, "start": 0}}
