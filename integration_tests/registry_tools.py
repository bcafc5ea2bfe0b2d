"""What the registry tests share: a client of the session's registry, payment records in wire
format, and decoding the output by the id each record carries."""
from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone

import fastavro

from integration_tests.pipeline_cli import EXAMPLES
from kafka_eos.serde.wire_format import frame, unframe

PAYMENT = json.loads((EXAMPLES.parent / "schemas" / "payment.avsc").read_text())
# v1 of payments-value: before currency existed. v2: with currency and a channel the reader ignores.
PAYMENT_V1 = {**PAYMENT, "fields": [f for f in PAYMENT["fields"] if f["name"] != "currency"]}
PAYMENT_V2 = {**PAYMENT, "fields": [*PAYMENT["fields"], {"name": "channel", "type": "string", "default": "web"}]}
PAID_AT = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def client(registry):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    conf = {"url": registry.url}
    if registry.user_info:
        conf["basic.auth.user.info"] = registry.user_info
    return SchemaRegistryClient(conf)


def register(registry, subject: str, schema: dict) -> int:
    from confluent_kafka.schema_registry import Schema
    return client(registry).register_schema(subject, Schema(json.dumps(schema), "AVRO"))


def cli_env(registry) -> dict[str, str]:
    """The example's ``${SCHEMA_REGISTRY_URL}`` and ``${SCHEMA_REGISTRY_AUTH}``."""
    return {"SCHEMA_REGISTRY_URL": registry.url, "SCHEMA_REGISTRY_AUTH": registry.user_info or ""}


def payment(run: str, i: int, version: int) -> dict:
    record = {"payment_id": f"{run}-{i}", "amount": float(i % 10 - 1), "paid_at": PAID_AT + timedelta(seconds=i)}
    if version == 2:
        record.update(currency="USD", channel="app")
    return record


def wire(schema_id: int, schema: dict, record: dict) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
    return frame(schema_id, body.getvalue())


def decode_by_id(registry, value: bytes) -> tuple[int, dict]:
    """(schema id, record) of one wire-format value, its writer schema fetched from the registry by id."""
    schema_id, body = unframe(value)
    writer = fastavro.parse_schema(json.loads(client(registry).get_schema(schema_id).schema_str))
    return schema_id, fastavro.schemaless_reader(io.BytesIO(body), writer, None)
