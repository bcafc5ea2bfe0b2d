from kafka_eos.connectors.cli import build_parser


def test_dev_kafka_parses():
    args = build_parser().parse_args(["dev", "kafka", "up", "--nodes", "3"])
    assert (args.action, args.nodes) == ("up", 3)


def test_cluster_ids_never_look_like_an_option():
    from kafka_eos.connectors.dev.local_kafka import new_cluster_id
    assert all(not new_cluster_id().startswith("-") for _ in range(2000))
