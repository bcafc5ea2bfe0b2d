"""Durable small-file storage for the sink log: create-only records, local or remote.

Invariants this module enforces:
- ``create`` (text) and ``create_bytes`` never overwrite: they leave the name either absent or
  holding the whole new content, and raise ``FileExistsError`` when the name already exists.
  A path (a local or mounted file system; ``dbfs:/x`` is Databricks' FUSE path ``/dbfs/x``):
  ``file_create.create_file`` (hard link where the file system has them, else check then rename).
  ``s3://`` (and ``s3a://``/``s3n://``, mapped to ``s3://`` for pyarrow): one PUT of the whole
  object, so the name never shows a partial file; the exclusivity is a check before the PUT
  (pyarrow offers no conditional ``If-None-Match`` PUT), so two writers racing inside that
  window can both succeed there - the sink log's sequence numbers then still never let a
  record be *replaced* by an older writer's state unless both hit that window.
  Other pyarrow stores (hdfs://, gs://, ...): write a temp file, check the name is absent, move
  (pyarrow's move on HDFS deletes an existing target first; the check makes that path unused,
  with the same check-then-act window as on S3).
- ``LogReader`` creates nothing (no directory, no file, no bucket): it has no writing method, and
  a missing location reads as empty. Only ``LogStore`` (the writer) creates its location.
- A record is JSON with its format version ``v`` (``versioned``): one of another version is
  refused by name (``SinkLogError``), never guessed.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from urllib.parse import urlparse

from kafka_eos.txn.protocol.errors import SinkLogError
from kafka_eos.txn.log.file_create import CreateMode, create_file, create_mode

_S3_ALIASES = ("s3a://", "s3n://")


def pyarrow_uri(location: str) -> str:
    """Hadoop's ``s3a://``/``s3n://`` names for what pyarrow calls ``s3://``."""
    for alias in _S3_ALIASES:
        if location.startswith(alias):
            return "s3://" + location[len(alias):]
    return location


def local_path(location: str) -> Path | None:
    """The file-system path of ``location``, or None for a remote store (pyarrow's).
    ``dbfs:/x`` is ``/dbfs/x``, the FUSE path Databricks mounts on its clusters (pyarrow has no
    ``dbfs`` file system). ``~`` is not expanded (Spark's checkpoint does not expand it either).
    The one answer to "is this location a path" (the checkpoint rule and ``describe`` ask it too)."""
    parsed = urlparse(location)
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):  # C:\\x: a drive, not a scheme
        return Path(location)
    if parsed.scheme == "file":
        return Path(parsed.path)
    if parsed.scheme == "dbfs" and not parsed.netloc:
        return Path("/dbfs") / parsed.path.lstrip("/")
    return None


def child(location: str, name: str) -> str:
    """The folder ``name`` inside ``location``; a URI's query (``?endpoint_override=...&region=...``
    of an S3 location) stays at the end, where pyarrow reads it."""
    path, sep, query = location.partition("?")
    return f"{path.rstrip('/')}/{name}{sep}{query}"


def versioned(text: str, where: str, what: str, version: int) -> dict:
    """The JSON record ``text`` (read from ``where``), refused unless its ``v`` is ``version``."""
    data = json.loads(text)
    if data.get("v") != version:
        raise SinkLogError(f"{where}: {what} format {data.get('v')!r} is not {version}; this kafka-eos build "
                           "cannot read it (use the build that wrote it)")
    return data


class LogReader:
    """Reads small files at ``location``; creates nothing."""

    def __init__(self, location: str) -> None:
        path = local_path(location)
        self._local = path is not None
        self.location = location
        if path is not None:
            self._root = path
            return
        from pyarrow import fs
        uri = pyarrow_uri(location)
        self._s3 = uri.startswith("s3://")
        self._fs, self._rootpath = fs.FileSystem.from_uri(uri)

    def _remote(self, name: str) -> str:
        return f"{self._rootpath.rstrip('/')}/{name}"

    def exists(self, name: str) -> bool:
        if self._local:
            return (self._root / name).exists()
        from pyarrow import fs
        return self._fs.get_file_info(self._remote(name)).type != fs.FileType.NotFound

    def names(self) -> list[str]:
        if self._local:
            if not self._root.is_dir():
                return []
            return sorted(p.name for p in self._root.iterdir() if not p.name.startswith("."))
        from pyarrow import fs
        infos = self._fs.get_file_info(fs.FileSelector(self._rootpath, allow_not_found=True))
        return sorted(i.base_name for i in infos if not i.base_name.startswith("."))

    def read(self, name: str) -> str | None:
        data = self.read_bytes(name)
        return None if data is None else data.decode()

    def read_bytes(self, name: str) -> bytes | None:
        """The content of ``name``, or None when it does not exist."""
        if self._local:
            try:
                return (self._root / name).read_bytes()
            except FileNotFoundError:
                return None
        if not self.exists(name):
            return None
        try:
            with self._fs.open_input_stream(self._remote(name)) as stream:
                return stream.read()
        except FileNotFoundError:  # deleted between the check and the read
            return None


class LogStore(LogReader):
    """Reads and create-only writes small files at ``location``, which it creates."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        if self._local:
            self._root.mkdir(parents=True, exist_ok=True)
        elif not self._s3:  # S3 has no directories: an object key is enough
            self._fs.create_dir(self._rootpath, recursive=True)

    @property
    def create_mode(self) -> str:
        """How this store makes a record create-only (``validate`` and the start report it)."""
        if self._local:
            mode = create_mode(self._root)
            return mode.value if mode else "not yet known (no record created)"
        if self._s3:
            return "checked (S3: check, then one PUT of the whole object)"
        return "checked (check, then move)"

    @property
    def exclusive(self) -> bool:
        """Whether the store itself refuses a create that races another writer's (a hard link does;
        a check before a rename or a PUT does not: then one driver per location is the user's to keep)."""
        return self._local and create_mode(self._root) is CreateMode.EXCLUSIVE

    def create(self, name: str, text: str) -> None:
        """Create ``name`` with ``text``; ``FileExistsError`` if it exists (never overwrite)."""
        self.create_bytes(name, text.encode())

    def create_bytes(self, name: str, data: bytes) -> None:
        """Create ``name`` with ``data``; ``FileExistsError`` if it exists (never overwrite)."""
        if self._local:
            create_file(self._root, name, data)
        elif self._s3:
            if self.exists(name):
                raise FileExistsError(f"{self.location}/{name}")
            with self._fs.open_output_stream(self._remote(name)) as stream:
                stream.write(data)
        else:
            tmp = self._remote(f".{name}.{uuid.uuid4().hex}.tmp")
            with self._fs.open_output_stream(tmp) as stream:
                stream.write(data)
            if self.exists(name):
                self._fs.delete_file(tmp)
                raise FileExistsError(f"{self.location}/{name}")
            self._fs.move(tmp, self._remote(name))

    def delete(self, name: str) -> None:
        if self._local:
            (self._root / name).unlink(missing_ok=True)
        elif self.exists(name):
            self._fs.delete_file(self._remote(name))
