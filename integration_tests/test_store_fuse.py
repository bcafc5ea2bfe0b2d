"""Issue 63: a pipeline whose checkpoint is on a FUSE mount of object storage (s3fs over moto's S3
server on loopback: a path without hard links, whose rename copies the object, as Databricks'
/dbfs and /Volumes, gcsfuse and blobfuse are). Spark's checkpoint and kafka-eos's own records
(sink log, stop request, shapes, sweeps) both live on the mount; the cell is ``store_cells``'s.
Before the fix the first batch failed at the sink log's first record (``os.link``: EOPNOTSUPP)."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from integration_tests.object_stores import create_bucket, fuse_mount, s3_server
from integration_tests.store_cells import Store, run_cell
from integration_tests.kafka_tools import unique


@pytest.fixture(scope="module")
def mount(tmp_path_factory) -> Path:
    with s3_server() as endpoint:
        create_bucket(endpoint, "checkpoints")
        with fuse_mount(endpoint, "checkpoints", tmp_path_factory.mktemp("fuse") / "mnt") as where:
            yield where


def _no_hard_links(where: Path) -> None:
    (where / "a").write_text("a")
    with pytest.raises(OSError) as refused:
        os.link(where / "a", where / "b")
    assert refused.value.errno in (errno.EOPNOTSUPP, errno.EPERM), refused.value
    (where / "a").unlink()


@pytest.mark.slow
@pytest.mark.matrix
def test_a_checkpoint_on_a_fuse_mount_without_hard_links_is_exactly_once_through_driver_kills(bootstrap, tmp_path,
                                                                                               mount, record_property):
    _no_hard_links(mount)
    figures = run_cell(bootstrap, tmp_path, Store(str(mount / unique("ck")), says="create-only by checked (no hard links"))
    for name, value in figures.items():
        record_property(name, value)
    print(f"FUSE store: {figures}")
