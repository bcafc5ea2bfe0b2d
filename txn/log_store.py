"""Durable small-file storage for the sink log: atomic replace, local or remote.

Invariant: ``write_atomic`` leaves either the old or the new content under the name, never a
partial file. Locally: write a temp file, fsync it, rename over the name, fsync the directory.
Remote URIs (hdfs://, s3://, gs://, ...) go through ``pyarrow.fs`` (write temp + move); their
atomicity is that of the store's rename.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from urllib.parse import urlparse


class LogStore:
    def __init__(self, location: str) -> None:
        parsed = urlparse(location)
        self._local = parsed.scheme in ("", "file")
        if self._local:
            self._root = Path(parsed.path if parsed.scheme == "file" else location)
            self._root.mkdir(parents=True, exist_ok=True)
        else:
            from pyarrow import fs
            self._fs, self._rootpath = fs.FileSystem.from_uri(location)
            self._fs.create_dir(self._rootpath, recursive=True)
        self.location = location

    def names(self) -> list[str]:
        if self._local:
            return sorted(p.name for p in self._root.iterdir() if not p.name.startswith("."))
        from pyarrow import fs
        infos = self._fs.get_file_info(fs.FileSelector(self._rootpath))
        return sorted(i.base_name for i in infos if not i.base_name.startswith("."))

    def read(self, name: str) -> str | None:
        if self._local:
            path = self._root / name
            return path.read_text() if path.exists() else None
        path = f"{self._rootpath}/{name}"
        from pyarrow import fs
        if self._fs.get_file_info(path).type == fs.FileType.NotFound:
            return None
        with self._fs.open_input_stream(path) as stream:
            return stream.read().decode()

    def write_atomic(self, name: str, text: str) -> None:
        tmp = f".{name}.{uuid.uuid4().hex}.tmp"
        if self._local:
            with open(self._root / tmp, "w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(self._root / tmp, self._root / name)
            fd = os.open(self._root, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            return
        with self._fs.open_output_stream(f"{self._rootpath}/{tmp}") as stream:
            stream.write(text.encode())
        self._fs.move(f"{self._rootpath}/{tmp}", f"{self._rootpath}/{name}")

    def delete(self, name: str) -> None:
        if self._local:
            (self._root / name).unlink(missing_ok=True)
        else:
            self._fs.delete_file(f"{self._rootpath}/{name}")
