from kafka_eos.connectors.cli import build_parser


def test_dev_kafka_parses():
    args = build_parser().parse_args(["dev", "kafka", "up", "--nodes", "3"])
    assert (args.action, args.nodes) == ("up", 3)


def test_cluster_ids_never_look_like_an_option():
    from kafka_eos.connectors.dev.local_kafka import new_cluster_id
    assert all(not new_cluster_id().startswith("-") for _ in range(2000))


def test_dev_kafka_takes_repeatable_broker_settings():
    from kafka_eos.connectors.cli_dev import _broker_settings
    args = build_parser().parse_args(["dev", "kafka", "up", "--broker-setting", "auto.create.topics.enable=false",
                                      "--broker-setting", "num.partitions=3"])
    assert _broker_settings(args.broker_setting) == {"auto.create.topics.enable": "false", "num.partitions": "3"}


def test_a_broker_setting_that_is_not_key_value_is_refused_by_name():
    import pytest
    from kafka_eos.connectors.cli_dev import _broker_settings
    with pytest.raises(SystemExit, match="'auto.create.topics.enable' is not KEY=VALUE"):
        _broker_settings(["auto.create.topics.enable"])


def test_broker_settings_reach_the_broker_properties(tmp_path):
    from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster, Node
    cluster = LocalKafkaCluster(ClusterSettings(workdir=tmp_path, extra=(("auto.create.topics.enable", "false"),)))
    cluster.nodes = [Node(1, 9092, 9093, tmp_path / "node-1")]
    lines = cluster._properties(cluster.nodes[0]).splitlines()
    assert "auto.create.topics.enable=false" in lines and "auto.create.topics.enable=true" not in lines
