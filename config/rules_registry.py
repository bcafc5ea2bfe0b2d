"""The schema registry's settings (``source.schema.registry``, ``sink.schema.registry``, and the keys'
``key_schema.registry``): the rule of the
file (``registry_settings``, in the rule list) and the live check ``validate`` and every start run
(``registry_problems``, skipped with ``--offline``).

- ``subject`` is used as written; the strategy (``topic``, ``record``, ``topic_record``) names the
  subject otherwise, by ``serde.registry_subjects`` (the one rule): a subject it cannot name is
  refused here, saying which setting names it.
- ``auto_register: false`` is the sink's, with exactly one of ``use_latest_version: true``,
  ``version`` or ``id``; those three mean nothing while the sink registers, nor on the source.
- Live: the source's subject must have a latest version when the source reads with it; the sink's
  writer schema goes through ``serde.registry_compat.check_writer`` (the registry's compatibility
  test, or the pinned schema). A refusal is INVALID (exit 1) naming the field and the rule; the
  registry refusing the credentials is UNAUTHORIZED (3), not answering UNREACHABLE (2).
"""
from __future__ import annotations

from kafka_eos.config.model import DataFormat, PipelineConfig, SchemaRef
from kafka_eos.config.violations import INVALID, UNAUTHORIZED, UNREACHABLE, Context, Violation
from kafka_eos.serde.formats import Registry, SubjectStrategy
from kafka_eos.serde.registry_subjects import SubjectError, needs_record_name, record_name, schema_at, subject_name

PINS = ("use_latest_version", "version", "id")


def _pins(registry: Registry) -> list[str]:
    return [key for key, on in zip(PINS, (registry.use_latest_version, registry.version is not None,
                                           registry.schema_id is not None), strict=True) if on]


def _file_set(schema: SchemaRef) -> bytes | None:
    """The compiled .proto of a protobuf schema given as text or file (None when it does not compile:
    ``rules_formats`` reports that)."""
    from kafka_eos.serde.protobuf_schemas import ProtoSchemaError, compile_path, compile_schema
    try:
        return compile_path(schema.file) if schema.file else compile_schema(schema.text) if schema.text else None
    except ProtoSchemaError:
        return None


def _record(schema: SchemaRef, fmt: DataFormat) -> str | None:
    registry = schema.registry
    if registry is None or not needs_record_name(registry):
        return None
    try:
        file_set = _file_set(schema) if fmt is DataFormat.PROTOBUF else None
        return record_name(fmt, schema.text, file_set, schema.message)
    except Exception:  # noqa: BLE001 - an unreadable schema is rules_formats' violation
        return None


def subject_of(schema: SchemaRef, fmt: DataFormat, topics: tuple[str, ...], side: str, field: str = "value") -> str:
    """The subject of ``side``'s schema of its values or keys (``SubjectError`` when it cannot be named)."""
    assert schema.registry is not None
    topic = topics[0] if len(topics) == 1 else None
    return subject_name(schema.registry, topic, _record(schema, fmt), side, field)


def _sides(cfg: PipelineConfig) -> list[tuple[str, str, SchemaRef, DataFormat, tuple[str, ...]]]:
    """(side, field, schema, format, topics) of each schema with a registry: values, then keys."""
    source_topics, sink_topics = cfg.source.topics, (cfg.sink.topic,) if cfg.sink.topic else ()
    sides = [("source", "value", cfg.source.schema, cfg.source.format, source_topics),
             ("source", "key", cfg.source.key_schema, cfg.source.key_format, source_topics),
             ("sink", "value", cfg.sink.schema, cfg.sink.format, sink_topics),
             ("sink", "key", cfg.sink.key_schema, cfg.sink.key_format, sink_topics)]
    return [(side, field, schema, fmt, topics) for side, field, schema, fmt, topics in sides
            if schema is not None and schema.registry is not None]


def _needs_subject(side: str, schema: SchemaRef) -> bool:
    """The source looks a subject up only for its reader schema (none configured)."""
    return side == "sink" or (schema.text is None and not schema.file)


def _settings(side: str, field: str, registry: Registry) -> list[Violation]:
    at, pins = f"{schema_at(side, field)}.registry", _pins(registry)
    if registry.subject and registry.subject_strategy is not SubjectStrategy.TOPIC:
        return [Violation(f"{at}.subject_strategy", f"subject {registry.subject!r} is set, so the "
                          f"{registry.subject_strategy.value} strategy would not be used", "keep one of them")]
    if side == "source" and (pins or not registry.auto_register):
        keys = pins + ([] if registry.auto_register else ["auto_register"])
        return [Violation(f"{at}.{keys[0]}", "the source registers nothing: each record's writer schema is looked "
                          "up by its id, the reader schema is the configured one, else the subject's latest",
                          f"remove {', '.join(keys)} from {at}")]
    if side == "sink" and registry.auto_register and pins:
        return [Violation(f"{at}.{pins[0]}", f"{pins[0]} is used only with auto_register: false (the sink registers "
                          "its schema otherwise)", f"set {at}.auto_register: false, or remove {pins[0]}")]
    if side == "sink" and not registry.auto_register and len(pins) != 1:
        return [Violation(f"{at}.auto_register", "with auto_register: false the sink writes with a registered "
                          f"schema: name exactly one ({', '.join(pins) if pins else 'none given'})",
                          f"set one of {at}.use_latest_version: true, {at}.version: N, {at}.id: N")]
    return []


def registry_settings(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    found: list[Violation] = []
    for side, field, schema, fmt, topics in _sides(cfg):
        assert schema.registry is not None
        found += _settings(side, field, schema.registry)
        if _needs_subject(side, schema):
            try:
                subject_of(schema, fmt, topics, side, field)
            except SubjectError as exc:
                message, _, fix = str(exc).partition(" (fix: ")
                at = f"{schema_at(side, field)}.registry.subject"
                found.append(Violation(at, message.split(": ", 1)[-1], fix.rstrip(")") or f"set {at}"))
    return found


# ---- live ----

def _violation(exc: Exception, at: str, registry: Registry) -> Violation:
    """``exc`` of the schema at ``at`` (``source.schema``, ``sink.key_schema``, ...) as a violation."""
    from kafka_eos.serde.registry import MISSING, REFUSED, fault, masked
    from kafka_eos.serde.registry_compat import SchemaIncompatible
    text = masked(str(exc))
    if isinstance(exc, (SchemaIncompatible, SubjectError)):
        message, _, fix = text.partition("\n    fix: ")
        return Violation(at, message, fix or f"fix {at}")
    kind = fault(exc)
    where = f"the schema registry at {masked(registry.url)}"
    if kind == MISSING:
        return Violation(f"{at}.registry", f"{where} has no such subject, version or id: {text}",
                         "register the schema first, or name the subject / version / id it has", INVALID)
    if kind == REFUSED:
        return Violation(f"{at}.registry.basic_auth_user_info", f"{where} refused the credentials: {text}",
                         "give the registry's user:password (basic_auth_user_info)", UNAUTHORIZED)
    return Violation(f"{at}.registry.url", f"{where} did not answer: {type(exc).__name__}: {text}",
                     "start the registry or fix its URL; or validate with --offline", UNREACHABLE)


def _check_side(side: str, field: str, schema: SchemaRef, fmt: DataFormat, topics: tuple[str, ...]) -> None:
    from kafka_eos.serde.registry import version_text
    registry = schema.registry
    assert registry is not None
    subject = subject_of(schema, fmt, topics, side, field)
    if side == "source":
        version_text(registry, subject, "latest")
        return
    from kafka_eos.serde.registry_compat import check_writer
    from kafka_eos.serde.resolve import sink_candidate
    candidate = sink_candidate(fmt, schema.text, schema.file, schema.message)
    if schema.text is None and not schema.file and registry.auto_register:
        version_text(registry, subject, "latest")   # the sink registers the subject's latest: it must have one
    check_writer(registry, subject, candidate)


def registry_problems(cfg: PipelineConfig) -> list[Violation]:
    """What the registry answers about the pipeline's schemas (``validate`` and the start; not offline)."""
    found: list[Violation] = []
    for side, field, schema, fmt, topics in _sides(cfg):
        if not _needs_subject(side, schema):
            continue
        assert schema.registry is not None
        try:
            _check_side(side, field, schema, fmt, topics)
        except Exception as exc:  # noqa: BLE001 - sorted into a violation by what the registry said
            found.append(_violation(exc, schema_at(side, field), schema.registry))
    return found
