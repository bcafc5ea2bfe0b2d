"""Create-only files with and without hard links (file_create); the FUSE mount itself is proven in
integration_tests/sink/test_store_fuse.py."""
from __future__ import annotations

import errno
import os

import pytest

from kafka_eos.txn.log import file_create
from kafka_eos.txn.log.file_create import CreateMode, create_file, create_mode
from kafka_eos.txn.log.log_store import LogReader, LogStore, local_path


@pytest.fixture(autouse=True)
def _fresh_modes(monkeypatch):
    monkeypatch.setattr(file_create, "_MODES", {})


@pytest.fixture
def no_links(monkeypatch):
    """A file system without hard links, as a FUSE mount of object storage answers link()."""
    def refuse(*_args, **_kwargs):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")
    monkeypatch.setattr(file_create.os, "link", refuse)


def test_hard_links_give_the_exclusive_mode(tmp_path):
    assert create_file(tmp_path, "a.json", b"one") is CreateMode.EXCLUSIVE
    assert create_mode(tmp_path) is CreateMode.EXCLUSIVE
    with pytest.raises(FileExistsError):
        create_file(tmp_path, "a.json", b"two")
    assert (tmp_path / "a.json").read_bytes() == b"one"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # no temp file left


def test_without_hard_links_a_record_is_created_whole_and_never_replaced(tmp_path, no_links):
    """The first batch on a FUSE mount failed with EOPNOTSUPP at the sink log's first record (issue 63)."""
    store = LogStore(str(tmp_path))
    store.create("_ids.json", '{"v": 1}')
    assert create_mode(tmp_path) is CreateMode.CHECKED
    assert store.create_mode.startswith("checked") and not store.exclusive
    with pytest.raises(FileExistsError):
        store.create("_ids.json", '{"v": 2}')
    assert LogReader(str(tmp_path)).read("_ids.json") == '{"v": 1}'
    assert LogReader(str(tmp_path)).names() == ["_ids.json"]
    assert sorted(os.listdir(tmp_path)) == ["_ids.json"]


def test_another_link_error_is_raised_not_taken_for_no_links(tmp_path, monkeypatch):
    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(file_create.os, "link", full)
    with pytest.raises(OSError, match="No space"):
        create_file(tmp_path, "a.json", b"one")
    assert create_mode(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_dbfs_is_databricks_fuse_path_and_remote_stores_have_none():
    assert str(local_path("dbfs:/pipelines/orders")) == "/dbfs/pipelines/orders"
    assert str(local_path("/Volumes/main/default/ck")) == "/Volumes/main/default/ck"
    assert str(local_path("file:///tmp/ck")) == "/tmp/ck"
    assert local_path("s3a://bucket/ck") is None
    assert local_path("abfss://c@acct.dfs.core.windows.net/ck") is None
