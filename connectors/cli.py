"""`kafka-eos` command line: run / validate / describe / demo pipelines and dev tooling."""
from __future__ import annotations

import argparse
import sys

from connectors.dev.java_env import BrokerEnvironmentError


def _dev_kafka(args: argparse.Namespace) -> int:
    from connectors.dev import background
    if args.action == "up":
        print(f"bootstrap={background.up(args.nodes, args.transaction_max_timeout_ms)}")
    elif args.action == "down":
        print("kafka: stopped" if background.down() else "kafka: nothing running")
    else:
        bootstrap = background.running_bootstrap()
        print(f"bootstrap={bootstrap}" if bootstrap else "kafka: not running")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from connectors.demo import smoke
    return smoke(args.records)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-eos", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="local broker + generated input + exactly-once count")
    demo.add_argument("--records", type=int, default=100_000)
    demo.set_defaults(func=_demo)
    dev = sub.add_parser("dev", help="developer tooling").add_subparsers(dest="tool", required=True)
    kafka = dev.add_parser("kafka", help="a local Kafka broker (KRaft, no Docker)")
    kafka.add_argument("action", choices=["up", "down", "status"])
    kafka.add_argument("--nodes", type=int, default=1, choices=[1, 3])
    kafka.add_argument("--transaction-max-timeout-ms", type=int, default=900_000)
    kafka.set_defaults(func=_dev_kafka)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokerEnvironmentError as exc:
        print(f"kafka-eos: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
