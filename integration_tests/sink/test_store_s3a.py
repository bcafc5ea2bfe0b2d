"""Issue 63: a pipeline whose checkpoint is on ``s3a://`` (moto's S3 server on loopback): Spark's
checkpoint through Hadoop's S3A connector from Maven (matched to pyspark's Hadoop), kafka-eos's
records through pyarrow's S3 client, both with the credentials and endpoint of the environment,
as on EMR. The cell is ``store_cells``'s. make chaos: the connector's AWS SDK is a 686 MB download
(3 min 14 s here, once per machine)."""
from __future__ import annotations

import pytest

from integration_tests.hadoop_connectors import connector_jars
from integration_tests.kafka_tools import unique
from integration_tests.object_stores import CREDENTIALS, create_bucket, s3_server
from integration_tests.store_cells import Store, run_cell


@pytest.fixture(scope="module")
def endpoint() -> str:
    with s3_server() as address:
        create_bucket(address, "checkpoints")
        yield address


def s3a_conf(endpoint: str) -> list[str]:
    settings = {"spark.jars": ",".join(connector_jars("s3a")), "spark.hadoop.fs.s3a.endpoint": f"http://{endpoint}",
                "spark.hadoop.fs.s3a.endpoint.region": "us-east-1", "spark.hadoop.fs.s3a.path.style.access": "true",
                "spark.hadoop.fs.s3a.connection.ssl.enabled": "false"}
    return [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]


@pytest.mark.chaos
def test_a_checkpoint_on_s3a_is_exactly_once_through_driver_kills(bootstrap, tmp_path, endpoint, record_property,
                                                                 monkeypatch):
    env = {**CREDENTIALS, "AWS_ENDPOINT_URL_S3": f"http://{endpoint}"}
    for key, value in env.items():  # this process reads the sink log too
        monkeypatch.setenv(key, value)
    store = Store(f"s3a://checkpoints/{unique('ck')}", env, s3a_conf(endpoint),
                  says="create-only by checked (S3: check, then one PUT")
    figures = run_cell(bootstrap, tmp_path, store)
    for name, value in figures.items():
        record_property(name, value)
    print(f"s3a store: {figures}")
