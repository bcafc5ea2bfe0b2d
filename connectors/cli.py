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


def _validate(args: argparse.Namespace) -> int:
    from config.validate import validate_files
    report = validate_files(args.pipelines, offline=args.offline, timeout_s=args.timeout)
    print(report.render(), file=sys.stdout if report.exit_code == 0 else sys.stderr)
    return report.exit_code


def _describe(args: argparse.Namespace) -> int:
    from config import describe
    from config.validate import validate_files
    report = validate_files([args.pipeline], offline=True)
    if not report.configs:
        print(report.render(), file=sys.stderr)
        return report.exit_code
    cfg, details = report.configs[0], {}
    if report.violations:
        details["problems"] = [f"{v.path}: {v.message}" for v in report.violations]
    details["checkpoint_state"] = describe.checkpoint_offsets(cfg)
    if not args.offline:
        try:
            details["live_offsets"] = describe.live_offsets(cfg, args.timeout)
        except Exception as exc:  # noqa: BLE001 - the plan is still worth printing
            details["live_offsets"] = f"unavailable: {exc}"
    print(describe.render(cfg, details, as_json=args.json))
    return report.exit_code


def _add_pipeline_commands(sub) -> None:
    validate = sub.add_parser("validate", help="check pipeline files; exit 0 valid, 1 invalid, 2 broker unreachable")
    validate.add_argument("pipelines", nargs="+", metavar="pipeline.yaml")
    validate.add_argument("--offline", action="store_true", help="skip the live broker checks")
    validate.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each broker")
    validate.set_defaults(func=_validate)
    describe = sub.add_parser("describe", help="print the resolved plan of a pipeline (secrets redacted)")
    describe.add_argument("pipeline", metavar="pipeline.yaml")
    describe.add_argument("--offline", action="store_true", help="do not ask the broker for offsets")
    describe.add_argument("--timeout", type=float, default=10.0)
    describe.add_argument("--json", action="store_true", help="JSON instead of YAML")
    describe.set_defaults(func=_describe)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-eos", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="local broker + generated input + exactly-once count")
    demo.add_argument("--records", type=int, default=100_000)
    demo.set_defaults(func=_demo)
    _add_pipeline_commands(sub)
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
