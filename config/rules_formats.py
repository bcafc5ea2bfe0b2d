"""The rule of the value formats' schemas (``source.schema``, ``sink.schema``): which format takes
which schema, and that the schema maps to Spark types, each refusal naming the field.

- avro, and json without a registry: an Avro-style schema; json with a registry: a JSON Schema;
  protobuf: a .proto (file or inline, compiled here by protoc) and a message, or the registry.
- A schema given only by the registry is checked when the query starts (the registry is read there).
- The registry's own keys and the subject each side's strategy names: ``config.rules_registry``.
"""
from __future__ import annotations

from kafka_eos.config.model import DataFormat, PipelineConfig, SchemaRef
from kafka_eos.config.rules_registry import registry_settings
from kafka_eos.config.violations import Context, Violation

TYPED = (DataFormat.JSON, DataFormat.AVRO, DataFormat.PROTOBUF)


def _where(schema: SchemaRef, path: str) -> str:
    return f"{path}.schema.{'file' if schema.file else 'inline'}"


def _avro_or_json(schema: SchemaRef, fmt: DataFormat, path: str) -> list[Violation]:
    from kafka_eos.serde.arrow_types import SchemaError, arrow_type, parse_schema
    if fmt is DataFormat.JSON and schema.registry is not None:
        from kafka_eos.serde.json_schema_registry import validator
        from kafka_eos.serde.json_schema_types import arrow_type as json_schema_type, parse_json_schema
        try:
            parsed = parse_json_schema(schema.text or "")
            json_schema_type(parsed)
            validator(parsed)
        except SchemaError as exc:
            return [Violation(_where(schema, path), f"with a registry, format json reads a JSON Schema: {exc}",
                              "give a JSON Schema (https://json-schema.org), or set format: avro for an Avro schema")]
        except Exception as exc:  # noqa: BLE001 - jsonschema's SchemaError: the schema breaks its draft
            return [Violation(_where(schema, path), f"not a valid JSON Schema: {str(exc).splitlines()[0]}",
                              "fix the JSON Schema (https://json-schema.org)")]
        return []
    try:
        arrow_type(parse_schema(schema.text or ""))
    except SchemaError as exc:
        return [Violation(_where(schema, path), str(exc),
                          "fix the Avro schema (https://avro.apache.org/docs/current/specification/)")]
    return []


def _protobuf(schema: SchemaRef, path: str) -> list[Violation]:
    from kafka_eos.serde.protobuf_schemas import ProtoSchema, ProtoSchemaError, compile_path, compile_schema
    from kafka_eos.serde.protobuf_types import ProtoTypeError, message_type
    try:
        compiled = ProtoSchema(compile_path(schema.file) if schema.file else compile_schema(schema.text or ""))
    except ProtoSchemaError as exc:
        return [Violation(_where(schema, path), str(exc), "fix the .proto (https://protobuf.dev/programming-guides/proto3/)")]
    try:
        descriptor = compiled.message(schema.message)
    except ProtoSchemaError as exc:
        return [Violation(f"{path}.schema.message", str(exc), "name a message the .proto declares (package.Name)")]
    try:
        message_type(descriptor)
    except ProtoTypeError as exc:
        return [Violation(f"{path}.schema.message", f"{descriptor.full_name}: {exc}",
                          "read a message without that field, or change the field's type")]
    return []


def schema_violations(schema: SchemaRef | None, fmt: DataFormat, path: str, required: bool) -> list[Violation]:
    typed = fmt in TYPED
    if schema is None:
        return [Violation(f"{path}.schema", f"format {fmt.value} needs a schema",
                          f"add {path}.schema: {{file: ../schemas/<name>.avsc}} (or inline:, or registry:)")
                ] if typed and required else []
    if not typed:
        return [Violation(f"{path}.schema", f"a schema is only used with format json, avro or protobuf, not {fmt.value}",
                          f"remove {path}.schema, or set {path}.format: json, avro or protobuf")]
    found = []
    if schema.file and schema.inline:
        found.append(Violation(f"{path}.schema", "both file and inline are set", "keep one of them"))
    if schema.message and fmt is not DataFormat.PROTOBUF:
        found.append(Violation(f"{path}.schema.message", f"a message name is only used with format protobuf, not {fmt.value}",
                               f"remove {path}.schema.message"))
    if schema.text is None and schema.registry is None and not schema.file:
        found.append(Violation(f"{path}.schema", "the schema names no file, inline schema or registry",
                               "add file:, inline: or registry:"))
    if schema.text is not None:
        found += _protobuf(schema, path) if fmt is DataFormat.PROTOBUF else _avro_or_json(schema, fmt, path)
    return found


def schemas(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    found = schema_violations(cfg.source.schema, cfg.source.format, "source", required=True)
    found += schema_violations(cfg.sink.schema, cfg.sink.format, "sink",
                               required=cfg.sink.format in (DataFormat.AVRO, DataFormat.PROTOBUF))
    return found + registry_settings(cfg, ctx)   # the registry's keys and the subject (config.rules_registry)
