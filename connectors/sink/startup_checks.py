"""Checks the sink runs before its first transaction: schema and timeouts against the broker.

The broker's ``transaction.max.timeout.ms`` is read with DescribeConfigs once per process.
"""
from __future__ import annotations

import functools

from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType

from txn.errors import SinkConfigError
from txn.sink_config import SinkConfig
from txn.timeouts import check_transaction_timeout

_ALLOWED = {"key": (StringType, BinaryType), "value": (StringType, BinaryType), "topic": (StringType,),
            "partition": (IntegerType,)}


def check_schema(schema: StructType, config: SinkConfig) -> None:
    names = {f.name: f for f in schema.fields}
    if "value" not in names:
        raise SinkConfigError(f"the kafka-eos sink needs a 'value' column; the query gives {sorted(names)}: "
                              "select an expression AS value (string or binary)")
    if "topic" not in names and not config.topic:
        raise SinkConfigError("no topic: set .option('topic', ...) or give the query a 'topic' column")
    for name, types in _ALLOWED.items():
        if name in names and not isinstance(names[name].dataType, types):
            raise SinkConfigError(f"sink column '{name}' is {names[name].dataType.simpleString()}; "
                                  f"cast it to {' or '.join(t().simpleString() for t in types)}")


@functools.lru_cache(maxsize=16)
def broker_max_timeout_ms(conf_key: tuple) -> int | None:
    from kafka.admin import ConfigResource, ConfigResourceType
    from txn.control_plane import control_plane
    client = control_plane(dict(conf_key))
    broker_id = min(b.node_id for b in client._manager.cluster.brokers())
    result = client.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker_id))])
    for response in result if isinstance(result, list) else [result]:
        for resource in getattr(response, "results", getattr(response, "resources", [])):
            for entry in getattr(resource, "configs", []):
                name = getattr(entry, "name", None) or entry[0]
                if name == "transaction.max.timeout.ms":
                    return int(getattr(entry, "value", None) or entry[1])
    return None


def check_timeouts(config: SinkConfig) -> None:
    conf_key = tuple(sorted(config.client_conf().items()))
    violations = check_transaction_timeout(config.transaction_timeout_ms, config.trigger_interval_ms,
                                           config.batch_margin_ms, broker_max_timeout_ms(conf_key))
    if violations:
        raise SinkConfigError("; ".join(str(v) for v in violations))
