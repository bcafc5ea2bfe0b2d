"""JSON Schemas from a schema registry, by id, as validators (cached per Python worker; picklable).

A lookup fails as for Avro (``registry.fetch``): 404 is the record's ``UnknownSchemaId``,
anything else ``WriterSchemaUnavailable``; a schema of another type is the record's error.
"""
from __future__ import annotations

import functools
from typing import Any

from kafka_eos.serde.avro_serde import UnknownSchemaId
from kafka_eos.serde.formats import Registry
from kafka_eos.serde.registry import fetch


def validator(schema: dict) -> Any:
    """A ``jsonschema`` validator of the draft the schema declares (``$schema``; else the latest)."""
    import jsonschema
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


class JsonSchemas:
    """Writer schemas by id: (id, validator) lookups for ``JsonSchemaDecoder``."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._by_id = functools.lru_cache(maxsize=128)(self._fetch)

    def _fetch(self, schema_id: int) -> Any:
        import json
        schema = fetch(self.registry, schema_id)
        if schema.schema_type != "JSON":
            raise UnknownSchemaId(f"schema id {schema_id} is a {schema.schema_type or 'AVRO'} schema, not a JSON Schema")
        return validator(json.loads(schema.schema_str))

    def __call__(self, schema_id: int) -> Any:
        return self._by_id(schema_id)

    def __reduce__(self):
        return (JsonSchemas, (self.registry,))
