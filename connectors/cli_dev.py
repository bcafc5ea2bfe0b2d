"""`kafka-eos dev kafka|registry up|down|status`: the local broker and schema registry for your own runs."""
from __future__ import annotations

import argparse


def _dev_kafka(args: argparse.Namespace) -> int:
    from kafka_eos.connectors.dev import background
    if args.action == "up":
        settings = _broker_settings(args.broker_setting)
        print(f"bootstrap={background.up(args.nodes, args.transaction_max_timeout_ms, args.security, settings)}")
        _print_client_settings(background.client_settings())
    elif args.action == "down":
        print("kafka: stopped" if background.down() else "kafka: nothing running")
    else:
        bootstrap = background.running_bootstrap()
        print(f"bootstrap={bootstrap}" if bootstrap else "kafka: not running")
    return 0


def _broker_settings(pairs: list[str]) -> dict[str, str]:
    """``--broker-setting KEY=VALUE`` pairs (server.properties entries of the dev broker)."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"kafka-eos dev kafka: --broker-setting {pair!r} is not KEY=VALUE "
                             "(e.g. auto.create.topics.enable=false)")
        settings[key.strip()] = value.strip()
    return settings


def _dev_registry(args: argparse.Namespace) -> int:
    from kafka_eos.connectors.dev import registry_background
    if args.action == "up":
        print(f"url={registry_background.up()}")
    elif args.action == "down":
        print("registry: stopped" if registry_background.down() else "registry: nothing running")
    else:
        url = registry_background.running_url()
        print(f"url={url}" if url else "registry: not running")
    return 0


def _print_client_settings(client: dict[str, str]) -> None:
    """A secured broker's client settings; the password only as the path of its 0600 file."""
    files = {k: client.pop(k) for k in ("password_file", "admin_file") if k in client}
    for key, value in client.items():
        print(f"{key}={value}")
    if files:
        print(f"# sasl.password: in {files['password_file']} (owner-only, with every setting above); "
              f"admin (super user): {files['admin_file']}")


def add_dev_commands(sub) -> None:
    dev = sub.add_parser("dev", help="developer tooling").add_subparsers(dest="tool", required=True)
    kafka = dev.add_parser("kafka", help="a local Kafka broker (KRaft, no Docker)")
    kafka.add_argument("action", choices=["up", "down", "status"])
    kafka.add_argument("--nodes", type=int, default=1, choices=[1, 3])
    kafka.add_argument("--transaction-max-timeout-ms", type=int, default=900_000)
    kafka.add_argument("--security", choices=["plaintext", "sasl_ssl"], default="plaintext",
                       help="sasl_ssl: SCRAM-SHA-512 over TLS with ACLs enforced; users admin and etl "
                            "(passwords from KAFKA_EOS_DEV_ADMIN_PASSWORD / KAFKA_EOS_DEV_ETL_PASSWORD or generated)")
    kafka.add_argument("--broker-setting", action="append", default=[], metavar="KEY=VALUE",
                       help="a broker setting (server.properties; repeatable), e.g. auto.create.topics.enable=false")
    kafka.set_defaults(func=_dev_kafka)
    registry = dev.add_parser("registry", help="a local schema registry (Apicurio, Confluent-compatible API; "
                              "no Docker)")
    registry.add_argument("action", choices=["up", "down", "status"])
    registry.set_defaults(func=_dev_registry)
