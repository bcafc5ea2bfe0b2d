"""Protobuf schemas: ``.proto`` text compiled by protoc (grpcio-tools) into descriptors.

Invariants:
- What is shipped to executors is plain bytes: a serialized ``FileDescriptorSet`` holding the
  main file and every file it imports (``--include_imports``), in dependency order; the main
  file is the last one. protoc runs where a schema is first seen (the driver for a configured
  file, each Python worker once per registry id), never per record.
- The well-known types (``google/protobuf/*.proto``) come with grpcio-tools; other imports are
  given by name (files next to the configured one, or the registry's schema references).
- A schema registered by Confluent's Python client is a base64 ``FileDescriptorProto``, not
  text: it is taken as it is (its imports must then be given as descriptors too).
- ``ProtoSchema`` finds a message by full name or by Confluent message indexes, and gives the
  indexes of a message (the encoder writes them).
"""
from __future__ import annotations

import base64
import functools
import importlib.resources
import subprocess
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor

from kafka_eos.serde.arrow_types import SchemaError

MessageIndexes = tuple[int, ...]


class ProtoSchemaError(SchemaError):
    """A .proto schema does not compile, or names no such message (runbook: a schema error's)."""


def _well_known_include() -> str:
    return str(importlib.resources.files("grpc_tools") / "_proto")


def _serialized_file(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto of a base64 schema string (Confluent's Python client), else None."""
    if not text.strip() or any(c.isspace() for c in text.strip()):   # .proto text always has spaces
        return None
    try:
        proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))
    except Exception:  # noqa: BLE001 - binascii.Error, DecodeError: not a serialized descriptor
        return None
    return proto if proto.name or proto.message_type else None


def _protoc(include: str, main: str, out_dir: str) -> bytes:
    out = Path(out_dir, "kafka-eos.desc")
    command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{include}", f"-I{_well_known_include()}",
               f"--descriptor_set_out={out}", "--include_imports", main]
    done = subprocess.run(command, cwd=include, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).replace(include + "/", "").strip()
        raise ProtoSchemaError(f"{main} does not compile: {message}")
    return out.read_bytes()


def compile_files(files: dict[str, str], main: str) -> bytes:
    """The serialized FileDescriptorSet of ``main`` and its imports; ``files``: name -> .proto text
    (``main`` among them). ProtoSchemaError carries protoc's own message."""
    with tempfile.TemporaryDirectory(prefix="kafka-eos-proto-") as tmp:
        for name, text in files.items():
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return _protoc(tmp, main, tmp)


def compile_path(path: str) -> bytes:
    """The FileDescriptorSet of a .proto file; its imports are found next to it (or well-known)."""
    file = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="kafka-eos-proto-") as tmp:
        return _protoc(str(file.parent), file.name, tmp)


def compile_schema(text: str, name: str = "schema.proto", imports: dict[str, str] | None = None) -> bytes:
    """A FileDescriptorSet (serialized) of one schema given as .proto text or a base64 descriptor."""
    serialized = _serialized_file(text)
    if serialized is None:
        return compile_files({**(imports or {}), name: text}, name)
    file_set = descriptor_pb2.FileDescriptorSet()
    for import_name, import_text in (imports or {}).items():
        for proto in descriptor_pb2.FileDescriptorSet.FromString(compile_schema(import_text, import_name)).file:
            if all(existing.name != proto.name for existing in file_set.file):
                file_set.file.append(proto)
    file_set.file.extend(_well_known_imports(serialized, file_set))
    file_set.file.append(serialized)
    return file_set.SerializeToString()


def _well_known_imports(proto: descriptor_pb2.FileDescriptorProto,
                        have: descriptor_pb2.FileDescriptorSet) -> list[descriptor_pb2.FileDescriptorProto]:
    names = {f.name for f in have.file}
    wanted = [d for d in proto.dependency if d.startswith("google/protobuf/") and d not in names]
    if not wanted:
        return []
    stub = "\n".join(['syntax = "proto3";', *(f'import "{d}";' for d in wanted)])
    compiled = descriptor_pb2.FileDescriptorSet.FromString(compile_files({"kafka_eos_imports.proto": stub},
                                                                         "kafka_eos_imports.proto"))
    return [f for f in compiled.file if f.name != "kafka_eos_imports.proto" and f.name not in names]


class ProtoSchema:
    """The descriptors of one compiled schema (its main file and imports)."""

    def __init__(self, file_set: bytes) -> None:
        self.file_set = file_set
        files = descriptor_pb2.FileDescriptorSet.FromString(file_set).file
        if not files:
            raise ProtoSchemaError("the compiled schema holds no file")
        self.pool = descriptor_pool.DescriptorPool()
        for proto in files:
            self.pool.Add(proto)
        self.main = self.pool.FindFileByName(files[-1].name)
        prefix = f"{files[-1].package}." if files[-1].package else ""
        self.top = [self.pool.FindMessageTypeByName(prefix + m.name) for m in files[-1].message_type]  # declared order

    def __reduce__(self):
        return (ProtoSchema, (self.file_set,))

    def message(self, name: str | None) -> Descriptor:
        """The message named ``name`` (full name, or short name in the main file); the main file's
        first message when no name is given."""
        if not name:
            if not self.top:
                raise ProtoSchemaError(f"{self.main.name} declares no message")
            return self.top[0]
        package = self.main.package
        for candidate in (name, f"{package}.{name}" if package else name):
            try:
                return self.pool.FindMessageTypeByName(candidate)
            except KeyError:
                continue
        known = ", ".join(m.full_name for m in self.top)
        raise ProtoSchemaError(f"no message {name!r} in {self.main.name} (it declares: {known or 'none'})")

    def message_at(self, indexes: MessageIndexes) -> Descriptor:
        """The message Confluent's message indexes point at in the main file."""
        messages = self.top
        found: Descriptor | None = None
        for depth, index in enumerate(indexes):
            if not 0 <= index < len(messages):
                where = self.main.name if depth == 0 else found.full_name  # type: ignore[union-attr]
                raise ProtoSchemaError(f"message index {index} out of range: {where} has {len(messages)} message(s) "
                                       f"at that level (indexes {list(indexes)})")
            found = messages[index]
            messages = list(found.nested_types)
        assert found is not None
        return found

    def indexes_of(self, message: Descriptor) -> MessageIndexes:
        """Confluent message indexes of ``message`` (declared in the main file)."""
        path: list[int] = []
        current: Descriptor | None = message
        while current is not None:
            siblings = list(current.containing_type.nested_types) if current.containing_type else self.top
            path.append([s.full_name for s in siblings].index(current.full_name))
            current = current.containing_type
        if message.file.name != self.main.name:
            raise ProtoSchemaError(f"message {message.full_name} is declared in {message.file.name}, "
                                   f"not in the schema's own file {self.main.name}")
        return tuple(reversed(path))


@functools.lru_cache(maxsize=64)
def message_class(schema: ProtoSchema, name: str):
    """The dynamic message class of ``name`` in ``schema`` (cached per schema object)."""
    return message_factory.GetMessageClass(schema.message(name))
