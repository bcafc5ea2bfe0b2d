"""The sink's input as offset ranges (source option ``emit=offsetRanges``): the task reads them itself.

Enforced here: such input needs the source's options on the sink, each prefixed ``source.``
(``read_options``: parsed by the source's own rules, so the task reads read_committed with the
source's consumer settings, poll timeout and failOnDataLoss), and the sink's ``topic`` option;
``source.`` options without range input are refused, as a sign of a query that changed the rows.
With ``source.emit=valueRefs`` and a binary ``value`` column the rows are the query's, each value
a reference the task reads (``task_rows``, ``value_input``).
A task's records are its ranges' records in order (``range_records``), keys, values, timestamps
(the source record's, CreateTime or LogAppendTime, as MirrorMaker copies them) and, with
``source.includeHeaders``, headers copied as they are. Only ``range_records`` (executors) loads
the reader and pyarrow: the driver's commit runner needs neither.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Message
from pyspark.sql.types import BinaryType, StructType

from kafka_eos.connectors.schema import is_range_schema
from kafka_eos.connectors.source.options import SourceOptions, parse_source_options
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.writer.records import Records
from kafka_eos.txn.protocol.sink_config import SinkConfig

if TYPE_CHECKING:
    import pyarrow as pa

PREFIX = "source."


def read_options(options: Mapping[str, str], schema: StructType, config: SinkConfig) -> SourceOptions | None:
    """The source's options given to the sink (None without range input); ``SinkConfigError`` when
    range input comes without them or without the sink's topic option, or they come without it."""
    given = OptionMap.of(options).with_prefix(PREFIX)
    if not is_range_schema(schema):
        refs = _value_refs(given, schema)
        if given and refs is None:
            raise SinkConfigError(f"sink options {', '.join(sorted(PREFIX + k for k in given))} are for a query whose "
                                  "source has emit=offsetRanges and whose rows reach the sink unchanged, or "
                                  "emit=valueRefs and a binary 'value' column; remove them")
        return refs
    if not given:
        raise SinkConfigError("the sink's input is offset ranges (source option emit=offsetRanges): give the sink the "
                              "source's options too, each prefixed 'source.' (e.g. source.kafka.bootstrap.servers, "
                              "source.subscribe), so that its tasks read the records")
    if not config.topic:
        raise SinkConfigError("the sink's input is offset ranges (emit=offsetRanges): set the sink option 'topic'")
    try:
        return parse_source_options(given, streaming=True)
    except ValueError as exc:
        raise SinkConfigError(f"sink options source.*: {exc}") from None


def _value_refs(given: Mapping[str, str], schema: StructType) -> SourceOptions | None:
    """The source's options when they say emit=valueRefs and the rows have a binary ``value``
    (``value_input``: the task reads the referenced values), else None."""
    if not given or str(OptionMap.of(given).get("emit", "")).lower() != "valuerefs" or not any(
            f.name == "value" and isinstance(f.dataType, BinaryType) for f in schema.fields):
        return None
    try:
        return parse_source_options(given, streaming=True)
    except ValueError as exc:
        raise SinkConfigError(f"sink options source.*: {exc}") from None


def task_rows(batches: Iterator[pa.RecordBatch], options: SourceOptions | None) -> Iterator:
    """What a sink task writes: its Arrow rows (``options`` None), the records of its offset ranges,
    or its rows with each referenced value read (``value_input``)."""
    if options is None:
        return batches
    if options.emit_value_refs:
        from kafka_eos.connectors.sink.value_input import with_values  # executors only (pyarrow)
        return with_values(batches, options)
    return range_records(batches, options)


def range_records(batches: Iterable[pa.RecordBatch], options: SourceOptions) -> Iterator[Records]:
    """The records of the task's ranges, in order."""
    from kafka_eos.connectors.source.partition_reader import read_messages  # executors only (pyarrow)
    from kafka_eos.connectors.source.range_rows import ranges_of
    cluster = options.kafka_conf["bootstrap.servers"]
    for messages in read_messages(ranges_of(batches, cluster), options):
        yield _records(messages, options.include_headers)


def _records(messages: list[Message], include_headers: bool) -> Records:
    return Records(keys=list(map(Message.key, messages)), values=list(map(Message.value, messages)),
                   headers=list(map(Message.headers, messages)) if include_headers else None,
                   timestamps=[None if kind == TIMESTAMP_NOT_AVAILABLE else ms  # CreateTime or LogAppendTime
                               for kind, ms in map(Message.timestamp, messages)])
