"""Shared builders for the config tests: a valid pipeline as a dict, loaded and checked."""
from __future__ import annotations

import copy
import json
import socket
from contextlib import ExitStack, closing
from pathlib import Path

import yaml

from kafka_eos.config.loader import load_text
from kafka_eos.config.rules import Context
from kafka_eos.connectors.pipeline.validation import check

ORDER_SCHEMA = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "amount", "type": "double"}]}


def valid(tmp_path: Path) -> dict:
    """A pipeline that passes every offline rule (checkpoint under ``tmp_path``)."""
    return copy.deepcopy({
        "version": 1, "name": "t",
        "source": {"kafka": {"bootstrap_servers": "localhost:9092"}, "topics": ["in"],
                   "starting_offsets": "earliest", "format": "json", "schema": {"inline": ORDER_SCHEMA}},
        "transform": {"sql": "SELECT key, value FROM source WHERE value.amount > 0"},
        "sink": {"kafka": {"bootstrap_servers": "localhost:9092"}, "topic": "out", "format": "json",
                 "transactional_id_prefix": "t-eos", "transaction_timeout_ms": 300000},
        "checkpoint": {"location": str(tmp_path / "ckpt"), "trigger": "10 seconds"},
        "errors": {"on_decode_error": "dlq", "dlq_topic": "in-dlq"},
    })


def load(tmp_path: Path, data: dict, env: dict | None = None):
    return load_text(yaml.safe_dump(data), "p.yaml", env or {}, tmp_path)


def loaded(tmp_path: Path, change=lambda data: None):
    """The config of ``valid`` after ``change`` (which edits the dict), asserted valid."""
    data = valid(tmp_path)
    change(data)
    cfg, found = load(tmp_path, data)
    assert cfg is not None, found
    return cfg


def problems(tmp_path: Path, data: dict, ctx: Context = Context(), env: dict | None = None):
    """Loader violations + rule violations of ``data`` (with the connectors' backstop, as validated)."""
    cfg, found = load(tmp_path, data, env)
    assert cfg is not None, found
    return found + check(cfg, ctx)


def paths(found) -> list[str]:
    return [v.path for v in found]


def write(tmp_path: Path, name: str, data: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def schema_text(schema: dict) -> str:
    return json.dumps(schema)


def hung_listener(stack: ExitStack) -> str:
    """host:port of a listener whose accepted connections are never read: a hung broker at the TCP
    level (its kernel accepts the connection, nothing answers); closed with ``stack``."""
    server = stack.enter_context(closing(socket.socket()))
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    return f"127.0.0.1:{server.getsockname()[1]}"


def refused_port() -> str:
    """host:port where nothing listens: a connection is refused."""
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"

