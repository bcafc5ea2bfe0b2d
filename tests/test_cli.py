from connectors.cli import build_parser


def test_dev_kafka_parses():
    args = build_parser().parse_args(["dev", "kafka", "up", "--nodes", "3"])
    assert (args.action, args.nodes) == ("up", 3)
