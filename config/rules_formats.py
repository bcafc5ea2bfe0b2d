"""The rule of the formats' schemas (``source.schema``, ``sink.schema``, and the keys' ``key_schema``):
which format takes which schema, and that the schema maps to Spark types, each refusal naming the field.

- avro, and json without a registry: an Avro-style schema; json with a registry: a JSON Schema;
  protobuf: a .proto (file or inline, compiled here by protoc) and a message, or the registry.
- A schema given only by the registry is checked when the query starts (the registry is read there).
- The registry's own keys and the subject each side's strategy names: ``config.rules_registry``.
"""
from __future__ import annotations

from kafka_eos.config.model import DataFormat, PipelineConfig, SchemaRef
from kafka_eos.config.rules_registry import registry_settings
from kafka_eos.config.violations import Context, Violation
from kafka_eos.serde.formats import SCHEMA_FORMATS
from kafka_eos.serde.registry_subjects import schema_at



def _where(schema: SchemaRef, at: str) -> str:
    return f"{at}.{'file' if schema.file else 'inline'}"


def _avro_or_json(schema: SchemaRef, fmt: DataFormat, at: str) -> list[Violation]:
    from kafka_eos.serde.arrow_types import SchemaError, arrow_type, parse_schema
    if fmt is DataFormat.JSON and schema.registry is not None:
        from kafka_eos.serde.json_schema_registry import validator
        from kafka_eos.serde.json_schema_types import arrow_type as json_schema_type, parse_json_schema
        try:
            parsed = parse_json_schema(schema.text or "")
            json_schema_type(parsed)
            validator(parsed)
        except SchemaError as exc:
            return [Violation(_where(schema, at), f"with a registry, format json reads a JSON Schema: {exc}",
                              "give a JSON Schema (https://json-schema.org), or set format: avro for an Avro schema")]
        except Exception as exc:  # noqa: BLE001 - jsonschema's SchemaError: the schema breaks its draft
            return [Violation(_where(schema, at), f"not a valid JSON Schema: {str(exc).splitlines()[0]}",
                              "fix the JSON Schema (https://json-schema.org)")]
        return []
    try:
        arrow_type(parse_schema(schema.text or ""))
    except SchemaError as exc:
        return [Violation(_where(schema, at), str(exc),
                          "fix the Avro schema (https://avro.apache.org/docs/current/specification/)")]
    return []


def _protobuf(schema: SchemaRef, at: str) -> list[Violation]:
    from kafka_eos.serde.protobuf_schemas import ProtoSchema, ProtoSchemaError, compile_path, compile_schema
    from kafka_eos.serde.protobuf_types import ProtoTypeError, message_type
    try:
        compiled = ProtoSchema(compile_path(schema.file) if schema.file else compile_schema(schema.text or ""))
    except ProtoSchemaError as exc:
        return [Violation(_where(schema, at), str(exc), "fix the .proto (https://protobuf.dev/programming-guides/proto3/)")]
    try:
        descriptor = compiled.message(schema.message)
    except ProtoSchemaError as exc:
        return [Violation(f"{at}.message", str(exc), "name a message the .proto declares (package.Name)")]
    try:
        message_type(descriptor)
    except ProtoTypeError as exc:
        return [Violation(f"{at}.message", f"{descriptor.full_name}: {exc}",
                          "read a message without that field, or change the field's type")]
    return []


def schema_violations(schema: SchemaRef | None, fmt: DataFormat, path: str, required: bool,
                      field: str = "value") -> list[Violation]:
    """``path``'s schema of its values (``path.schema``, ``path.format``) or its keys (``path.key_schema``,
    ``path.key_format``)."""
    typed, at = fmt in SCHEMA_FORMATS, schema_at(path, field)
    word = "format" if field == "value" else "key_format"
    fmt_at = f"{path}.{word}"
    if schema is None:
        return [Violation(at, f"{word} {fmt.value} needs a schema",
                          f"add {at}: {{file: ../schemas/<name>.avsc}} (or inline:, or registry:)")
                ] if typed and required else []
    if not typed:
        return [Violation(at, f"a schema is only used with {word} json, avro or protobuf, not {fmt.value}",
                          f"remove {at}, or set {fmt_at}: json, avro or protobuf")]
    found = []
    if schema.file and schema.inline:
        found.append(Violation(at, "both file and inline are set", "keep one of them"))
    if schema.message and fmt is not DataFormat.PROTOBUF:
        found.append(Violation(f"{at}.message", f"a message name is only used with {word} protobuf, not {fmt.value}",
                               f"remove {at}.message"))
    if schema.text is None and schema.registry is None and not schema.file:
        found.append(Violation(at, "the schema names no file, inline schema or registry",
                               "add file:, inline: or registry:"))
    if schema.text is not None:
        found += _protobuf(schema, at) if fmt is DataFormat.PROTOBUF else _avro_or_json(schema, fmt, at)
    return found


def schemas(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    source, sink, wire = cfg.source, cfg.sink, (DataFormat.AVRO, DataFormat.PROTOBUF)
    found = schema_violations(source.schema, source.format, "source", required=True)
    found += schema_violations(source.key_schema, source.key_format, "source", required=True, field="key")
    found += schema_violations(sink.schema, sink.format, "sink", required=sink.format in wire)
    found += schema_violations(sink.key_schema, sink.key_format, "sink", required=sink.key_format in wire, field="key")
    return found + registry_settings(cfg, ctx)   # the registry's keys and the subject (config.rules_registry)
