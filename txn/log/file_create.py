"""Create-only files on a mounted file system, with or without hard links.

Invariants this module enforces:
- ``create_file`` leaves ``name`` either absent or holding the whole ``data`` (written to a hidden
  temp file and fsynced first, so a crash never leaves a partial record under the name), and raises
  ``FileExistsError`` when ``name`` exists: it never replaces a record.
- Where the file system has hard links (any local POSIX one, NFS): ``link`` publishes the temp
  file, atomic and exclusive (``EEXIST`` like ``O_EXCL``): ``CreateMode.EXCLUSIVE``.
- Where it has none (a FUSE mount of object storage: s3fs, Databricks' ``/dbfs`` and ``/Volumes``,
  gcsfuse, blobfuse; ``link`` fails with ENOTSUP/EPERM): check the name is absent, then ``rename``
  the temp file onto it - the protocol Hadoop's checkpoint file manager uses for Spark's own
  checkpoint on such a path. The record still appears whole (an object store's rename is a copy
  of the whole object); exclusivity holds against this process's own retries, not against a
  second writer racing inside the window: ``CreateMode.CHECKED``.
- The mode is found once per file system (device) by the first create and cached; a store's
  mode is reported by ``create_mode`` (``validate`` and the start name it).
- The directory is fsynced after publishing, where the file system supports it.
"""
from __future__ import annotations

import errno
import os
import uuid
from enum import Enum
from pathlib import Path


class CreateMode(Enum):
    EXCLUSIVE = "exclusive (hard link)"
    CHECKED = "checked (no hard links: check, then rename, as Spark's checkpoint there)"


_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}
_MODES: dict[int, CreateMode] = {}


def create_mode(root: Path) -> CreateMode | None:
    """The mode found for ``root``'s file system, or None before its first create."""
    try:
        return _MODES.get(os.stat(root).st_dev)
    except FileNotFoundError:
        return None


def create_file(root: Path, name: str, data: bytes) -> CreateMode:
    """Create ``root/name`` holding ``data``; ``FileExistsError`` if it exists. Returns the mode used."""
    target = root / name
    tmp = root / f".{name}.{uuid.uuid4().hex}.tmp"
    _write_synced(tmp, data)
    try:
        mode = _publish(root, tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if mode is CreateMode.EXCLUSIVE:  # the link left the temp name; a rename took it (no lookup: a request on a mount)
        tmp.unlink()
    _fsync_dir(root)
    return mode


def _publish(root: Path, tmp: Path, target: Path) -> CreateMode:
    device = os.stat(root).st_dev
    if _MODES.get(device) is not CreateMode.CHECKED:
        try:
            os.link(tmp, target)  # atomic and exclusive: EEXIST if the name exists
            _MODES[device] = CreateMode.EXCLUSIVE
            return CreateMode.EXCLUSIVE
        except OSError as error:
            if error.errno not in _NO_LINKS:
                raise
            _MODES[device] = CreateMode.CHECKED
    if target.exists():
        raise FileExistsError(errno.EEXIST, "exists", str(target))
    os.rename(tmp, target)
    return CreateMode.CHECKED


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(root: Path) -> None:
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as error:  # a FUSE file system without fsyncdir: its rename is already durable
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
    finally:
        os.close(fd)
