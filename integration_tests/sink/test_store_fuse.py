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
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.store_cells import Store, pipeline_file, run_cell
from integration_tests.kafka_tools import unique


@pytest.fixture(scope="module")
def endpoint() -> str:
    with s3_server() as address:
        create_bucket(address, "checkpoints")
        yield address


@pytest.fixture(scope="module")
def mount(endpoint, tmp_path_factory) -> Path:
    with fuse_mount(endpoint, "checkpoints", tmp_path_factory.mktemp("fuse") / "mnt") as where:
        yield where


def _no_hard_links(where: Path) -> None:
    (where / "a").write_text("a")
    with pytest.raises(OSError) as refused:
        os.link(where / "a", where / "b")
    assert refused.value.errno in (errno.EOPNOTSUPP, errno.EPERM), refused.value
    (where / "a").unlink()


@pytest.mark.slow
@pytest.mark.long  # minutes: make long (CI, after make test); make test keeps the read-only mount's refusal
def test_a_checkpoint_on_a_fuse_mount_without_hard_links_is_exactly_once_through_driver_kills(bootstrap, tmp_path,
                                                                                               mount, record_property):
    _no_hard_links(mount)
    figures = run_cell(bootstrap, tmp_path, Store(str(mount / unique("ck")), says="create-only by checked (no hard links"))
    for name, value in figures.items():
        record_property(name, value)
    print(f"FUSE store: {figures}")


def test_a_store_that_refuses_writes_is_refused_before_anything_runs(bootstrap, endpoint, tmp_path):
    """The same bucket mounted read-only. As the checkpoint: the checkpoint rule refuses it. As the
    sink option sinkLogLocation beside a local checkpoint (the rule does not look there): the store
    probe refuses it, naming the location, the step, the store's error and the fix. validate and
    run exit 1 (invalid) and nothing starts."""
    topics = (unique("orders"), unique("priced"))
    with fuse_mount(endpoint, "checkpoints", tmp_path / "ro", "ro") as readonly:
        on_mount = pipeline_file(tmp_path, topics)
        records = str(readonly / unique("records"))
        (tmp_path / "beside").mkdir()
        beside = pipeline_file(tmp_path / "beside", topics, sinkLogLocation=records)
        cases = ((on_mount, {"KAFKA_EOS_CHECKPOINTS": str(readonly / "ck")}, "is not a writable directory"),
                 (beside, {"KAFKA_EOS_CHECKPOINTS": str(tmp_path / "ck")},
                  f"sink.options.sinkLogLocation: kafka-eos cannot keep its records (the sink log) at {records}: "
                  "creating the location failed"))
        for path, env, says in cases:
            for args in (["validate", str(path)], ["run", str(path), "--once"]):
                refused = kafka_eos(args, bootstrap, tmp_path, timeout=120, env=env)
                told = refused.stdout + refused.stderr
                assert refused.code == 1 and says in told, refused.log()
        assert "Read-only file system" in told and "fix:" in told, told
        assert not (tmp_path / "ck").exists() and not os.path.exists(records)
