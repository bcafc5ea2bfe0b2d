"""Shared builders for the config tests: a valid pipeline as a dict, loaded and checked."""
from __future__ import annotations

import copy
import json
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
